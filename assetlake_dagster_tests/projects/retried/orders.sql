-- materialize delta://mart/orders key=order_id
-- data_test accepted_values status = paid,pending

SELECT order_id, status FROM raw.orders
