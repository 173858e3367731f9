-- materialize delta://cyc/a

SELECT id FROM cyc.c
