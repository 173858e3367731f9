-- materialize delta://analytics/order_log append key=order_id
-- group marts
-- kinds log

SELECT order_id, amount, current_timestamp() AS logged_at
FROM analytics.orders_clean
WHERE order_id IN (SELECT order_id FROM analytics.orders_clean WHERE amount > 0);
