-- materialize delta://staging/events_log append new_rows
-- description Each run appends the events raw.events gained since the rows the table holds were read.
-- data_test not_null event_id

SELECT event_id, upper(kind) AS kind, amount, current_timestamp() AS loaded_at
FROM raw.events
WHERE kind IS NOT NULL
