-- materialize delta://analytics/customer_revenue
-- group sales
-- owner team:data-eng
-- tags layer=mart
-- description Paid revenue per customer, rebuilt on every run.
-- column paid_orders "Number of the customer's paid orders"
-- column revenue "Sum of the customer's paid order amounts; 0 without any"

WITH paid AS (
  SELECT customer_id, amount FROM staging.orders WHERE status = 'paid'
)
SELECT c.customer_id, c.name, c.tier, count(p.amount) AS paid_orders,
       coalesce(sum(p.amount), 0) AS revenue
FROM analytics.customers c
LEFT JOIN paid p ON p.customer_id = c.customer_id
GROUP BY c.customer_id, c.name, c.tier
