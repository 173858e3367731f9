-- materialize delta://mart/orders key=order_id
-- data_test unique order_id
-- data_test not_null customer_id
-- data_test accepted_values status = paid,pending
-- data_test relationships customer_id -> delta://raw/customers.customer_id
-- data_test tests/no_negative_amounts.sql
-- data_test not_null note warn

SELECT order_id, customer_id, status, amount, note FROM raw.orders
