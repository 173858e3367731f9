-- materialize manual delta://bad/manual_with_key key=id

INSERT INTO bad.manual_with_key SELECT id FROM raw.src
