-- materialize delta://cyc/d

SELECT id FROM cyc.a JOIN cyc.d_input USING (id)
