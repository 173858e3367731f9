-- materialize delta://sales/orders
-- partitioned daily start=2026-01-01 end=2026-01-08
-- data_test not_null amount
-- group sales
-- schedule 0 2 * * *
-- description One row per day; the day 2026-01-03 has a NULL amount, which fails the blocking test.

SELECT CAST({partition} AS DATE) AS day, IF({partition} = '2026-01-03', CAST(NULL AS DOUBLE), 10.0D) AS amount
