-- materialize delta://bad/two_materialize
-- materialize delta://bad/two_materialize_again

SELECT id FROM raw.src
