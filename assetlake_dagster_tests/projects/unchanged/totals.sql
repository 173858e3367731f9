-- materialize delta://mart/totals key=customer_id
-- data_test unique customer_id
-- automation eager

SELECT customer_id, sum(amount) AS total FROM staging.orders GROUP BY customer_id
