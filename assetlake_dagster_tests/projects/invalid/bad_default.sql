-- materialize delta://bad/bad_default
-- $limit (int) = ten

SELECT id FROM raw.src LIMIT :limit
