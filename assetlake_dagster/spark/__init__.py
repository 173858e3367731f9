"""The Spark side: what is installed, how a Spark starts, and the warm engine that serves runs.

Layered bottom up, each module importing only those below it:

- :mod:`~assetlake_dagster.spark.install`: PySpark's Spark, the Delta and S3A jars, the
  JVM class-data archive's path (facts; nothing starts).
- :mod:`~assetlake_dagster.spark.session`: the in-process SparkSession and Spark Connect
  client sessions.
- :mod:`~assetlake_dagster.spark.secret_settings`: settings that never go on a command line.
- :mod:`~assetlake_dagster.spark.connect_server`: a Spark Connect server with Delta;
  :mod:`~assetlake_dagster.spark.jdbc_endpoint` and
  :mod:`~assetlake_dagster.spark.thrift_server`: Spark's Thrift JDBC server, standalone or
  inside the engine's JVM.
- :mod:`~assetlake_dagster.spark.loopback`: the engine holds every address ``localhost`` names.
- :mod:`~assetlake_dagster.spark.setup`: ``assetlake setup`` (the jars fetched and checked).
- :mod:`~assetlake_dagster.spark.jvm_archive`: builds the class-data archive (runs a server).
- :mod:`~assetlake_dagster.spark.engine`: the lake's warm shared engine, as its clients see it.
- :mod:`~assetlake_dagster.spark.engine_supervisor`: the process that owns the engine's JVM.
- :mod:`~assetlake_dagster.spark.sessions`: which of these a run's sessions come from.

Beside them, importing none of them (it takes a session, whatever its kind):

- :mod:`~assetlake_dagster.spark.python_values`: Python values becoming Spark values (a naive
  timestamp is a wall time in the session's zone, ``spark.sql.session.timeZone``).
- :mod:`~assetlake_dagster.spark.error_logs`: expected errors checked without PySpark
  logging them at ERROR level (a clean run's log holds no ERROR line).
"""
