"""Time travel: restore a managed table to a version its materializations recorded.

Reading as of a version needs nothing from us: Spark SQL reads
``SELECT * FROM schema.table VERSION AS OF 3`` (or ``TIMESTAMP AS OF``), and a Python
asset's input takes ``metadata={"assetlake/version": 3}``. Restoring writes: Delta's
``RESTORE`` makes the table's content that of the version, as one new commit, and keeps
the history (so a restore can itself be undone).
"""

from pyspark.sql import SparkSession

from assetlake_dagster.lake.delta_sql import history, is_delta_table, path_identifier
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import TableUri
from assetlake_dagster.lake.versions import current_version


def restore_table(spark: SparkSession, lake: Lake, uri: TableUri, version: int) -> int:
    """Restore ``uri`` to ``version``; return the new version that holds the restored rows.

    Example:
        >>> restore_table(spark, Lake("/data/lake"), TableUri("staging", "orders"), 3)  # doctest: +SKIP
        7
    """
    path = lake.table_path(uri)
    if not is_delta_table(spark, path):
        raise ConfigError(f"{uri}: there is no Delta table at {path}.")
    known = sorted(int(r["version"]) for r in history(spark, path).select("version").collect())
    if int(version) not in known:
        raise ConfigError(
            f"{uri}: version {version} is not in the table's history (available: {known[0]}..{known[-1]}, "
            "unless vacuumed). Pick a delta/version recorded on a materialization."
        )
    spark.sql(f"RESTORE TABLE {path_identifier(path)} TO VERSION AS OF {int(version)}").collect()
    return current_version(spark, path)
