"""What every managed write shares: the target, the commit stamp and the result.

Every commit carries ``userMetadata`` naming the Dagster run, asset and partition. The
version a write produced is found by that stamp in the table history, never by taking
"the latest version" (another writer may have committed since).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake import delta_log
from assetlake_dagster.lake.delta_sql import history_rows, session_conf
from assetlake_dagster.lake.versions import current_version, reads_log_here
from assetlake_dagster.spark.session import is_connect_session
from assetlake_dagster.spec import MaterializeSpec, MergeOptions, TableUri, WriteStrategy

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import SparkSession


try:
    import fcntl
except ImportError:  # not POSIX: only the threads of one process are serialized
    fcntl = None  # type: ignore[assignment]

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
STAMP_TAG = "assetlake"
#: The lock file of a local table, in its schema folder: ``.<table>.assetlake.lock``.
LOCK_FILE_SUFFIX = ".assetlake.lock"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:/")
#: The stamp's field holding the fingerprint of the rows a whole-table replace wrote.
CONTENT_FIELD = "content"
#: The stamp's field holding the fingerprint of the rows a one-pass merge merged.
SOURCE_FIELD = "source"
#: The stamp field of an ``append new_rows``: the upstream versions its rows were read up to.
READ_FIELD = "read"
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
        code_version: the asset's code version (a SQL file's hash) that wrote the commit, so
            that a lake says which code its tables hold (``assetlake plan --changed``).
        writer: the process that writes (:func:`~assetlake_dagster.writes.writer.this_writer`),
            so that a later run can tell that a run which never recorded the commit is dead.
        content: a whole-table replace's fingerprint of the rows it wrote
            (:mod:`~assetlake_dagster.writes.content`), so that the next one can tell it
            would write the same rows.
        source: a one-pass merge's fingerprint of the rows it merged (with its key and
            options), so that merging the same rows again is known to change nothing.
        read: an ``append new_rows``'s upstream tables and the versions its rows were read
            up to, so that the next run appends what was added after them, whatever the
            Dagster instance remembers (the position commits with the rows).
    """

    run_id: str
    asset: str
    partition: Optional[str] = None
    idempotency_id: str = ""
    code_version: Optional[str] = None
    writer: Optional[str] = None
    content: Optional[str] = None
    source: Optional[str] = None
    read: tuple[tuple[str, int], ...] = ()

    @property
    def root_run_id(self) -> str:
        """The run this write continues: the original run of a resumed re-execution."""
        return self.idempotency_id or self.run_id

    def user_metadata(self) -> str:
        """The JSON written as the commit's ``userMetadata``; it never contains ``$``.

        A MERGE is stamped through a session conf value, where Spark substitutes
        ``${...}`` (a key ``${env:HOME}`` came back as the home folder and the commit was
        not found by its stamp). ``$`` only occurs inside JSON strings here, so it is
        written as the JSON escape ``\\u0024``: Spark sees no ``${`` and parsing gives
        the original text back, byte for byte.

        Example:
            >>> CommitStamp("r1", "s/t").user_metadata()
            '{"assetlake": {"run_id": "r1", "root_run_id": "r1", "asset": "s/t", "partition": null}}'
            >>> print(CommitStamp("r1", "s/t", "${env:HOME}").user_metadata())
            {"assetlake": {"run_id": "r1", "root_run_id": "r1", "asset": "s/t", "partition": "\\u0024{env:HOME}"}}
            >>> json.loads(CommitStamp("r1", "s/t", "${env:HOME}").user_metadata())["assetlake"]["partition"]
            '${env:HOME}'
        """
        stamp = {"run_id": self.run_id, "root_run_id": self.root_run_id, "asset": self.asset, "partition": self.partition}
        if self.code_version:
            stamp["code_version"] = self.code_version
        if self.writer:
            stamp["writer"] = self.writer
        if self.content:
            stamp[CONTENT_FIELD] = self.content
        if self.source:
            stamp[SOURCE_FIELD] = self.source
        if self.read:
            stamp[READ_FIELD] = dict(self.read)
        text = json.dumps({STAMP_TAG: stamp})
        return text.replace("$", "\\u0024")

    def matches(self, user_metadata: Optional[str]) -> bool:
        """Whether a commit's ``userMetadata`` was written for this slice by this run or
        by an earlier attempt of the run it continues (same root run)."""
        stamp = stamp_in(user_metadata)
        if not stamp:
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


def stamp_in(user_metadata: Optional[str]) -> dict[str, Any]:
    """The fields of our stamp in a commit's ``userMetadata``; empty when the commit has
    none (no metadata, another writer's, or text that is not a JSON object).

    Example:
        >>> stamp_in(CommitStamp("r1", "s/t").user_metadata())["asset"], stamp_in('{"other": 1}'), stamp_in("x")
        ('s/t', {}, {})
    """
    try:
        metadata = json.loads(user_metadata or "{}")
    except ValueError:
        return {}
    stamp = metadata.get(STAMP_TAG) if isinstance(metadata, dict) else None
    return stamp if isinstance(stamp, dict) else {}


@dataclass(frozen=True)
class WriteTarget:
    """Where and how one slice is written.

    ``track``, ``close_deletes``, ``valid_from`` and ``late_insert`` only apply to history, ``merge`` to a merge (see
    :class:`~assetlake_dagster.spec.MaterializeSpec`). ``cluster_by`` is the table's declared
    clustering (``-- cluster_by``): a merge on a clustering key bounds its reads by key ranges. ``partitions`` are the keys of the
    slice for a partitioned table (one, or a backfill batch); empty for a whole table.
    ``comment`` (the ``-- description``), ``properties`` (``-- properties``) and ``cluster_by``
    are given to the table by its first commit (:mod:`~assetlake_dagster.writes.create`).
    ``compare_content``: a whole-table replace fingerprints its rows and commits nothing when
    the table holds them already (a Python asset's; :mod:`~assetlake_dagster.writes.content`).
    """

    uri: TableUri
    path: str
    strategy: WriteStrategy
    stamp: CommitStamp
    key: tuple[str, ...] = ()
    track: tuple[str, ...] = ()
    close_deletes: bool = False
    valid_from: Optional[str] = None
    late_insert: bool = False
    partitions: tuple[str, ...] = ()
    merge: MergeOptions = MergeOptions()
    cluster_by: tuple[str, ...] = ()
    comment: Optional[str] = None
    properties: tuple[tuple[str, str], ...] = ()
    #: A whole-table replace commits nothing when its rows are the table's (writes/content.py).
    compare_content: bool = False

    @classmethod
    def from_spec(
        cls, spec: MaterializeSpec, path: str, stamp: CommitStamp, partitions: Sequence[str] = ()
    ) -> "WriteTarget":
        """The write a ``MaterializeSpec`` asks for, at ``path`` under ``stamp``.

        Example:
            >>> spec = MaterializeSpec(TableUri("s", "t"), WriteStrategy.MERGE, key=("id",))
            >>> WriteTarget.from_spec(spec, "/lake/s/t", CommitStamp("r1", "s/t")).key
            ('id',)
        """
        return cls(
            uri=spec.uri,
            path=path,
            strategy=spec.strategy,
            stamp=stamp,
            key=spec.key,
            track=spec.track,
            close_deletes=spec.close_deletes,
            valid_from=spec.valid_from,
            late_insert=spec.late_insert,
            partitions=tuple(partitions),
            merge=spec.merge,
        )

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


#: Operations that carry the stamp of the write they follow without being that write: Delta's
#: auto compaction commits an ``OPTIMIZE`` right after a commit, in the same session settings.
NOT_A_WRITE = frozenset({"OPTIMIZE"})


def find_stamped_commit(spark: SparkSession, path: str, stamp: CommitStamp) -> Optional[dict]:
    """The newest history entry whose ``userMetadata`` matches ``stamp``, as a dict
    (:data:`NOT_A_WRITE` operations skipped).

    The keys are ``DESCRIBE HISTORY``'s: ``version``, ``operation``, ``operationMetrics``,
    ``userMetadata``. Read from the commit files themselves when this process sees the
    table's folder (:func:`reads_log_here`), else with ``DESCRIBE HISTORY``.
    """
    if reads_log_here(path):
        return _find_stamped_commit_in_log(path, stamp)
    entries = history_rows(
        spark, path, HISTORY_SEARCH_DEPTH, "version", "operation", "operationMetrics", "userMetadata"
    )
    for row in entries or ():  # newest first
        if row["operation"] not in NOT_A_WRITE and stamp.matches(row["userMetadata"]):
            return row.asDict(recursive=True)
    return None


def _find_stamped_commit_in_log(path: str, stamp: CommitStamp) -> Optional[dict]:
    try:
        log = delta_log.DeltaLog.open(path)
    except delta_log.DeltaTableMissingError:
        return None
    first = max(log.first_readable, log.latest_version - HISTORY_SEARCH_DEPTH + 1)
    for version in range(log.latest_version, first - 1, -1):  # newest first, usually the latest
        (commit,) = log.read_commits(version - 1, version)
        if commit.operation not in NOT_A_WRITE and stamp.matches(commit.user_metadata):
            return {
                "version": commit.version,
                "operation": commit.operation,
                "operationMetrics": dict(commit.operation_metrics),
                "userMetadata": commit.user_metadata,
            }
    return None


def no_commit(version: Optional[int]) -> WriteResult:
    """The result of a write that had nothing to change: no new version, no rows."""
    return WriteResult(committed=False, version=version, operation=None, rows_written=0)


def result_from_history(
    spark: SparkSession,
    target: WriteTarget,
    committed: bool,
    rows_key: tuple[str, ...],
    before: Optional[int] = None,
) -> WriteResult:
    """Build the :class:`WriteResult` of a write from its stamped history entry.

    Args:
        before: the table's version before the write, when Delta may skip a write that
            changes nothing (an empty ``replaceWhere`` over a partition with no rows):
            then the version is unchanged, no stamped entry exists, and this is
            :func:`no_commit`.
    """
    entry = find_stamped_commit(spark, target.path, target.stamp)
    if entry is None and before is not None and current_version(spark, target.path) == before:
        return no_commit(before)
    if entry is None:
        raise AssetlakeError(
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


def lock_file_path(path: str) -> Optional[str]:
    """The cross-process lock file of the local table at ``path``; ``None`` for a URL.

    It sits beside the table, never inside its folder: rebuilding a history table means
    deleting that folder, and a lock file deleted while held lets the next writer lock a
    fresh file while the holder still writes. A dot-name is never a table identifier, so
    it can neither clash with a table nor be taken for one.

    Example:
        >>> lock_file_path("/lake/s/t")
        '/lake/s/.t.assetlake.lock'
        >>> lock_file_path("s3://bucket/lake/s/t") is None
        True
    """
    if _URL.match(path):
        return None
    folder, table = os.path.split(os.path.normpath(path))
    return os.path.join(folder, f".{table}{LOCK_FILE_SUFFIX}")


_TABLE_LOCKS: dict[str, threading.Lock] = {}
_TABLE_LOCKS_GUARD = threading.Lock()


@contextmanager
def table_lock(spark: SparkSession, path: str) -> Iterator[None]:
    """Serialize writes to one table: this process's threads, and for a local lake also
    the processes of this machine (an exclusive ``flock``, released by the kernel even
    when the holder is killed).

    Delta's optimistic concurrency alone cannot make a check done before a command part
    of it (a SQL MERGE starts its transaction when it runs, on the table as it is then).
    An object-store lake gets the in-process lock only (a writer in another process
    is then covered by Delta's conflict detection alone). A Spark Connect server may not
    see this machine's disk: for it the schema folder is created only when the lake root
    exists here (the local warm engine), else the lock file is used once the schema
    folder exists locally.
    """
    key = os.path.normpath(path) if not _URL.match(path) else path
    with _TABLE_LOCKS_GUARD:
        lock = _TABLE_LOCKS.setdefault(key, threading.Lock())
    with lock:
        lock_file = lock_file_path(path)
        if lock_file is None or fcntl is None:
            yield
            return
        folder = os.path.dirname(lock_file)
        if not os.path.isdir(folder):
            # The lake root on this machine's disk means the server writes here too.
            if is_connect_session(spark) and not os.path.isdir(os.path.dirname(folder)):
                yield
                return
            os.makedirs(folder, exist_ok=True)
        # Read-only is enough for flock, and works on a file another user created.
        fd = os.open(lock_file, os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the flock


@contextmanager
def first_write_cleanup(spark: SparkSession, path: str) -> Iterator[None]:
    """Run a write that may create the table at ``path``; if it fails before the table's
    first commit, remove what it left there.

    Delta writes the data files, and ``_delta_log/_staged_commits``, before it commits. A
    first write whose SELECT failed mid-job (a division by zero under ANSI, a cast error)
    left that folder: Spark reads it as "no table", other readers (delta-rs) may not, and
    the orphan files stay. A write that finds no folder holds the table lock (no other
    writer of this machine starts on the folder meanwhile) and, on failure, removes the
    folder unless it holds a commit. A lost engine is left alone (its server may still be
    writing), and so is a lake on an object store (``path`` is a URL).

    A run terminated or interrupted meanwhile (Dagster's terminate raises
    ``DagsterExecutionInterruptedError``, Ctrl-C ``KeyboardInterrupt``: neither is an
    ``Exception``) stopped waiting, but the engine may still be writing: a Spark Connect
    server goes on with an operation whose client left. The write's operations (tagged) are
    interrupted first, and the folder is left as it is: no commit lands, and the files that
    were being added are never deleted under the engine (a later first write writes beside
    them; Delta reads only committed files, and ``VACUUM`` removes the others).

    Example:
        >>> with first_write_cleanup(spark, "/lake/s/t"):  # doctest: +SKIP
        ...     df.write.format("delta").save("/lake/s/t")
    """
    if _URL.match(path) or os.path.lexists(path):
        yield
        return
    with table_lock(spark, path):
        creating = not os.path.lexists(path)
        tag = f"assetlake-first-write-{uuid.uuid4().hex}"
        with suppress(Exception):  # a session without tags (a stand-in) is not interrupted
            spark.addTag(tag)
        try:
            yield
        except BaseException as exc:
            if not isinstance(exc, Exception):
                interrupt_tagged(spark, tag)
            elif creating:
                remove_uncommitted_table(path, exc)
            raise
        finally:
            with suppress(Exception):
                spark.removeTag(tag)


def interrupt_tagged(spark: SparkSession, tag: str) -> None:
    """Interrupt the engine's operations that carry ``tag`` (best effort: a lost engine or
    a closed session has none left to interrupt)."""
    with suppress(Exception):
        spark.interruptTag(tag)


def remove_uncommitted_table(path: str, exc: Optional[BaseException] = None) -> bool:
    """Remove the folder of a table that has no commit (a failed first write's leftovers).

    Anything in ``_delta_log`` beyond an empty ``_staged_commits`` (a commit, checkpoint,
    checksum, ``_last_checkpoint``, a staged commit) keeps the folder; so does a lost engine (``exc``). Returns
    whether the folder was removed.
    """
    from assetlake_dagster.spark.engine import is_engine_lost

    if exc is not None and is_engine_lost(exc):
        return False
    if os.path.islink(path) or not os.path.isdir(path):
        return False
    try:
        log = os.listdir(os.path.join(path, "_delta_log"))
        staged = os.listdir(os.path.join(path, "_delta_log", "_staged_commits")) if "_staged_commits" in log else []
    except FileNotFoundError:
        log, staged = [], []
    log = [n for n in log if n != "_staged_commits"] + staged
    if log:
        return False
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)
