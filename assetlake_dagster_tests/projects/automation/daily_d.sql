-- materialize delta://reports/daily_d
-- group reports
-- schedule 0 7 * * *

SELECT 1 AS id
