-- materialize delta://sales/order_totals
-- partitioned daily start=2026-01-01 end=2026-01-08
-- group sales
-- automation eager

SELECT day, sum(amount) AS amount FROM sales.orders WHERE _partition = '{partition}' GROUP BY day
