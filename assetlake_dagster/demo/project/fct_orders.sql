-- materialize delta://analytics/fct_orders
-- data_test unique order_id
-- data_test relationships customer_id -> delta://raw/customers.customer_id warn
-- data_test accepted_values status = paid,pending,refunded
-- data_test tests/positive_amounts.sql
-- data_test not_null tier_at_order warn
-- group sales
-- owner team:data-eng
-- tags layer=mart
-- description Orders with the customer's tier and country as they were when the order was placed.
-- column tier_at_order "The customer's tier when the order was placed (the SCD2 version valid then)"
-- column country_at_order "The customer's country when the order was placed"

-- The dimension's history starts at its first run (valid_from = the run's clock time), but
-- orders can be older than that: a plain range join would give them no version at all. As
-- dbt-snapshot users do, each customer's first version counts as valid since the beginning.
WITH dim AS (
  SELECT customer_id, tier, country, valid_to,
         CASE WHEN valid_from = min(valid_from) OVER (PARTITION BY customer_id)
              THEN TIMESTAMP '1900-01-01' ELSE valid_from END AS valid_from
  FROM analytics.dim_customer
)
-- Spark has no ASOF JOIN: the version valid at order time is a range join on the key.
SELECT o.order_id, o.customer_id, o.ordered_at, o.order_date, o.amount, o.status,
       d.tier AS tier_at_order, d.country AS country_at_order
FROM staging.orders o
LEFT JOIN dim d
  ON o.customer_id = d.customer_id
 AND o.ordered_at >= d.valid_from
 AND (d.valid_to IS NULL OR o.ordered_at < d.valid_to)
