-- materialize delta://bad/no_select

SET spark.sql.ansi.enabled = true;
