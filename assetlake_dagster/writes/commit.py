"""What every managed write shares: the target, the commit stamp and the result.

Every commit carries ``userMetadata`` naming the Dagster run, asset and partition. The
version a write produced is found by that stamp in the table history, never by taking
"the latest version" (another writer may have committed since).
"""

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional

from pyspark.sql import SparkSession

from assetlake_dagster.delta_sql import history, is_delta_table, session_conf
from assetlake_dagster.spec import TableUri, WriteStrategy

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
STAMP_TAG = "assetlake"
#: How far back in the history to look for a stamp; concurrent writers rarely exceed it.
HISTORY_SEARCH_DEPTH = 100


@dataclass(frozen=True)
class CommitStamp:
    """Identifies one managed write in the Delta history.

    Attributes:
        run_id: the Dagster run that writes.
        asset: the asset key as ``schema/table``.
        partition: the partition key, or ``None`` for a whole-table write.
        idempotency_id: the run whose retries must not repeat an append (the run itself,
            or the original run for a resumed re-execution).
    """

    run_id: str
    asset: str
    partition: Optional[str] = None
    idempotency_id: str = ""

    @property
    def root_run_id(self) -> str:
        """The run this write continues: the original run of a resumed re-execution."""
        return self.idempotency_id or self.run_id

    def user_metadata(self) -> str:
        """The JSON written as the commit's ``userMetadata``.

        Example:
            >>> CommitStamp("r1", "s/t").user_metadata()
            '{"assetlake": {"run_id": "r1", "root_run_id": "r1", "asset": "s/t", "partition": null}}'
        """
        return json.dumps(
            {
                STAMP_TAG: {
                    "run_id": self.run_id,
                    "root_run_id": self.root_run_id,
                    "asset": self.asset,
                    "partition": self.partition,
                }
            }
        )

    def matches(self, user_metadata: Optional[str]) -> bool:
        """Whether a commit's ``userMetadata`` was written for this slice by this run or
        by an earlier attempt of the run it continues (same root run)."""
        if not user_metadata:
            return False
        try:
            stamp = json.loads(user_metadata).get(STAMP_TAG) or {}
        except (ValueError, AttributeError):
            return False
        return (
            (stamp.get("run_id") == self.run_id or stamp.get("root_run_id") == self.root_run_id)
            and stamp.get("asset") == self.asset
            and stamp.get("partition") == self.partition
        )

    @property
    def txn_app_id(self) -> str:
        """Delta ``txnAppId`` for append idempotency: one per (original run, asset, slice)."""
        return f"assetlake:{self.root_run_id}:{self.asset}:{self.partition or ''}"


@dataclass(frozen=True)
class WriteTarget:
    """Where and how one slice is written.

    ``track`` and ``close_deletes`` only apply to history (see
    :class:`~assetlake_dagster.spec.MaterializeSpec`). ``partitions`` are the keys of the
    slice for a partitioned table (one, or a backfill batch); empty for a whole table.
    """

    uri: TableUri
    path: str
    strategy: WriteStrategy
    stamp: CommitStamp
    key: tuple[str, ...] = ()
    track: tuple[str, ...] = ()
    close_deletes: bool = False
    partitions: tuple[str, ...] = ()

    @property
    def asset(self) -> str:
        return self.stamp.asset

    @property
    def partitioned(self) -> bool:
        return bool(self.partitions)


@dataclass(frozen=True)
class WriteResult:
    """What a managed write did.

    Attributes:
        committed: whether this call created a Delta version (False for a no-op merge or
            an append already applied by an earlier attempt of the same run).
        version: the version holding the slice (the new one, or the current one).
        operation: the Delta operation of that version (``WRITE``, ``MERGE``...).
        operation_metrics: Delta's ``operationMetrics`` of that version.
        rows_written: rows the write inserted or updated.
    """

    committed: bool
    version: Optional[int]
    operation: Optional[str] = None
    operation_metrics: Mapping[str, str] = field(default_factory=dict)
    rows_written: int = 0


def current_version(spark: SparkSession, path: str) -> Optional[int]:
    """The table's latest version, or ``None`` when there is no table yet."""
    if not is_delta_table(spark, path):
        return None
    row = history(spark, path, 1).select("version").first()
    return None if row is None else int(row["version"])


def find_stamped_commit(spark: SparkSession, path: str, stamp: CommitStamp) -> Optional[dict]:
    """The newest history entry whose ``userMetadata`` matches ``stamp``, as a dict."""
    entries = (
        history(spark, path, HISTORY_SEARCH_DEPTH)
        .select("version", "operation", "operationMetrics", "userMetadata")
        .collect()
    )
    for row in entries:  # newest first
        if stamp.matches(row["userMetadata"]):
            return row.asDict(recursive=True)
    return None


def result_from_history(
    spark: SparkSession, target: WriteTarget, committed: bool, rows_key: tuple[str, ...]
) -> WriteResult:
    """Build the :class:`WriteResult` of a write from its stamped history entry."""
    entry = find_stamped_commit(spark, target.path, target.stamp)
    if entry is None:
        raise RuntimeError(
            f"the commit of {target.uri} stamped for run {target.stamp.run_id} is not in the "
            f"last {HISTORY_SEARCH_DEPTH} versions"
        )
    metrics = {k: str(v) for k, v in (entry["operationMetrics"] or {}).items()}
    rows = sum(int(metrics.get(k, 0) or 0) for k in rows_key)
    return WriteResult(
        committed=committed,
        version=int(entry["version"]),
        operation=entry["operation"],
        operation_metrics=metrics,
        rows_written=rows,
    )


#: Serializes stamped SQL commands: the stamp is a session-wide setting, and two threads
#: sharing a session (concurrent partition writes) must not commit under each other's stamp.
_STAMP_LOCK = threading.RLock()


@contextmanager
def stamped_session(
    spark: SparkSession, stamp: CommitStamp, settings: Optional[Mapping[str, str]] = None
) -> Iterator[None]:
    """Stamp commits made through SQL (MERGE has no writer option).

    The setting (and any extra per-command ``settings``) is session-wide, so the command
    runs under a process-wide lock and the settings are restored right after it.
    """
    with _STAMP_LOCK, session_conf(spark, {USER_METADATA_CONF: stamp.user_metadata(), **(settings or {})}):
        yield
