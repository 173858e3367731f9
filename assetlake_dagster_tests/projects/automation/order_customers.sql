-- materialize delta://sales/order_customers
-- partitioned daily start=2026-01-01 end=2026-01-08
-- group sales
-- automation eager
-- description Reads an external table nothing ever materializes: eager must not wait for it.

SELECT o.day, c.id AS customer_id FROM sales.orders AS o CROSS JOIN raw.customers AS c WHERE o._partition = '{partition}'
