-- materialize delta://bad/column_not_selected
-- column idd <- delta://raw/src.id

SELECT id FROM raw.src
