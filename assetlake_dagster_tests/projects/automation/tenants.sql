-- materialize delta://geo/tenants
-- partitioned dynamic tenants
-- group geo
-- schedule @hourly
-- automation on_missing

SELECT {partition} AS tenant
