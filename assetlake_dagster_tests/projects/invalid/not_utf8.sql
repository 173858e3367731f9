-- materialize delta://bad/not_utf8

SELECT ÿþ FROM raw.src
