-- materialize delta://bad/syntax_error
-- group bad

SELECT id,
       amount
FROM raw.src src extra
