-- materialize delta://bad/unknown_option kye=id

SELECT id FROM raw.src
