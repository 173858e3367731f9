-- materialize delta://mart/orders key=id
-- publish_with sales

SELECT id, customer, amount FROM raw.orders_src
