-- materialize delta://mart/plain
-- description No arguments: its run config takes none.

SELECT count(*) AS events FROM raw.events
