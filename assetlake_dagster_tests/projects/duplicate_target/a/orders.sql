-- materialize delta://dup/orders

SELECT id FROM raw.orders
