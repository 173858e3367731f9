-- materialize delta://bad/path_table

SELECT id FROM delta.`/data/raw/src`
