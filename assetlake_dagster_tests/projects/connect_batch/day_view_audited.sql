-- materialize delta://mart/day_view_audited
-- partitioned daily start=2024-01-01 end=2024-01-06 batch=5
-- data_test unique event_id
-- data_test tests/own_day.sql
-- description The same temp views, audited before the commit: a batch whose parts read
-- description another partition's views fails its data tests instead of publishing.

CREATE OR REPLACE TEMP VIEW day_events AS
SELECT event_id, day, amount FROM raw.events WHERE day = {partition};

CREATE OR REPLACE TEMP VIEW day_stats AS
SELECT count(*) AS day_rows FROM day_events;

SELECT e.event_id, e.day, e.amount, s.day_rows
FROM day_events e CROSS JOIN day_stats s
