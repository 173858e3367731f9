-- materialize delta://cyc/c
-- on delta://cyc/b

SELECT id FROM raw.src
