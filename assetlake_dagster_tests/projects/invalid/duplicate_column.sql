-- materialize delta://bad/duplicate_column

SELECT id, name, ID FROM raw.src
