"""Delta tables addressed by path, through Spark SQL alone.

Every call here works the same on a classic SparkSession and on a Spark Connect session.
Delta's Python ``DeltaTable`` API does not: on Spark Connect it needs the Delta Connect
plugin on the server (``io.delta:delta-connect-server``), which a Spark Connect server
with only the Delta jars lacks ("No handler found for extension"). Delta's SQL surface
(``DESCRIBE DETAIL``, ``DESCRIBE HISTORY``, ``MERGE INTO``) needs nothing but the Delta
SQL extension, so assetlake talks to Delta through SQL only.
"""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Optional

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

#: What Delta answers ``DESCRIBE DETAIL`` on a path that holds no Delta table.
NOT_A_DELTA_TABLE = "DELTA_MISSING_DELTA_TABLE"


def path_identifier(path: str) -> str:
    """The SQL name of the Delta table at ``path``.

    Example:
        >>> path_identifier("/lake/s/t")
        'delta.`/lake/s/t`'
        >>> path_identifier("/odd`dir/t")
        'delta.`/odd``dir/t`'
    """
    return "delta.`" + path.replace("`", "``") + "`"


def is_delta_table(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` holds a Delta table (a missing path is not one)."""
    try:
        spark.sql(f"DESCRIBE DETAIL {path_identifier(path)}").select("format").collect()
    except AnalysisException as exc:
        if exc.getCondition() == NOT_A_DELTA_TABLE:
            return False
        raise
    return True


def history(spark: SparkSession, path: str, limit: Optional[int] = None) -> DataFrame:
    """The table's history, newest first (the rows of ``DeltaTable.history``)."""
    statement = f"DESCRIBE HISTORY {path_identifier(path)}"
    if limit is not None:
        statement += f" LIMIT {int(limit)}"
    return spark.sql(statement)


def read(spark: SparkSession, path: str, version: Optional[int] = None) -> DataFrame:
    """The table as a DataFrame, as of ``version`` when given."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(path)


@contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Set session settings for the commands run inside, then restore the prior values.

    Delta reads some per-command switches (commit ``userMetadata``, MERGE schema
    evolution) from the session only when the command is issued through SQL.
    """
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
