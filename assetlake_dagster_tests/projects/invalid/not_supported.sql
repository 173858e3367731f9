-- materialize delta://bad/not_supported
-- partitioned daily start=2024-01-01

SELECT id FROM raw.src
