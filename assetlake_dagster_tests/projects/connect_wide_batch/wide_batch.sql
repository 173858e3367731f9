-- materialize delta://mart/wide_batch
-- partitioned daily start=2024-01-01 end=2024-04-01 batch=91
-- data_test unique day
-- description A quarter in one batch, audited: 91 parts in one plan sent over Spark Connect.

SELECT CAST({partition} AS DATE) AS day, 1 AS n
