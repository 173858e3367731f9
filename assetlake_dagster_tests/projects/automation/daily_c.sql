-- materialize delta://reports/daily_c
-- group reports
-- schedule 0 7 * * *

SELECT 1 AS id
