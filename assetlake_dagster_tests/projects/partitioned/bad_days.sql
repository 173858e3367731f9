-- materialize delta://mart/bad_days
-- partitioned daily start=2024-01-01 end=2024-01-07 batch=2
-- description Fails for 2024-01-04 on purpose: a failed batch must not stop a backfill.

-- (an INT column: Delta drops NULL-typed columns, which would prune the check away)
SELECT event_id, amount, IF(day = DATE'2024-01-04', CAST(raise_error('bad day') AS INT), 1) AS checked
FROM raw.events
WHERE day = {partition}
