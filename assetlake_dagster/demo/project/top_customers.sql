-- materialize delta://analytics/top_customers
-- data_test unique customer_id
-- $top_n (int) = 20
-- group sales
-- tags layer=mart
-- description The customers with the most paid revenue.

SET spark.sql.ansi.enabled = true;

SELECT customer_id, name, tier, revenue, revenue_rank
FROM (
  SELECT customer_id, name, tier, revenue,
         rank() OVER (ORDER BY revenue DESC, customer_id) AS revenue_rank
  FROM analytics.customer_revenue
) ranked
WHERE revenue_rank <= :top_n
