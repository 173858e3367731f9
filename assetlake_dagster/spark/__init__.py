"""The Spark side: what is installed, how a Spark starts, and the warm engine that serves runs.

Layered bottom up, each module importing only those below it:

- :mod:`~assetlake_dagster.spark.install`: PySpark's Spark, the Delta and S3A jars, the
  JVM class-data archive's path (facts; nothing starts).
- :mod:`~assetlake_dagster.spark.session`: the in-process SparkSession and Spark Connect
  client sessions.
- :mod:`~assetlake_dagster.spark.connect_server`: a Spark Connect server with Delta.
- :mod:`~assetlake_dagster.spark.jvm_archive`: builds the class-data archive (runs a server).
- :mod:`~assetlake_dagster.spark.engine`: the lake's warm shared engine, as its clients see it.
- :mod:`~assetlake_dagster.spark.engine_supervisor`: the process that owns the engine's JVM.
- :mod:`~assetlake_dagster.spark.sessions`: which of these a run's sessions come from.
"""
