-- materialize delta://mart/daily_totals key=customer
-- partitioned daily start=2024-01-01 end=2024-01-11 batch=5

SELECT customer, count(*) AS events, sum(amount) AS amount
FROM mart.daily_events
WHERE _partition = '{partition}'
GROUP BY customer
