-- materialize delta://cyc/b

SELECT id FROM cyc.a
