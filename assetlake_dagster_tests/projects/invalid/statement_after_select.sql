-- materialize delta://bad/statement_after_select

SELECT id FROM raw.src;
INSERT INTO bad.audit VALUES (1)
