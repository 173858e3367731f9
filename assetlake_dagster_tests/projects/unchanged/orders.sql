-- materialize delta://staging/orders
-- description Orders of the raw source, replaced on every run that has something new to read.

SELECT order_id, customer_id, amount FROM raw.orders WHERE amount > 0
