-- materialize delta://bad/not_supported
-- column id <- delta://raw/src.id

SELECT id FROM raw.src
