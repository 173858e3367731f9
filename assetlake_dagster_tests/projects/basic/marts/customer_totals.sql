-- materialize delta://analytics/customer_totals key=customer_id
-- on delta://analytics/customers
-- group marts

WITH totals AS (
    SELECT customer_id, SUM(amount) AS total_amount, COUNT(*) AS order_count
    FROM analytics.orders_clean
    GROUP BY customer_id
)
SELECT c.customer_id, c.name, t.total_amount, t.order_count
FROM totals t
JOIN analytics.customers c ON c.customer_id = t.customer_id
