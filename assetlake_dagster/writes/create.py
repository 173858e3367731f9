"""A table's first commit, with everything its header declares about the table in it.

Delta's DataFrame writer creates a table with its rows, its column comments (they travel in
the rows' schema) and its ``delta.*`` properties (the session defaults of
:func:`~assetlake_dagster.writes.layout.new_table_properties`), but it cannot give the table a
description, a user property or liquid clustering. A first write whose table declares any of
these is one ``CREATE TABLE … AS SELECT`` instead: the rows, the metadata, the commit stamp
and, for an append, the idempotency pair (``txnAppId``), all in version 0, so that the first
run of a table is one commit like every other run. Any other first write keeps the writer
(operation ``WRITE``).

A whole-table replace of a clustered table is a ``CREATE OR REPLACE TABLE … AS SELECT`` every
run: Delta's overwrite drops a table's clustering, which a second commit would then restore.

Example:
    >>> from assetlake_dagster.writes.commit import CommitStamp, WriteTarget
    >>> from assetlake_dagster.spec import TableUri, WriteStrategy
    >>> target = WriteTarget(TableUri("s", "t"), "/lake/s/t", WriteStrategy.REPLACE, CommitStamp("r1", "s/t"),
    ...                      comment="Customers.", cluster_by=("id",))
    >>> needs_create_statement(target)
    True
    >>> print(create_statement(target, "rows_view"))
    CREATE TABLE delta.`/lake/s/t` USING delta CLUSTER BY (`id`) COMMENT 'Customers.' AS SELECT * FROM rows_view
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.lake.delta_sql import path_identifier
from assetlake_dagster.lake.registration import sql_string
from assetlake_dagster.spark.error_logs import errors_reported_by_caller
from assetlake_dagster.spec import PARTITION_COLUMN, quote_identifier
from assetlake_dagster.writes.commit import WriteTarget, stamped_session

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, SparkSession

#: The Delta operations of the commits made by :func:`create_table`: a first one, a replace.
CREATE_OPERATION = "CREATE TABLE AS SELECT"
REPLACE_OPERATION = "CREATE OR REPLACE TABLE AS SELECT"
#: Session settings that carry an append's idempotency pair into a SQL command's commit.
TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
#: What Spark answers a CREATE TABLE whose folder has a ``_delta_log``.
ALREADY_EXISTS = "TABLE_OR_VIEW_ALREADY_EXISTS"
#: Optimized writes for a SQL command (the writer's ``optimizeWrite`` option).
OPTIMIZE_WRITE_CONF = "spark.databricks.delta.optimizeWrite.enabled"
_DELTA_PREFIX = "delta."
#: How long a first write that finds another run's first write under way waits for its
#: commit before writing anyway (then the declared layout follows in a commit of its own).
FIRST_COMMIT_WAIT_S = 120.0
_pause = time.sleep  # (tests watch the wait through it)


def needs_create_statement(target: WriteTarget) -> bool:
    """Whether ``target``'s first commit must be a ``CREATE TABLE … AS SELECT``: the table
    declares a description, a property outside ``delta.*`` or clustering columns."""
    return (
        target.comment is not None
        or bool(target.cluster_by)
        or any(not key.startswith(_DELTA_PREFIX) for key, _ in target.properties)
    )


def create_statement(target: WriteTarget, view: str, partitioned: bool = False, replace: bool = False) -> str:
    """The ``CREATE [OR REPLACE] TABLE … AS SELECT * FROM view`` that (re)creates ``target``
    with its metadata.

    Identifiers and property keys were allow-listed when the header was read; every text
    is a quoted literal.
    """
    verb = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE"
    parts = [f"{verb} {path_identifier(target.path)} USING delta"]
    if partitioned:
        parts.append(f"PARTITIONED BY ({quote_identifier(PARTITION_COLUMN)})")
    if target.cluster_by:
        parts.append(f"CLUSTER BY ({', '.join(quote_identifier(c) for c in target.cluster_by)})")
    if target.comment is not None:
        parts.append(f"COMMENT {sql_string(target.comment)}")
    if target.properties:
        listed = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in target.properties)
        parts.append(f"TBLPROPERTIES ({listed})")
    parts.append(f"AS SELECT * FROM {view}")
    return " ".join(parts)


def create_table(
    spark: SparkSession,
    rows: DataFrame,
    target: WriteTarget,
    *,
    otherwise: Callable[[], None],
    partitioned: bool = False,
    replace: bool = False,
    settings: Optional[Mapping[str, str]] = None,
) -> None:
    """Create the table at ``target.path`` holding ``rows``, with its declared description,
    properties and clustering, in one stamped commit.

    ``CREATE TABLE`` finds a table wherever the folder has a ``_delta_log``, even one without
    a commit: another run's first write that has not committed yet (two batches of a backfill,
    or a backfill and an eager run, writing one table's first partitions), or a terminated
    one. Then this write waits for that first commit (up to :data:`FIRST_COMMIT_WAIT_S`) and
    is ``otherwise``, the strategy's own DataFrame write, onto the table the other created
    with its declared layout: each run stays one commit. Only when no first commit comes (a
    terminated run's folder) does this write create the table bare, and the declared layout
    follows in a metadata-only commit.

    Args:
        otherwise: the strategy's write without the declared layout.
        partitioned: partition the table by ``_partition``.
        replace: replace the table if it exists (its history stays; its properties become
            the declared ones).
        settings: extra session settings for the command (an append's ``txnAppId``).
    """
    view = f"_assetlake_new_table_{uuid.uuid4().hex}"
    rows.createOrReplaceTempView(view)
    try:
        with stamped_session(spark, target.stamp, settings), errors_reported_by_caller():
            spark.sql(create_statement(target, view, partitioned, replace))
    except Exception as exc:
        if ALREADY_EXISTS not in str(exc):
            raise
        wait_for_first_commit(spark, target.path)
        otherwise()
    finally:
        spark.catalog.dropTempView(view)


def wait_for_first_commit(spark: SparkSession, path: str, timeout: Optional[float] = None) -> bool:
    """Wait until the table at ``path`` has a version (another run's first write committed);
    whether it has one within ``timeout`` seconds (default :data:`FIRST_COMMIT_WAIT_S`)."""
    from assetlake_dagster.lake.versions import current_version

    timeout = FIRST_COMMIT_WAIT_S if timeout is None else timeout

    def committed() -> bool:
        try:
            return current_version(spark, path) is not None
        except Exception:  # noqa: BLE001 - a store's "not a table yet" is an answer too
            return False

    deadline = time.monotonic() + timeout
    while not committed():
        if time.monotonic() >= deadline:
            return False
        _pause(0.5)
    return True
