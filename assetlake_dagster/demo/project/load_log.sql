-- materialize delta://ops/load_log append
-- group ops
-- description One row per run: an append-only log of what the staging load saw.

SELECT current_timestamp() AS loaded_at, count(*) AS orders, sum(amount) AS amount
FROM staging.orders
