-- materialize delta://mart/stamped

SELECT count(*) AS orders, current_timestamp() AS counted_at FROM raw.orders
