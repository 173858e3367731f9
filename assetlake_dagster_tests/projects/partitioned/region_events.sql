-- materialize delta://mart/region_events key=event_id
-- partitioned static eu,x' OR '1'='1,a\' OR 1=1 --,${env:HOME}

SELECT event_id, region, amount FROM raw.events WHERE region = {partition}
