-- materialize delta://bad/unknown_annotation
-- kind silver

SELECT id FROM raw.src
