-- materialize delta://dup/Orders key=id

SELECT id FROM raw.orders
