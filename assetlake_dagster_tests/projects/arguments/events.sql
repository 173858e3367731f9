-- materialize delta://mart/big_events
-- partitioned daily start=2024-01-01 end=2024-01-04 batch=3
-- $min_amount (float) = 0
-- description The events of a day with at least :min_amount (run config sets it).

SELECT event_id, day, amount
FROM raw.events
WHERE day = {partition} AND amount >= :min_amount
