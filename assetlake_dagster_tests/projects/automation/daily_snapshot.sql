-- materialize delta://geo/daily_snapshot
-- partitioned daily start=2026-01-01
-- group geo
-- automation on_missing

SELECT CAST({partition} AS DATE) AS day
