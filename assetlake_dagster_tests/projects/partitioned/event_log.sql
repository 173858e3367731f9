-- materialize delta://mart/event_log append
-- partitioned daily start=2024-01-01 end=2024-01-11 batch=5

SELECT event_id, amount FROM raw.events
WHERE day >= {partition_start} AND day < {partition_end}
