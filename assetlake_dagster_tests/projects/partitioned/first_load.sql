-- materialize delta://mart/first_load
-- description Time travel: the daily events as of the table's first version.

SELECT count(*) AS events FROM mart.daily_events VERSION AS OF 0
