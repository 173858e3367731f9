-- materialize delta://staging/orders_clean key=order_id
-- description Row-local: each order's row from its raw row alone, so a run reads only the raw rows that changed.
-- data_test not_null order_id

SELECT order_id, customer_id, upper(status) AS status, amount * 2 AS amount2
FROM raw.orders
WHERE amount > 0 OR amount IS NULL
