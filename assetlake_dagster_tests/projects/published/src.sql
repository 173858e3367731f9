-- materialize delta://raw/orders_src

SELECT * FROM VALUES (1, 'a', 10), (2, 'b', 5) AS t(id, customer, amount)
