-- materialize delta://bad/setup_not_allowed

DROP TABLE IF EXISTS bad.setup_not_allowed;
SELECT id FROM raw.src
