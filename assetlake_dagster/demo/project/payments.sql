-- materialize delta://staging/payments
-- partitioned daily start=2024-01-01 end=2024-04-01 event_time=payment_date batch=91
-- on delta://landing/payments
-- data_test unique payment_id
-- data_test not_null order_id
-- group payments
-- owner team:finance
-- tags layer=staging
-- description Payments as the provider landed them, one partition per payment day.

-- landing/payments is external (no file here writes it): the watch sensor observes its Delta
-- log and requests this asset for exactly the days a new commit touched.
SELECT payment_id, order_id, CAST(amount AS DECIMAL(10, 2)) AS amount, paid_at, payment_date
FROM landing.payments
WHERE payment_date >= CAST({partition_start} AS DATE) AND payment_date < CAST({partition_end} AS DATE)
