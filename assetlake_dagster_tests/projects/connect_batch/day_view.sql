-- materialize delta://mart/day_view
-- partitioned daily start=2024-01-01 end=2024-01-06 batch=5
-- description Each day through temp views re-created per partition: in a batch every
-- description partition must keep its own views, not the last partition's.

CREATE OR REPLACE TEMP VIEW day_events AS
SELECT event_id, day, amount FROM raw.events WHERE day = {partition};

-- No marker here: Spark stores this view's SQL text and resolves day_events by name.
CREATE OR REPLACE TEMP VIEW day_stats AS
SELECT count(*) AS day_rows FROM day_events;

SELECT e.event_id, e.day, e.amount, s.day_rows
FROM day_events e CROSS JOIN day_stats s
