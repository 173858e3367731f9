-- materialize delta://analytics/payment_reconciliation
-- partitioned daily start=2024-01-01 end=2024-04-01 event_time=day batch=91
-- automation eager
-- data_test not_null day
-- group payments
-- owner team:finance
-- tags layer=mart
-- description Per day: paid orders against the payments received for them. Eager: it follows every new day of payments without a click.

-- One row per day of the run's range, days without orders or payments included.
WITH days AS (
  SELECT explode(sequence(CAST({partition_start} AS DATE), date_sub(CAST({partition_end} AS DATE), 1))) AS day
), paid AS (
  SELECT CAST(ordered_at AS DATE) AS day, count(*) AS paid_orders, sum(amount) AS paid_amount
  FROM staging.orders
  WHERE status = 'paid' AND ordered_at >= {partition_start} AND ordered_at < {partition_end}
  GROUP BY CAST(ordered_at AS DATE)
), received AS (
  SELECT payment_date AS day, count(*) AS payments, sum(amount) AS received
  FROM staging.payments
  WHERE payment_date >= CAST({partition_start} AS DATE) AND payment_date < CAST({partition_end} AS DATE)
  GROUP BY payment_date
)
SELECT days.day,
       coalesce(paid.paid_orders, 0) AS paid_orders, coalesce(paid.paid_amount, 0) AS paid_amount,
       coalesce(received.payments, 0) AS payments, coalesce(received.received, 0) AS received,
       coalesce(paid.paid_amount, 0) - coalesce(received.received, 0) AS outstanding
FROM days
LEFT JOIN paid ON paid.day = days.day
LEFT JOIN received ON received.day = days.day
