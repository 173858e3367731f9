-- materialize delta://staging/orders
-- partitioned daily start=2024-01-01 end=2024-04-01 event_time=ordered_at batch=91
-- $min_amount (float) = 0
-- group sales
-- owner team:data-eng
-- tags layer=staging
-- description Orders with a valid amount, one row per order; one partition per order day.
-- column amount "Order amount; orders below $min_amount are dropped"
-- column order_date "The day the order was placed: its partition"

-- batch=91: a backfill of the whole quarter is one run and one Delta commit; event_time=ordered_at
-- makes that run one query over the range, each row's partition its order day. `assetlake
-- backfill --batch N` splits a range differently.
SELECT order_id, customer_id, CAST(amount AS DECIMAL(10, 2)) AS amount, status, ordered_at,
       CAST(ordered_at AS DATE) AS order_date
FROM raw.orders
WHERE ordered_at >= {partition_start} AND ordered_at < {partition_end}
  AND amount >= :min_amount
