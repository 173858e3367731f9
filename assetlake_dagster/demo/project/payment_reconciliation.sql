-- materialize delta://analytics/payment_reconciliation
-- partitioned daily start=2024-01-01 end=2024-04-01 batch=91
-- automation eager
-- data_test not_null day
-- group payments
-- owner team:finance
-- tags layer=mart
-- description Per day: paid orders against the payments received for them. Eager: it follows every new day of payments without a click.

WITH paid AS (
  SELECT count(*) AS paid_orders, coalesce(sum(amount), 0) AS paid_amount
  FROM staging.orders
  WHERE status = 'paid' AND ordered_at >= {partition_start} AND ordered_at < {partition_end}
), received AS (
  SELECT count(*) AS payments, coalesce(sum(amount), 0) AS received
  FROM staging.payments
  WHERE payment_date = CAST({partition} AS DATE)
)
SELECT CAST({partition} AS DATE) AS day, paid.paid_orders, paid.paid_amount,
       received.payments, received.received, paid.paid_amount - received.received AS outstanding
FROM paid CROSS JOIN received
