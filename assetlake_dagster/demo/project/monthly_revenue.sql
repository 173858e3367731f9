-- materialize delta://analytics/monthly_revenue
-- partitioned monthly start=2024-01-01 end=2024-04-01
-- group sales
-- owner team:data-eng
-- tags layer=mart
-- description Orders and revenue per status and month, rolled up from the month's daily orders.

SELECT CAST({partition_start} AS DATE) AS month, status, count(*) AS orders, sum(amount) AS revenue
FROM staging.orders
WHERE ordered_at >= {partition_start} AND ordered_at < {partition_end}
GROUP BY status
