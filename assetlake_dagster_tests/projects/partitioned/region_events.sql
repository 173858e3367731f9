-- materialize delta://mart/region_events
-- partitioned static eu,x' OR '1'='1,a\' OR 1=1 --

SELECT event_id, region, amount FROM raw.events WHERE region = {partition}
