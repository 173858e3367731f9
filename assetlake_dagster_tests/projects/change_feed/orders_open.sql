-- materialize delta://staging/orders_open key=order_id deletes=delete
-- description Row-local with deletes=delete: an order deleted upstream, or voided, leaves the table.

SELECT order_id, customer_id, status, amount
FROM raw.orders
WHERE status IS NULL OR status <> 'void'
