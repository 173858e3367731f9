-- materialize delta://dup/report

SELECT id FROM dup.orders
