-- materialize delta://bad/uri/extra

SELECT id FROM raw.src
