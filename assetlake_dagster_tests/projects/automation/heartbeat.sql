-- materialize delta://ops/heartbeat
-- automation on_cron 0 * * * *

SELECT current_timestamp() AS at
