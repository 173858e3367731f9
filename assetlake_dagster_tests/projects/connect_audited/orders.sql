-- materialize delta://mart/orders key=order_id
-- data_test unique order_id
-- data_test not_null customer_id
-- data_test tests/no_negative_amounts.sql

SELECT order_id, customer_id, amount FROM raw.orders
