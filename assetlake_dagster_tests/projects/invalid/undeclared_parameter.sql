-- materialize delta://bad/undeclared_parameter
-- $min_amount (float) = 0

SELECT id FROM raw.src
WHERE amount > :min_amont
