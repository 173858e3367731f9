-- materialize delta://mart/order_totals

SELECT status, count(*) AS orders, sum(amount) AS amount FROM mart.orders GROUP BY status
