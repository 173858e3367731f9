-- materialize delta://bad/reserved_column

SELECT id, 'x' AS _PARTITION FROM raw.src
