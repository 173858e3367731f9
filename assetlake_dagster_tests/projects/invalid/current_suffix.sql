-- materialize delta://bad/dim_current

SELECT id FROM raw.src
