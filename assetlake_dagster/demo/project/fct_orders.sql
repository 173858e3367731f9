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

-- The dimension's versions start when the source changed the customer (valid_from=updated_at
-- in dim_customer.sql), not when it first ran, so older orders find their version too.
-- Spark has no ASOF JOIN: the version valid at order time is a range join on the key.
SELECT o.order_id, o.customer_id, o.ordered_at, o.order_date, o.amount, o.status,
       d.tier AS tier_at_order, d.country AS country_at_order
FROM staging.orders o
LEFT JOIN analytics.dim_customer d
  ON o.customer_id = d.customer_id
 AND o.ordered_at >= d.valid_from
 AND (d.valid_to IS NULL OR o.ordered_at < d.valid_to)
