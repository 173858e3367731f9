-- materialize delta://mart/customer_totals key=customer_id
-- description Grouped on the key: a run recomputes only the customers whose raw rows changed.

SELECT customer_id, sum(amount) AS total, count(*) AS orders, max(status) AS last_status
FROM raw.orders o
WHERE o.status <> 'void' AND customer_id IS NOT NULL
GROUP BY customer_id
