-- pipeline
-- materialize delta://analytics/orders_clean
-- on delta://raw/orders
-- $min_amount (float) = 0
-- $since (date) = 2024-01-01
-- group sales
-- owner team:data-eng
-- owner alice@example.com
-- tags tier=silver,pii=false
-- tags domain=sales
-- description Cleaned orders:
-- description one row per order, test orders removed.
-- kinds spark,delta

-- Free comments below the header are plain SQL comments.
SET spark.sql.ansi.enabled = true;
CREATE OR REPLACE TEMP VIEW recent AS
SELECT * FROM raw.orders WHERE amount >= :min_amount AND ordered_at >= :since;
SELECT order_id, customer_id, amount, ordered_at
FROM recent
WHERE NOT is_test
