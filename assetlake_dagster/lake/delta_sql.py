"""Delta tables addressed by path, through Spark SQL alone.

Every call here works the same on a classic SparkSession and on a Spark Connect session.
Delta's Python ``DeltaTable`` API does not: on Spark Connect it needs the Delta Connect
plugin on the server (``io.delta:delta-connect-server``), which a Spark Connect server
with only the Delta jars lacks ("No handler found for extension"). Delta's SQL surface
(``DESCRIBE DETAIL``, ``DESCRIBE HISTORY``, ``MERGE INTO``) needs nothing but the Delta
SQL extension, so assetlake talks to Delta through SQL only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Optional
from urllib.parse import urlsplit

from assetlake_dagster.spark.error_logs import errors_reported_by_caller
from assetlake_dagster.spark.session import driver_on_this_machine

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, Row, SparkSession
    from pyspark.sql.types import StructType

#: What Spark and Delta answer for a path that holds no Delta table: a missing path, a
#: folder without a log (or with an empty one), a folder of plain Parquet.
NOT_A_DELTA_TABLE = frozenset(
    {"DELTA_MISSING_DELTA_TABLE", "DELTA_TABLE_NOT_FOUND", "DELTA_TABLE_ONLY_OPERATION", "PATH_NOT_FOUND"}
)
#: A file of ``_delta_log`` that makes it a table's log: a commit (``%020d.json``) or a
#: checkpoint (``%020d.checkpoint.parquet``, multi-part and V2 forms).
_LOG_ENTRY_RE = re.compile(r"^[0-9]{20}\.(json|checkpoint\..+)$")

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
    """Whether ``path`` holds a Delta table (a missing path is not one).

    Example:
        >>> is_delta_table(spark, "/lake/s/not_yet")  # doctest: +SKIP
        False
    """
    return table_schema(spark, path) is not None


def table_schema(spark: SparkSession, path: str) -> Optional[StructType]:
    """The schema of the Delta table at ``path`` (its latest version), or ``None``.

    Analysis only, no Spark job: Delta loads the latest snapshot's protocol and metadata.
    ``DESCRIBE DETAIL``, used here before, also sums every file of the version (4 Spark jobs
    and about 0.5-2 s after each commit, on every write). A path whose log this process
    sees, empty or missing, is answered without asking Spark (:func:`visibly_not_a_table`):
    a first write asks about a table that is not there yet, and Spark's answer to that is an
    error, which PySpark and the engine log at ERROR level with a stack trace.

    Example:
        >>> table_schema(spark, "/lake/s/t").fieldNames()  # doctest: +SKIP
        ['id', 'twice']
    """
    from pyspark.errors import AnalysisException

    if visibly_not_a_table(spark, path):
        return None
    try:
        with errors_reported_by_caller():  # a table may still be missing, e.g. in a bucket
            return read(spark, path).schema
    except AnalysisException as exc:
        if exc.getCondition() in NOT_A_DELTA_TABLE:
            return None
        raise


def visibly_not_a_table(spark: SparkSession, path: str) -> bool:
    """Whether this process can see that ``path`` holds no Delta table, without Spark.

    Only for a local path on the machine of the session's driver (in this process, or the
    warm engine on loopback: the same files), whose ``_delta_log`` is missing or holds no
    commit or checkpoint, which is when Delta answers "not a Delta table" too. ``False``
    means "ask Spark": a path in a bucket, a remote driver, a log this process cannot list.

    Example:
        >>> visibly_not_a_table(spark, "/lake/s/not_yet")  # doctest: +SKIP
        True
        >>> visibly_not_a_table(spark, "s3a://bucket/lake/s/not_yet")  # doctest: +SKIP
        False
    """
    parts = urlsplit(path)
    if parts.scheme not in ("", "file") or not driver_on_this_machine(spark):
        return False
    local = parts.path if parts.scheme else path
    try:
        names = os.listdir(os.path.join(local, "_delta_log"))
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return not any(_LOG_ENTRY_RE.match(name) for name in names)


def history(spark: SparkSession, path: str, limit: Optional[int] = None) -> DataFrame:
    """The table's history, newest first (the rows of ``DeltaTable.history``)."""
    statement = f"DESCRIBE HISTORY {path_identifier(path)}"
    if limit is not None:
        statement += f" LIMIT {int(limit)}"
    return spark.sql(statement)


def history_rows(spark: SparkSession, path: str, limit: int, *columns: str) -> Optional[list[Row]]:
    """The newest ``limit`` history entries' ``columns``, newest first; ``None`` when
    ``path`` holds no Delta table."""
    from pyspark.errors import AnalysisException

    if visibly_not_a_table(spark, path):
        return None
    try:
        with errors_reported_by_caller():
            return history(spark, path, limit).select(*columns).collect()
    except AnalysisException as exc:
        if exc.getCondition() in NOT_A_DELTA_TABLE:
            return None
        raise


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
