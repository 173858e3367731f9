"""Reading a Delta table's ``_delta_log`` without Spark: its versions, new commits and schema.

The watch sensor (:mod:`assetlake_dagster.defs.watch`) calls this every tick for every external
table, so it lists the log folder once and parses only the commit files it is asked for.
The table may be on local disk or on an object store (``s3a://bucket/lake/s/t``): every
file is reached through :mod:`assetlake_dagster.lake.files` (``os`` locally, ``pyarrow.fs``
on a store), and an object store's missing prefix is a missing table, as a missing folder is.

The Delta protocol facts it relies on (``PROTOCOL.md`` of ``delta-io/delta``):

- The log of a table is the folder ``<table>/_delta_log``. The commit of version ``N`` is
  the file ``%020d.json`` (``N`` zero-padded to 20 digits): newline-delimited JSON, one
  action per line. A writer creates it atomically (put-if-absent), so a commit file that
  can be listed is complete, and versions are contiguous from 0.
- ``add`` and ``remove`` actions name one data file each; ``partitionValues`` maps every
  partition column to its value *as a string* (``null`` for NULL), whatever the column's
  type: a date is ``2024-01-31``, a timestamp ``2024-01-31 06:00:00`` or
  ``2024-01-31 06:00:00.123456`` (or ISO 8601 in UTC, ``2024-01-31T06:00:00Z``). A
  ``remove`` carries them only with ``extendedFileMetadata`` (Spark and delta-rs write it).
  ``dataChange`` is false when a commit only rearranges rows (``OPTIMIZE``, ``ZORDER``).
- ``commitInfo`` is optional provenance: ``timestamp`` (epoch milliseconds), ``operation``
  (``WRITE``, ``MERGE``, ``DELETE``...), ``userMetadata``. With In-Commit Timestamps
  enabled, its ``inCommitTimestamp`` is the commit's time.
- A checkpoint of version ``N`` (``%020d.checkpoint.parquet``; multi-part
  ``%020d.checkpoint.%010d.%010d.parquet``; V2 ``%020d.checkpoint.<uuid>.json|parquet``)
  holds the table's state as of ``N``. Log cleanup (``delta.logRetentionDuration``, 30
  days by default) may then delete the commit files up to ``N``: those versions still
  existed, but what they changed can no longer be read.
- A ``metaData`` action sets the table's schema (``schemaString``: Spark's StructType as
  JSON; a column's ``metadata.comment`` is its comment) and ``partitionColumns``. Version 0
  has one, and any commit that changes them (a schema evolution) writes a whole new one:
  the newest wins. A checkpoint holds the one in force at its version (a row whose
  ``metaData`` column is set; V2 checkpoints: an action of their top-level file).
- ``_last_checkpoint`` is a hint naming the latest checkpoint, written after it. We list
  the folder anyway, so it is only read when no checkpoint file is listed.
- Everything else in the folder is ignored: ``.crc`` checksums, log compactions
  (``%020d.%020d.compacted.json``), temporary files, ``_commits/`` (coordinated commits not
  yet backfilled into the log: not supported).

Example:
    >>> log = DeltaLog.open("/data/lake/landing/orders")  # doctest: +SKIP
    >>> log.latest_version  # doctest: +SKIP
    7
    >>> [(c.version, c.operation, c.added) for c in log.read_commits(after_version=6)]  # doctest: +SKIP
    [(7, 'WRITE', ({'order_date': '2024-01-05'},))]
    >>> [f["name"] for f in log.read_metadata().schema["fields"]]  # doctest: +SKIP
    ['order_id', 'amount', 'order_date']
"""

import datetime as dt
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, Optional

from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake.files import LOG_FOLDER, LakeFiles, LocalFiles, lake_files
LAST_CHECKPOINT_FILE = "_last_checkpoint"
_COMMIT_RE = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint(\.\d{10}\.\d{10}|\.[0-9A-Za-z-]+)?\.(parquet|json)$")
_MULTI_PART_RE = re.compile(r"^\d{20}\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
METADATA_ACTION = "metaData"

#: A data file's partition values: column -> value as written in the log (``None`` = NULL).
PartitionValues = Mapping[str, Optional[str]]


class DeltaLogError(AssetlakeError):
    """The Delta log of a table cannot answer.

    Attributes:
        table_path: the table's folder.
    """

    def __init__(self, message: str, *, table_path: str):
        super().__init__(message)
        self.table_path = table_path


class DeltaTableMissingError(DeltaLogError):
    """There is no Delta table at the path (no ``_delta_log``, or no commit in it yet)."""


class DeltaLogUnreadableError(DeltaLogError):
    """The log exists but cannot be read: permissions, a damaged file, a version missing
    that no checkpoint accounts for.

    Attributes:
        file: the file that failed, when one did.
    """

    def __init__(self, message: str, *, table_path: str, file: Optional[str] = None):
        super().__init__(message, table_path=table_path)
        self.file = file


class DeltaLogExpiredError(DeltaLogError):
    """Commits that were asked for are gone: log cleanup deleted their JSON files after a
    checkpoint, so the versions existed but what they changed cannot be read any more.

    Attributes:
        first_missing: the first version asked for that is gone.
        last_missing: the last one.
        first_readable: the first version after them whose commit can still be read.
        checkpoint_version: the latest checkpoint, which accounts for the missing versions.
    """

    def __init__(
        self,
        message: str,
        *,
        table_path: str,
        first_missing: int,
        last_missing: int,
        first_readable: int,
        checkpoint_version: int,
    ):
        super().__init__(message, table_path=table_path)
        self.first_missing = first_missing
        self.last_missing = last_missing
        self.first_readable = first_readable
        self.checkpoint_version = checkpoint_version


@dataclass(frozen=True)
class Commit:
    """What one Delta version changed, as far as its log entry says.

    Attributes:
        version: the table version this commit created.
        timestamp_ms: when (epoch milliseconds): ``commitInfo.inCommitTimestamp``, else
            ``commitInfo.timestamp``, else the commit file's modification time.
        operation: ``commitInfo.operation`` (``WRITE``, ``MERGE``...), ``UNKNOWN`` without one.
        added: the partition values of each file added with ``dataChange`` true (``{}`` for
            a file of an unpartitioned table).
        removed: the same for each file removed with ``dataChange`` true.
        user_metadata: ``commitInfo.userMetadata``, if any.
        operation_metrics: ``commitInfo.operationMetrics`` (values as Delta writes them:
            strings), as ``DESCRIBE HISTORY`` shows them.
        changed_metadata: the commit has a ``metaData`` action (a schema or property change,
            or the table's creation).

    Example:
        >>> c = Commit(3, 1704067200000, "WRITE", added=({"day": "2024-01-01"},))
        >>> c.timestamp.isoformat(), c.data_changed
        ('2024-01-01T00:00:00+00:00', True)
    """

    version: int
    timestamp_ms: int
    operation: str
    added: tuple[PartitionValues, ...] = ()
    removed: tuple[PartitionValues, ...] = ()
    user_metadata: Optional[str] = None
    operation_metrics: Mapping[str, str] = field(default_factory=dict, hash=False)
    changed_metadata: bool = False

    @property
    def timestamp(self) -> dt.datetime:
        """The commit time, in UTC."""
        return dt.datetime.fromtimestamp(self.timestamp_ms / 1000, tz=dt.timezone.utc)

    @property
    def data_changed(self) -> bool:
        """Whether rows changed: files added or removed other than by rearranging rows.

        ``OPTIMIZE``, property and schema changes (without a rewrite) change no rows.
        """
        return bool(self.added or self.removed)


@dataclass(frozen=True)
class TableMetadata:
    """A table's ``metaData`` action: its schema and partition columns.

    Attributes:
        version: the commit (or checkpoint) it was read from; the table may be newer, the
            schema has not changed since.
        schema: ``schemaString`` parsed: ``{"type": "struct", "fields": [...]}``, each
            field ``{"name", "type", "nullable", "metadata"}`` (Spark's StructType JSON).
        partition_columns: ``partitionColumns``, in order.
        file: the log file it was read from.
        configuration: the table's properties (``configuration``), e.g.
            ``{"delta.enableDeletionVectors": "true"}``.

    Example:
        >>> m = TableMetadata(0, {"type": "struct", "fields": []}, ("day",), "_delta_log/0.json")
        >>> m.partition_columns
        ('day',)
    """

    version: int
    schema: Mapping[str, Any]
    partition_columns: tuple[str, ...]
    file: str
    configuration: Mapping[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class DeltaLog:
    """One listing of a table's ``_delta_log``: which versions exist and which can be read.

    Build it with :meth:`open`; it lists the folder once and reads no commit until
    :meth:`read_commits` asks for some (or :meth:`read_metadata` for the schema).

    Attributes:
        table_path: the table's folder (or its URL on an object store).
        latest_version: the table's current version.
        first_readable: the first version from which every commit file up to the latest
            is present (earlier ones were cleaned up, or are missing).
        checkpoint_version: the latest checkpoint's version, if there is one.
        files: the storage the log is read from.
    """

    table_path: str
    latest_version: int
    first_readable: int
    checkpoint_version: Optional[int]
    _commit_files: Mapping[int, str]
    #: The names of the files of version ``checkpoint_version`` that are checkpoints.
    _checkpoint_names: tuple[str, ...] = ()
    #: Each commit file's modification time, when the listing carried it (a store's does).
    _commit_mtimes: Mapping[int, int] = field(default_factory=dict, compare=False, repr=False)
    files: LakeFiles = field(default_factory=LocalFiles, compare=False, repr=False)

    @classmethod
    def open(cls, table_path: str, files: Optional[LakeFiles] = None) -> "DeltaLog":
        """List ``<table_path>/_delta_log``.

        Args:
            table_path: the table's folder, or its URL (``s3a://bucket/lake/s/t``).
            files: the storage to read it from; ``None``: the one ``table_path`` names (an
                S3 URL then uses the standard AWS variables). A lake passes its own
                (:attr:`Lake.files <assetlake_dagster.lake.root.Lake.files>`).

        Raises:
            DeltaTableMissingError: no ``_delta_log`` folder (on a store: no object under
                its prefix), or no commit in it yet.
            DeltaLogUnreadableError: the folder cannot be listed.
            ConfigError: a URL whose store cannot be read without Spark.

        Example:
            >>> DeltaLog.open("/no/such/table")  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            assetlake_dagster.lake.delta_log.DeltaTableMissingError: no Delta table at /no/such/table: ...
        """
        files = files if files is not None else lake_files(table_path)
        log_dir = files.join(table_path, LOG_FOLDER)
        try:
            entries = files.list_folder(log_dir)
        except FileNotFoundError:
            # Object stores have no folders: a prefix without objects is a missing folder.
            where = f"{log_dir} does not exist" if files.is_local else f"there is no object under {log_dir}/"
            raise DeltaTableMissingError(
                f"no Delta table at {table_path}: {where}. Write the table first (or fix its name or the lake root).",
                table_path=table_path,
            ) from None
        except Exception as exc:
            if not _is_io_error(exc):
                raise
            fix = (
                "Give this process read access to the folder."
                if files.is_local
                else "Check the bucket's name, the endpoint (AWS_ENDPOINT_URL) and that the credentials may list it."
            )
            raise DeltaLogUnreadableError(
                f"cannot list the Delta log {log_dir}: {_reason(exc)}. {fix}",
                table_path=table_path,
                file=log_dir,
            ) from None
        commits: dict[int, str] = {}
        mtimes: dict[int, int] = {}
        checkpoints: dict[int, list[str]] = {}
        names: set[str] = set()
        for entry in entries:
            name = entry.name
            names.add(name)
            if match := _COMMIT_RE.match(name):
                version = int(match.group(1))
                commits[version] = files.join(log_dir, name)
                if entry.mtime_ms is not None:
                    mtimes[version] = entry.mtime_ms
            elif match := _CHECKPOINT_RE.match(name):
                checkpoints.setdefault(int(match.group(1)), []).append(name)
        checkpoint = max(checkpoints) if checkpoints else None
        if checkpoint is None and LAST_CHECKPOINT_FILE in names:
            checkpoint = _last_checkpoint_version(files, files.join(log_dir, LAST_CHECKPOINT_FILE))
        if not commits and checkpoint is None:
            raise DeltaTableMissingError(
                f"no Delta table at {table_path}: {log_dir} holds no commit yet. "
                "Write the table first (a writer may be creating it right now).",
                table_path=table_path,
            )
        latest = max([*commits, *([checkpoint] if checkpoint is not None else [])])
        first_readable = latest + 1
        while first_readable - 1 in commits:
            first_readable -= 1
        checkpoint_names = tuple(sorted(checkpoints.get(checkpoint, ()))) if checkpoint is not None else ()
        return cls(table_path, latest, first_readable, checkpoint, commits, checkpoint_names, mtimes, files)

    def read_commits(self, after_version: int, up_to: Optional[int] = None) -> list["Commit"]:
        """The commits of versions ``after_version + 1`` to ``up_to`` (default: the latest).

        Only those commit files are opened. ``after_version`` at or past ``up_to`` gives
        ``[]``: compare it with :attr:`latest_version` to notice a table that went back
        (was re-created).

        Raises:
            DeltaLogExpiredError: some of them were removed by log cleanup after a
                checkpoint; ``first_readable`` says where reading can resume.
            DeltaLogUnreadableError: a commit file cannot be read or is not valid JSON, or
                a version is missing that no checkpoint accounts for.
            ValueError: ``up_to`` is past the latest version.

        Example:
            >>> log = DeltaLog.open("/data/lake/landing/orders")  # doctest: +SKIP
            >>> [c.version for c in log.read_commits(after_version=4)]  # doctest: +SKIP
            [5, 6, 7]
        """
        last = self.latest_version if up_to is None else up_to
        if last > self.latest_version:
            raise ValueError(f"up_to={last} is past the latest version {self.latest_version} of {self.table_path}")
        wanted = range(max(after_version + 1, 0), last + 1)
        missing = [v for v in wanted if v not in self._commit_files]
        if missing:
            self._raise_missing(missing)
        return [self._read(version) for version in wanted]

    def last_data_version(self) -> int:
        """The newest version whose commit changed rows (:attr:`Commit.data_changed`).

        A metadata-only commit (an edited description or property, ``OPTIMIZE``) is not a
        new version of the table's data: Dagster's data version of the table stays at the
        commit before it. Commits are read newest first, usually just the latest. When no
        readable commit changed rows (an empty table, or only metadata since the oldest
        readable commit), the oldest readable version (the latest, if none is readable).

        Example:
            >>> log = DeltaLog.open("/data/lake/landing/orders")  # doctest: +SKIP
            >>> log.latest_version, log.last_data_version()  # version 8 set a property  # doctest: +SKIP
            (8, 7)
        """
        for version in range(self.latest_version, self.first_readable - 1, -1):
            if self._read(version).data_changed:
                return version
        return self.first_readable if self.first_readable <= self.latest_version else self.latest_version

    def read_metadata(self) -> TableMetadata:
        """The table's current ``metaData`` action: its schema and partition columns.

        The commit files are searched newest first down to the latest checkpoint (a schema
        change writes a whole new action, so the first one found is in force), then the
        checkpoint, which holds the one in force at its version.

        Raises:
            DeltaLogUnreadableError: a file cannot be read or is damaged, a commit after
                the checkpoint is missing, or no readable file holds a ``metaData`` action.

        Example:
            >>> meta = DeltaLog.open("/data/lake/landing/orders").read_metadata()  # doctest: +SKIP
            >>> [f["name"] for f in meta.schema["fields"]], meta.partition_columns  # doctest: +SKIP
            (['order_id', 'amount', 'order_date'], ('order_date',))
        """
        checkpoint = self.checkpoint_version
        stop = 0 if checkpoint is None else checkpoint + 1
        missing = [v for v in range(stop, self.latest_version + 1) if v not in self._commit_files]
        if missing:
            self._raise_missing(missing)  # all after the checkpoint: unreadable, not expired
        for version in range(self.latest_version, stop - 1, -1):
            path = self._commit_files[version]
            action = _metadata_action(path, self._lines(version)[0], self.table_path)
            if action is not None:
                return _table_metadata(version, action, path, self.table_path)
        if checkpoint is not None:
            for path in self._checkpoint_files():
                action = self._checkpoint_metadata_action(path)
                if action is not None:
                    return _table_metadata(checkpoint, action, path, self.table_path)
        searched = f"versions {_span(stop, self.latest_version)}" if stop <= self.latest_version else "no commit"
        raise DeltaLogUnreadableError(
            f"the Delta log of {self.table_path} holds no metaData action (its schema) in "
            f"{searched}{'' if checkpoint is None else f' nor in checkpoint {checkpoint}'}: the log "
            "is damaged or was not written by a Delta writer. Restore it from a backup, or re-create the table.",
            table_path=self.table_path,
        )

    def added_file_statistics(self) -> Optional[list[Optional[str]]]:
        """The ``stats`` (JSON text, ``None`` when a file has none) of every file added in the
        latest checkpoint and in the commits after it, removed ones included; ``None`` when the
        checkpoint holds only parsed statistics or cannot be read this way (a V2 checkpoint).

        A superset of the live files: a bound over these statistics bounds the table.
        """
        stats: list[Optional[str]] = []
        if self.checkpoint_version is not None:
            import pyarrow as pa

            for path in self._checkpoint_files():
                if path.endswith(".json"):
                    return None  # V2: its file actions live in sidecars
                try:
                    with self.files.parquet_file(path) as file:
                        if "add" not in file.schema_arrow.names:
                            continue
                        adds = file.read(columns=["add"]).column("add").drop_null()
                        if "stats" not in adds.type.names:
                            return None  # parsed statistics only (writeStatsAsJson=false)
                        stats.extend(adds.combine_chunks().field("stats").to_pylist())
                except (OSError, pa.ArrowException) as exc:
                    raise _unreadable(path, exc, self.table_path) from None
        start = -1 if self.checkpoint_version is None else self.checkpoint_version
        for version in range(start + 1, self.latest_version + 1):
            lines, _ = self._lines(version)
            for number, line in enumerate(lines, 1):
                if '"add"' not in line:
                    continue
                try:
                    add = json.loads(line).get("add")
                except ValueError as exc:
                    raise _damaged(self._commit_files[version], number, exc, self.table_path) from None
                if isinstance(add, dict):
                    stats.append(add.get("stats") if isinstance(add.get("stats"), str) else None)
        return stats

    def _checkpoint_files(self) -> list[str]:
        # One complete checkpoint of the version: a single file (classic or V2) or every part
        # of a multi-part one (a writer that died may have left some parts of another).
        log_dir = self.files.join(self.table_path, LOG_FOLDER)
        parts: dict[int, dict[int, str]] = {}
        for name in self._checkpoint_names:
            if match := _MULTI_PART_RE.match(name):
                parts.setdefault(int(match.group(2)), {})[int(match.group(1))] = name
            else:
                return [self.files.join(log_dir, name)]
        for total, names in parts.items():
            if set(names) == set(range(1, total + 1)):
                return [self.files.join(log_dir, names[i]) for i in sorted(names)]
        raise DeltaLogUnreadableError(
            f"the checkpoint {self.checkpoint_version} of {self.table_path} cannot be read: "
            + ("some of its parts are missing" if parts else "no file of it is in the log (_last_checkpoint names it)")
            + ". Restore the log from a backup, or re-create the table.",
            table_path=self.table_path,
        )

    def _checkpoint_metadata_action(self, path: str) -> Optional[dict[str, Any]]:
        if path.endswith(".json"):  # a V2 checkpoint's top-level file: actions, one per line
            try:
                lines = self._read_lines(path)
            except FileNotFoundError as exc:
                raise _unreadable(path, exc, self.table_path) from None
            return _metadata_action(path, lines, self.table_path)
        # Imported here: only a table whose metaData is older than its checkpoint needs it.
        import pyarrow as pa

        try:
            with self.files.parquet_file(path) as file:
                if METADATA_ACTION not in file.schema_arrow.names:
                    return None
                rows = file.read(columns=[METADATA_ACTION]).column(METADATA_ACTION).drop_null().to_pylist()
        except (OSError, pa.ArrowException) as exc:
            raise _unreadable(path, exc, self.table_path) from None
        return rows[-1] if rows else None

    def _lines(self, version: int) -> tuple[list[str], int]:
        """The lines of a commit file and its modification time (epoch milliseconds)."""
        path = self._commit_files[version]
        try:
            lines = self._read_lines(path)
            listed = self._commit_mtimes.get(version)
            return lines, listed if listed is not None else self.files.mtime_ms(path)
        except FileNotFoundError:
            # Deleted between the listing and now: log cleanup ran meanwhile.
            self._raise_missing([version])
        except OSError as exc:
            raise _unreadable(path, exc, self.table_path) from None

    def _read_lines(self, path: str) -> list[str]:
        """A log file's lines (``FileNotFoundError`` passes; other failures are unreadable)."""
        try:
            data = self.files.read_bytes(path)
            # Decoded as open(path, encoding="utf-8") reads: universal newlines, and no
            # split at U+2028 and the like, which a JSON string may hold as they are.
            return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").readlines()
        except FileNotFoundError:
            raise
        except Exception as exc:
            if isinstance(exc, UnicodeDecodeError) or _is_io_error(exc):
                raise _unreadable(path, exc, self.table_path) from None
            raise

    def _raise_missing(self, missing: list[int]) -> NoReturn:
        checkpoint = self.checkpoint_version
        if checkpoint is None or max(missing) > checkpoint:
            gap = next(v for v in missing if checkpoint is None or v > checkpoint)
            raise DeltaLogUnreadableError(
                f"the Delta log of {self.table_path} has no commit file for version {gap} "
                f"({gap:020d}.json) and no checkpoint covers it: the log is damaged. "
                "Restore the file from a backup, or re-create the table.",
                table_path=self.table_path,
                file=self.files.join(self.table_path, LOG_FOLDER, f"{gap:020d}.json"),
            )
        first, last = min(missing), max(missing)
        raise DeltaLogExpiredError(
            f"the commits {_span(first, last)} of {self.table_path} are no longer in its log: "
            f"log cleanup removed their JSON files after checkpoint {checkpoint} "
            "(delta.logRetentionDuration), so what they changed cannot be read; "
            f"commits can be read from version {last + 1} on.",
            table_path=self.table_path,
            first_missing=first,
            last_missing=last,
            first_readable=last + 1,
            checkpoint_version=checkpoint,
        )

    def _read(self, version: int) -> "Commit":
        lines, mtime_ms = self._lines(version)
        return _parse_commit(version, self._commit_files[version], lines, mtime_ms, self.table_path)


def latest_version(table_path: str) -> int:
    """The current version of the Delta table at ``table_path``.

    Raises:
        DeltaTableMissingError, DeltaLogUnreadableError: see :meth:`DeltaLog.open`.

    Example:
        >>> latest_version("/data/lake/landing/orders")  # doctest: +SKIP
        7
    """
    return DeltaLog.open(table_path).latest_version


def read_commits(table_path: str, after_version: int, up_to: Optional[int] = None) -> list[Commit]:
    """The commits of the table at ``table_path`` after ``after_version``, up to ``up_to``.

    Raises:
        DeltaTableMissingError, DeltaLogUnreadableError, DeltaLogExpiredError: see
        :meth:`DeltaLog.open` and :meth:`DeltaLog.read_commits`.

    Example:
        >>> [(c.version, c.added) for c in read_commits("/data/lake/landing/orders", 6)]  # doctest: +SKIP
        [(7, ({'order_date': '2024-01-05'},))]
    """
    return DeltaLog.open(table_path).read_commits(after_version, up_to)


def read_metadata(table_path: str) -> TableMetadata:
    """The current ``metaData`` action (schema, partition columns) of the table at ``table_path``.

    Raises:
        DeltaTableMissingError, DeltaLogUnreadableError: see :meth:`DeltaLog.open` and
        :meth:`DeltaLog.read_metadata`.

    Example:
        >>> read_metadata("/data/lake/landing/orders").partition_columns  # doctest: +SKIP
        ('order_date',)
    """
    return DeltaLog.open(table_path).read_metadata()


def _parse_commit(version: int, path: str, lines: list[str], mtime_ms: int, table_path: str) -> Commit:
    info: dict[str, Any] = {}
    added: list[PartitionValues] = []
    removed: list[PartitionValues] = []
    changed_metadata = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            action = json.loads(line)
            if not isinstance(action, dict):
                raise ValueError("an action must be a JSON object")
            if "commitInfo" in action:
                info = _object(action["commitInfo"], "commitInfo")
            changed_metadata = changed_metadata or "metaData" in action
            for kind, files in (("add", added), ("remove", removed)):
                if kind in action:
                    entry = _object(action[kind], kind)
                    if entry.get("dataChange", True) is not False:
                        files.append(_partition_values(entry.get("partitionValues")))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise _damaged(path, number, exc, table_path) from None
    timestamp = info.get("inCommitTimestamp", info.get("timestamp"))
    user_metadata = info.get("userMetadata")
    metrics = info.get("operationMetrics")
    return Commit(
        version=version,
        timestamp_ms=int(timestamp) if isinstance(timestamp, (int, float)) else mtime_ms,
        operation=str(info.get("operation") or "UNKNOWN"),
        added=tuple(added),
        removed=tuple(removed),
        user_metadata=user_metadata if isinstance(user_metadata, str) else None,
        operation_metrics={str(k): str(v) for k, v in metrics.items()} if isinstance(metrics, dict) else {},
        changed_metadata=changed_metadata,
    )


def _metadata_action(path: str, lines: list[str], table_path: str) -> Optional[dict[str, Any]]:
    found = None
    for number, line in enumerate(lines, start=1):
        # Only the lines naming it are parsed: a commit of a big table has thousands of add
        # actions with statistics, and a metaData is rare.
        if f'"{METADATA_ACTION}"' not in line:
            continue
        try:
            action = json.loads(line)
            if not isinstance(action, dict):
                raise ValueError("an action must be a JSON object")
            if METADATA_ACTION in action:
                found = _object(action[METADATA_ACTION], METADATA_ACTION)
        except ValueError as exc:
            raise _damaged(path, number, exc, table_path) from None
    return found


def _table_metadata(version: int, action: Mapping[str, Any], path: str, table_path: str) -> TableMetadata:
    try:
        schema = json.loads(_string(action.get("schemaString"), "schemaString"))
        if not isinstance(schema, dict) or schema.get("type") != "struct" or not isinstance(schema.get("fields"), list):
            raise ValueError("'schemaString' must be a JSON struct type with a list of fields")
        partition_columns = action.get("partitionColumns") or []
        if not isinstance(partition_columns, list) or not all(isinstance(c, str) for c in partition_columns):
            raise ValueError("'partitionColumns' must be a list of column names")
    except ValueError as exc:
        raise DeltaLogUnreadableError(
            f"{path}: the metaData action of version {version} is not valid ({exc}). The log is damaged: "
            "restore it from a backup, or re-create the table.",
            table_path=table_path,
            file=path,
        ) from None
    return TableMetadata(version, schema, tuple(partition_columns), path, _configuration(action.get("configuration")))


def _configuration(value: Any) -> dict[str, str]:
    """A metaData action's ``configuration``: a JSON object in a commit, a list of
    ``(key, value)`` pairs as pyarrow reads a checkpoint's map; anything else reads as none."""
    pairs = value.items() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    found = {}
    for pair in pairs:
        if isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(x, str) for x in pair):
            found[pair[0]] = pair[1]
    return found


def _string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"'{name}' must be a string")
    return value


def _damaged(path: str, number: int, exc: ValueError, table_path: str) -> DeltaLogUnreadableError:
    return DeltaLogUnreadableError(
        f"{path}:{number}: not a valid Delta action ({exc}). The commit file is damaged: "
        "restore it from a backup, or re-create the table.",
        table_path=table_path,
        file=path,
    )


def _unreadable(path: str, exc: Exception, table_path: str) -> DeltaLogUnreadableError:
    return DeltaLogUnreadableError(
        f"cannot read {path}: {_reason(exc)}. Give this process read access to the table's "
        "_delta_log, or restore the file if it is damaged.",
        table_path=table_path,
        file=path,
    )


def _reason(exc: Exception) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _is_io_error(exc: Exception) -> bool:
    """An ``OSError``, or another error of a store's SDK (PyArrow's I/O errors are OSErrors;
    the rest, such as a bad bucket name, derive from ``ArrowException``)."""
    import pyarrow as pa

    return isinstance(exc, (OSError, pa.ArrowException))


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"'{name}' must be a JSON object")
    return value


def _partition_values(value: Any) -> PartitionValues:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in value.items()
    ):
        raise ValueError("'partitionValues' must map column names to strings or null")
    return value


def _last_checkpoint_version(files: LakeFiles, path: str) -> Optional[int]:
    # Only a hint: unreadable or malformed means "no checkpoint known", never an error.
    try:
        version = json.loads(files.read_bytes(path)).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, int) and version >= 0 else None


def _span(first: int, last: int) -> str:
    return f"{first}" if first == last else f"{first}..{last}"
