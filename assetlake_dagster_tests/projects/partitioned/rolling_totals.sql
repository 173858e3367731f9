-- materialize delta://mart/rolling_totals
-- partitioned daily start=2024-01-01 end=2024-01-11 batch=5
-- on delta://mart/daily_events window=3d

SELECT count(*) AS events_3d, sum(amount) AS amount_3d
FROM mart.daily_events
WHERE day > date_sub(CAST({partition} AS DATE), 3) AND day <= CAST({partition} AS DATE)
