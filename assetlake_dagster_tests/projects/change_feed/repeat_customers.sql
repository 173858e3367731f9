-- materialize delta://mart/repeat_customers key=customer deletes=delete
-- description Grouped with deletes=delete: a customer left with fewer than two orders leaves the table.

SELECT customer_id AS customer, sum(amount) AS total, count(*) AS orders
FROM raw.orders
WHERE customer_id IS NOT NULL
GROUP BY customer_id
HAVING count(*) > 1
