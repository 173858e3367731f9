-- materialize delta://geo/by_region
-- partitioned static eu,us
-- group geo
-- schedule 0 3 * * *

SELECT {partition} AS region
