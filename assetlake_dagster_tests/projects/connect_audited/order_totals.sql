-- materialize delta://mart/order_totals

SELECT count(*) AS orders, sum(amount) AS amount FROM mart.orders
