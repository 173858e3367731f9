-- materialize delta://staging/orders
-- $min_amount (float) = 0
-- group sales
-- owner team:data-eng
-- tags layer=staging
-- description Orders with a valid amount, one row per order.

SELECT order_id, customer_id, CAST(amount AS DECIMAL(10, 2)) AS amount, status, ordered_at,
       CAST(ordered_at AS DATE) AS order_date
FROM raw.orders
WHERE amount >= :min_amount
