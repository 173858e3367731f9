-- materialize delta://mart/monthly_totals
-- partitioned monthly start=2024-01-01 end=2024-02-01

SELECT count(*) AS events, sum(amount) AS amount
FROM mart.daily_events
WHERE day >= {partition_start} AND day < {partition_end}
