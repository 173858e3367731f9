-- materialize delta://mart/totals
-- publish_with sales
-- data_test unique customer

SELECT customer, sum(amount) AS total FROM mart.orders GROUP BY customer
