-- materialize delta://bad/bad_type
-- $cutoff (flaot)

SELECT id FROM raw.src
