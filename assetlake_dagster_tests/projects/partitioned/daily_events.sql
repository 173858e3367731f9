-- materialize delta://mart/daily_events
-- partitioned daily start=2024-01-01 end=2024-01-11 batch=5
-- description One day of events per partition.

SELECT event_id, day, region, customer, amount
FROM raw.events
WHERE day = {partition}
