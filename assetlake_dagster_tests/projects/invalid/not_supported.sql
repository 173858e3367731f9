-- materialize delta://bad/not_supported
-- data_test not_null id

SELECT id FROM raw.src
