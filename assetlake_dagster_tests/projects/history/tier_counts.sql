-- materialize delta://mart/tier_counts

SELECT tier, count(*) AS customers FROM dim.customer_current GROUP BY tier
