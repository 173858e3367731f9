"""The lake side: where tables live and how they are read, without and with Spark.

Layered bottom up, each module importing only those below it:

- :mod:`~assetlake_dagster.lake.catalog`: which catalog tables are registered in (the
  session's, or a Hive metastore) and the driver settings it takes.
- :mod:`~assetlake_dagster.lake.identity`: a lake root's one canonical spelling (``s3``,
  ``s3n`` and ``s3a`` are one scheme; case, slashes and ``..`` normalised; credentials in
  a URL refused), which keys the engine, the metastore, locks and stamps.
- :mod:`~assetlake_dagster.lake.storage`: object-store settings (S3 endpoint, region,
  path style) for Spark, delta-rs and PyArrow alike.
- :mod:`~assetlake_dagster.lake.files`: the lake's files without Spark (``os`` locally,
  ``pyarrow.fs`` on an object store).
- :mod:`~assetlake_dagster.lake.delta_log`: a Delta table's log, read without Spark.
- :mod:`~assetlake_dagster.lake.delta_sql`: Delta through Spark SQL (schema, history, reads).
- :mod:`~assetlake_dagster.lake.versions`: a table's latest version, by either of those.
- :mod:`~assetlake_dagster.lake.root`: :class:`~assetlake_dagster.lake.root.Lake`, the lake
  root and each table's path in it.
- :mod:`~assetlake_dagster.lake.registration`: ``schema.table`` names in Spark's catalog.
- :mod:`~assetlake_dagster.lake.restore`: a table back to an earlier version.
"""
