"""How a SQL asset's run decides what to do: skip, because nothing it reads changed, or run.

A run is skipped, before any Spark session, when everything that decides its rows equals
what the asset's last materialization (of each partition of the run) recorded under
:data:`INPUTS_KEY`: the file's code version, the Delta version of every table it reads (its
upstreams and its ``relationships`` tests' tables), its argument values and its data tests.
The table itself must also hold those rows still: no commit that changed rows (of the run's
partitions) since the version that materialization recorded. Everything is read from the
Dagster instance and the tables' Delta logs (:class:`~assetlake_dagster.lake.delta_log.DeltaLog`),
so a skipped run starts no Spark job and commits nothing; it records a materialization that
says so, with the same data version as before (downstream assets that follow data versions
are not woken), and carries its data tests' last results.

A run is never skipped (the reason goes to the run's log) when its SQL is not deterministic
(:data:`NON_DETERMINISTIC`: ``current_timestamp()``, ``rand()``, ``uuid()`` …), when a table it
reads is not in the lake as a Delta table (another catalog's, a table function's such as
``read_files(...)``), when the run carries the tag ``assetlake/force``
(``assetlake backfill --force`` sets it) or its process has ``ASSETLAKE_FORCE=1``, or when
no earlier materialization recorded its inputs.

Example:
    >>> inputs = RunInputs("3f2a", {"delta://raw/orders": 4}, {}, "")
    >>> inputs.difference(RunInputs("3f2a", {"delta://raw/orders": 5}, {}, ""))
    'delta://raw/orders moved from version 4 to 5'
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import dagster as dg

from assetlake_dagster.defs.checks import check_events, selected_tests
from assetlake_dagster.spec import TestOutcome
from assetlake_dagster.defs.dagster_internals import DATA_VERSION_TAG, CheckExecutionStatus, PartitionKeyFilter
from assetlake_dagster.run.defer import sql_asset_reads
from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake.delta_log import DeltaLog
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.run.materialization_metadata import ROW_CHANGES_KEY, SCHEMA_DIFF_KEY
from assetlake_dagster.writes.layout import LAYOUT_CHANGES_KEY
from assetlake_dagster.writes.orphans import ORPHAN_COMMITS_KEY
from assetlake_dagster.spec import PARTITION_COLUMN, UPSTREAM_VERSIONS_KEY, SqlAssetSpec, TableUri, WriteStrategy

#: The run tag that makes a run do its work even when nothing it reads changed.
FORCE_TAG = "assetlake/force"
#: The environment variable that does the same for every run of a process
#: (``ASSETLAKE_FORCE=1 dagster asset materialize …``).
FORCE_ENV = "ASSETLAKE_FORCE"
#: Materialization metadata: what the run read (see :class:`RunInputs`).
INPUTS_KEY = "assetlake/inputs"
#: Materialization metadata of a skipped run: why it did nothing.
SKIPPED_KEY = "assetlake/skipped"
#: The most commits of the table read to tell whether its rows changed since a version.
MAX_COMMITS_READ = 100

#: sqlglot expression classes (by name) of functions whose result changes from run to run.
_NON_DETERMINISTIC_CLASSES = (
    "CurrentTimestamp", "CurrentDate", "CurrentTime", "CurrentDatetime", "Localtimestamp",
    "CurrentUser", "CurrentTimezone", "Rand", "Randn", "Uuid", "Shuffle",
)
#: Functions sqlglot does not model, by name (lower case), whose result changes from run to run.
NON_DETERMINISTIC = frozenset({
    "now", "current_timestamp", "current_date", "curdate", "localtimestamp", "current_user", "user",
    "session_user", "current_timezone", "rand", "randn", "random", "uuid", "shuffle",
    "monotonically_increasing_id", "spark_partition_id", "input_file_name", "input_file_block_start",
    "input_file_block_length", "reflect", "java_method", "try_reflect",
})
#: Metadata of the last materialization that a skipped run does not repeat (it did not write).
_NOT_CARRIED = (
    "delta/operation_metrics", "assetlake/rows_written", ORPHAN_COMMITS_KEY, LAYOUT_CHANGES_KEY,
    SCHEMA_DIFF_KEY, ROW_CHANGES_KEY, "dagster/partition_row_count",
)


@dataclass(frozen=True)
class RunInputs:
    """What decides a SQL asset's rows, as a run finds it before reading anything.

    Attributes:
        code_version: the file's code version.
        tables: each table the run reads (``delta://schema/table``) -> its Delta version.
        arguments: the run's argument values, as text.
        tests: a fingerprint of the file's data tests (a test file's contents included).
    """

    code_version: str
    tables: Mapping[str, int]
    arguments: Mapping[str, str]
    tests: str

    def to_json(self) -> dict[str, Any]:
        return {
            "code_version": self.code_version,
            "tables": dict(sorted(self.tables.items())),
            "arguments": dict(sorted(self.arguments.items())),
            "tests": self.tests,
        }

    @classmethod
    def from_json(cls, value: Any) -> Optional["RunInputs"]:
        """The inputs a materialization recorded; ``None`` for anything else."""
        if not isinstance(value, Mapping):
            return None
        try:
            return cls(
                str(value["code_version"]),
                {str(k): int(v) for k, v in value["tables"].items()},
                {str(k): str(v) for k, v in value["arguments"].items()},
                str(value["tests"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def difference(self, now: "RunInputs") -> Optional[str]:
        """What changed from these (recorded) inputs to ``now``, in words; ``None``: nothing."""
        if self.code_version != now.code_version:
            return f"the file changed (code version {self.code_version[:12]} -> {now.code_version[:12]})"
        for table in sorted({*self.tables, *now.tables}):
            before, after = self.tables.get(table), now.tables.get(table)
            if before is None or after is None:
                return f"it reads {table} {'now' if before is None else 'no more'}"
            if before != after:
                return f"{table} moved from version {before} to {after}"
        if self.arguments != now.arguments:
            return f"its arguments changed ({_shown(self.arguments)} -> {_shown(now.arguments)})"
        if self.tests != now.tests:
            return "its data tests changed"
        return None

    def same_but_versions(self, now: "RunInputs") -> bool:
        """Whether only the versions of the tables read differ from ``now`` (no table
        read newly or no more, none older now)."""
        return (
            self.code_version == now.code_version
            and self.arguments == now.arguments
            and self.tests == now.tests
            and self.tables.keys() == now.tables.keys()
            and all(now.tables[t] >= v for t, v in self.tables.items())
        )

    def summary(self) -> str:
        """``staging.orders@4, raw.customers@2`` (or ``no tables``)."""
        return ", ".join(f"{t.removeprefix('delta://').replace('/', '.')}@{v}" for t, v in sorted(self.tables.items())) or "no tables"


@dataclass(frozen=True)
class Run:
    """Do the work: ``reason`` says why it cannot be skipped; ``inputs`` are recorded (when known).

    ``changes_since``: the inputs of the last run, when only the versions of tables it read
    moved since and the table still holds that run's rows, so that the run may read only
    what changed in them (:mod:`~assetlake_dagster.run.change_feed`).
    """

    reason: str
    inputs: Optional[RunInputs] = None
    changes_since: Optional[RunInputs] = None


@dataclass(frozen=True)
class Skip:
    """Nothing the run reads changed since ``version`` of the table (its rows are there)."""

    inputs: RunInputs
    version: int
    data_version: str
    since_run: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    outcomes: Sequence[TestOutcome] = ()

    def message(self, table: TableUri) -> str:
        return (
            f"{table}: inputs unchanged since version {self.version} (run {self.since_run[:8]}; "
            f"{self.inputs.summary()}): skipped, no Spark work and no commit. "
            f"Tag the run {FORCE_TAG}=true to run it anyway."
        )


def decide(
    context: dg.AssetExecutionContext, spec: SqlAssetSpec, lake: Lake, args: Mapping[str, Any], key: dg.AssetKey
) -> Union[Run, Skip]:
    """:func:`decide_run` for the run of ``context``, with its reason to run in the log.

    Deciding is an optimisation: when it fails, the run does its work (and says why).
    """
    partitions = list(context.partition_keys) if spec.partitions else []
    try:
        decision = decide_run(context, spec, lake, args, partitions, key)
    except Exception as exc:  # noqa: BLE001 - never the reason a run fails
        decision = Run(f"its inputs could not be compared ({type(exc).__name__}: {exc})")
    if isinstance(decision, Run):
        context.log.info(f"{spec.uri}: runs, {decision.reason}.")
    return decision


def decide_run(
    context: dg.AssetExecutionContext,
    spec: SqlAssetSpec,
    lake: Lake,
    args: Mapping[str, Any],
    partitions: Sequence[str],
    key: dg.AssetKey,
) -> Union[Run, Skip]:
    """Whether the run of ``spec`` (for ``partitions``, or the whole table) can be skipped.

    Reads no table through Spark: the instance's records and the Delta logs only.
    """
    if spec.materialize.strategy is WriteStrategy.MANUAL:
        return Run("a manual file runs its own statements every time")
    called = non_deterministic_call(spec)
    if called:
        return Run(f"its SQL calls {called}, whose result differs from run to run")
    elsewhere = reads_outside_the_lake(spec)
    if elsewhere:
        return Run(f"it reads {elsewhere}, whose versions are not known here")
    inputs, problem = current_inputs(spec, lake, args)
    if inputs is None:
        return Run(problem or "its inputs cannot be read")
    forced = _forced(context.run.tags)
    if forced:
        return Run(forced, inputs)
    records = _latest_materializations(context.instance, key, partitions)
    missing = [p or "the table" for p, record in records.items() if record is None]
    if missing:
        return Run(f"no earlier materialization of {_few(missing)} recorded its inputs", inputs)
    recorded = {p: _recorded(record) for p, record in records.items()}
    for partition, (before, _, _) in recorded.items():
        if before is None:
            return Run(f"the last materialization{_of(partition)} recorded no inputs", inputs)
        changed = before.difference(inputs)
        if changed:
            reason = f"{changed} since the last materialization{_of(partition)}"
            return Run(reason, inputs, _changes_since(lake, spec.uri, before, inputs, recorded[partition][1], partitions))
    versions = {v for _, v, _ in recorded.values()}
    data_versions = {d for _, _, d in recorded.values()}
    if None in versions or None in data_versions or len(data_versions) > 1:
        return Run("the partitions' last materializations differ in version", inputs)
    version = min(versions)
    moved = _table_changed_since(lake, spec.uri, version, partitions)
    if moved:
        return Run(moved, inputs)
    outcomes, problem = _carried_outcomes(context, spec, key, partitions)
    if problem:
        return Run(problem, inputs)
    record = next(iter(records.values()))
    return Skip(
        inputs=inputs,
        version=version,
        data_version=data_versions.pop(),
        since_run=record.event_log_entry.run_id,
        metadata=_carried_metadata(record),
        outcomes=outcomes,
    )


def _changes_since(
    lake: Lake, uri: TableUri, before: RunInputs, now: RunInputs, version: Optional[int], partitions: Sequence[str]
) -> Optional[RunInputs]:
    """``before`` when the run may read only what changed since it: the whole table's last
    run, the same code, arguments, tests and tables, and the table still at its rows."""
    if partitions or version is None or not before.same_but_versions(now):
        return None
    return before if _table_changed_since(lake, uri, version, partitions) is None else None


def skipped_run_events(
    context: dg.AssetExecutionContext, spec: SqlAssetSpec, key: dg.AssetKey, output_name: str, skip: Skip
) -> Iterator[Any]:
    """The events of a skipped run: the output (nothing to write, the same data version) and
    the data tests' last results (same rows, same results)."""
    message = skip.message(spec.uri)
    context.log.info(message)
    metadata = {
        **skip.metadata,
        "delta/version": dg.MetadataValue.int(skip.version),
        "delta/committed": False,
        "delta/operation": "none (inputs unchanged)",
        SKIPPED_KEY: message,
        INPUTS_KEY: dg.MetadataValue.json(skip.inputs.to_json()),
        UPSTREAM_VERSIONS_KEY: dg.MetadataValue.json(dict(skip.inputs.tables)),
    }
    yield dg.Output(None, output_name=output_name, metadata=metadata, data_version=dg.DataVersion(skip.data_version))
    yield from check_events(context, key, list(skip.outcomes))


def non_deterministic_call(spec: SqlAssetSpec) -> Optional[str]:
    """The first call in the file's SQL whose result differs from run to run (``rand()``), else ``None``.

    Example:
        >>> non_deterministic_call(spec)  # doctest: +SKIP
        'current_timestamp()'
    """
    from sqlglot import exp

    trees = _statement_trees(_statements(spec))
    if trees is None:
        return "a statement sqlglot cannot read (so its functions are unknown)"
    classes = tuple(getattr(exp, name) for name in _NON_DETERMINISTIC_CLASSES if hasattr(exp, name))
    for tree in trees:
        for node in tree.find_all(exp.Func):
            if isinstance(node, classes):
                return f"{node.sql_name().lower()}()"
            if isinstance(node, exp.Anonymous) and node.name.lower() in NON_DETERMINISTIC:
                return f"{node.name.lower()}()"
    return None


def _statements(spec: SqlAssetSpec) -> tuple[str, ...]:
    """The SQL of the file's setup statements and its SELECT, in order."""
    return tuple(s.sql for s in spec.setup) + ((spec.select.sql,) if spec.select else ())


@functools.lru_cache(maxsize=64)
def _statement_trees(statements: tuple[str, ...]) -> Optional[tuple[Any, ...]]:
    """The statements parsed once for both questions asked of them; ``None`` when sqlglot
    cannot read one. (Read only: the trees are shared.)"""
    # sqlglot loads when a run decides, not with the definitions (the IO manager imports this).
    import sqlglot

    trees = []
    for sql in statements:
        try:
            trees.extend(tree for tree in sqlglot.parse(sql, read="spark") if tree is not None)
        except sqlglot.errors.SqlglotError:
            return None
    return tuple(trees)


#: Table functions that read nothing but their arguments.
_PURE_TABLE_FUNCTIONS = frozenset({"range", "explode", "explode_outer", "inline", "inline_outer", "posexplode", "stack"})


def reads_outside_the_lake(spec: SqlAssetSpec) -> Optional[str]:
    """What the file's SQL reads besides the lake's Delta tables (a table of another catalog,
    a table function such as ``read_files(...)``), in words; ``None`` when nothing.

    Example:
        >>> reads_outside_the_lake(spec)  # doctest: +SKIP
        'uc.sales.orders (catalog uc)'
    """
    if spec.foreign_tables:
        table = spec.foreign_tables[0]
        return f"{table.name} (catalog {table.catalog})"
    from sqlglot import exp

    trees = _statement_trees(_statements(spec))
    if trees is None:
        return "a statement sqlglot cannot read"
    for tree in trees:
        for table in tree.find_all(exp.Table):
            function = table.this
            if isinstance(function, exp.Func):
                name = (function.name if isinstance(function, exp.Anonymous) else function.sql_name()).lower()
                if name not in _PURE_TABLE_FUNCTIONS:
                    return f"the table function {name}(...)"
    return None


def current_inputs(spec: SqlAssetSpec, lake: Lake, args: Mapping[str, Any]) -> tuple[Optional[RunInputs], Optional[str]]:
    """The run's inputs read from the Delta logs, or ``None`` and why they cannot be."""
    tables: dict[str, int] = {}
    for uri in sql_asset_reads(spec):
        version = _table_version(lake, uri)
        if version is None and uri.table.endswith("_current"):
            # `schema.t_current`: the view of history table `t`, versioned with it.
            base = TableUri(uri.schema, uri.table.removesuffix("_current"))
            version = _table_version(lake, base)
        if version is None:
            return None, f"{uri} is not a Delta table of the lake {lake.root} (yet)"
        tables[str(uri)] = version
    arguments = {name: _text(value) for name, value in args.items()}
    return RunInputs(spec.code_version, tables, arguments, _tests_fingerprint(spec)), None


def inputs_metadata(inputs: Optional[RunInputs]) -> dict[str, Any]:
    """``{INPUTS_KEY: ...}`` for a run that did its work, when its inputs are known."""
    return {INPUTS_KEY: dg.MetadataValue.json(inputs.to_json())} if inputs is not None else {}


def previous_data_version(
    instance: Optional[dg.DagsterInstance], key: dg.AssetKey, partitions: Sequence[str]
) -> Optional[str]:
    """The data version of the asset's (first partition's) last materialization, if any."""
    if instance is None:
        return None
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=list(partitions[:1]) or None), limit=1
    ).records
    if not records:
        return None
    return _data_version(records[0])


def _forced(tags: Mapping[str, str]) -> Optional[str]:
    """Why the run must work whatever it finds: its tag, or this process's environment."""
    if _truthy(tags.get(FORCE_TAG)):
        return f"the run is tagged {FORCE_TAG}"
    if _truthy(os.environ.get(FORCE_ENV)):
        return f"{FORCE_ENV} is set"
    return None


def _truthy(value: Optional[str]) -> bool:
    return (value or "").strip().lower() in {"true", "1", "yes"}


def _table_version(lake: Lake, uri: TableUri) -> Optional[int]:
    try:
        return DeltaLog.open(lake.table_path(uri), lake.files).latest_version
    except AssetlakeError:
        return None


def last_recorded_inputs(instance: dg.DagsterInstance, key: dg.AssetKey) -> Optional[RunInputs]:
    """The inputs the asset's latest (whole-table) materialization recorded, if any."""
    record = _latest_materializations(instance, key, [])[None]
    return _recorded(record)[0] if record is not None else None


def _latest_materializations(
    instance: dg.DagsterInstance, key: dg.AssetKey, partitions: Sequence[str]
) -> dict[Optional[str], Optional[dg.EventLogRecord]]:
    """The latest materialization of each partition (or of the table: key ``None``)."""
    if not partitions:
        records = instance.fetch_materializations(key, limit=1).records
        return {None: records[0] if records else None}
    ids = instance.get_latest_storage_id_by_partition(
        key, dg.DagsterEventType.ASSET_MATERIALIZATION, set(partitions)
    )
    found: dict[Optional[str], Optional[dg.EventLogRecord]] = dict.fromkeys(partitions)
    if not all(p in ids for p in partitions):
        return found
    wanted = sorted(set(ids.values()))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, storage_ids=chunk), limit=len(chunk)
        )
        by_id = {r.storage_id: r for r in result.records}
        for partition in partitions:
            if ids[partition] in by_id:
                found[partition] = by_id[ids[partition]]
    return found


def _recorded(record: dg.EventLogRecord) -> tuple[Optional[RunInputs], Optional[int], Optional[str]]:
    """The inputs, table version and data version a materialization recorded."""
    materialization = record.asset_materialization
    metadata = materialization.metadata if materialization is not None else {}
    inputs = metadata.get(INPUTS_KEY)
    version = metadata.get("delta/version")
    return (
        RunInputs.from_json(getattr(inputs, "value", None)),
        version.value if isinstance(version, dg.IntMetadataValue) else None,
        _data_version(record),
    )


def _data_version(record: dg.EventLogRecord) -> Optional[str]:
    materialization = record.asset_materialization
    return (materialization.tags or {}).get(DATA_VERSION_TAG) if materialization is not None else None


def _table_changed_since(lake: Lake, uri: TableUri, version: int, partitions: Sequence[str]) -> Optional[str]:
    """Why the table may no longer hold the rows of ``version`` (of ``partitions``); ``None``: it does."""
    try:
        log = DeltaLog.open(lake.table_path(uri), lake.files)
    except AssetlakeError as exc:
        return f"its table cannot be read ({exc})"
    if log.latest_version < version:
        return f"the table is at version {log.latest_version}, older than the recorded {version} (restored or recreated)"
    if log.latest_version == version:
        return None
    if log.latest_version - version > MAX_COMMITS_READ or version + 1 < log.first_readable:
        return f"the table has {log.latest_version - version} commits since version {version}"
    wanted = set(partitions)
    for commit in log.read_commits(version):
        if not commit.data_changed:
            continue
        touched = {values.get(PARTITION_COLUMN) for values in (*commit.added, *commit.removed)}
        if not wanted or None in touched or touched & wanted:
            return f"the table's rows changed since version {version} (version {commit.version}: {commit.operation})"
    return None


def _carried_outcomes(
    context: dg.AssetExecutionContext, spec: SqlAssetSpec, key: dg.AssetKey, partitions: Sequence[str]
) -> tuple[list[TestOutcome], Optional[str]]:
    """The selected data tests' last results, to report again; or why they cannot be."""
    outcomes = []
    for test in selected_tests(context, spec, key):
        latest = _latest_evaluations(context.instance, dg.AssetCheckKey(key, test.name), partitions)
        for partition in partitions or [None]:
            found = latest.get(partition)
            if found is None:
                return [], f"data test {test.name} has no earlier result{_of(partition)} to carry"
            run_id, evaluation = found
            if not evaluation.passed and test.blocking:
                return [], f"data test {test.name} failed at its last evaluation{_of(partition)}"
            metadata = evaluation.metadata or {}
            scope = _text(getattr(metadata.get("scope"), "value", "table")).split(_CARRIED)[0]
            outcomes.append(
                TestOutcome(
                    test=test,
                    failing=_int(metadata.get("failing")),
                    samples=tuple(getattr(metadata.get("samples"), "value", None) or ()),
                    rows=_int(metadata.get("rows_tested")),
                    scope=f"{scope}{_CARRIED}{run_id[:8]}",
                    partition=partition,
                )
            )
    return outcomes, None


#: How a carried result's scope says where it comes from.
_CARRIED = ", unchanged since run "


def _latest_evaluations(
    instance: dg.DagsterInstance, check_key: dg.AssetCheckKey, partitions: Sequence[str]
) -> dict[Optional[str], tuple[str, Any]]:
    """The latest ended evaluation of the check per partition (``None``: unpartitioned), as
    ``(run id, evaluation)``: one query for a batch's partitions, then one per partition missed."""
    storage = instance.event_log_storage
    # Ended ones only: this run's own planned evaluation is the latest record.
    ended = {CheckExecutionStatus.SUCCEEDED, CheckExecutionStatus.FAILED}
    wanted = list(partitions) or [None]
    found: dict[Optional[str], tuple[str, Any]] = {}

    def take(records) -> None:
        for record in records:
            data = getattr(getattr(record.event, "dagster_event", None), "event_specific_data", None)
            if record.partition in wanted and record.partition not in found and hasattr(data, "passed"):
                found[record.partition] = (record.run_id, data)

    take(storage.get_asset_check_execution_history(check_key, limit=2 * len(wanted) + 8, status=ended))
    for partition in [p for p in wanted if p not in found and p is not None]:
        take(storage.get_asset_check_execution_history(
            check_key, limit=1, status=ended, partition_filter=PartitionKeyFilter(key=partition)
        ))
    return found


def _carried_metadata(record: dg.EventLogRecord) -> dict[str, Any]:
    materialization = record.asset_materialization
    metadata = dict(materialization.metadata) if materialization is not None else {}
    for name in _NOT_CARRIED:
        metadata.pop(name, None)
    return metadata


def _tests_fingerprint(spec: SqlAssetSpec) -> str:
    digest = hashlib.sha256(repr(spec.data_tests).encode())
    for test in spec.data_tests:
        if test.path:
            try:
                with open(test.path, "rb") as handle:
                    digest.update(handle.read())
            except OSError:
                digest.update(b"missing")
    return digest.hexdigest()[:16]


def _int(value: Any) -> int:
    value = getattr(value, "value", value)
    return int(value) if isinstance(value, (int, float)) else 0


def _text(value: Any) -> str:
    """An argument value (or metadata text) as recorded: dates in ISO form, numbers as JSON."""
    if isinstance(value, str):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return json.dumps(value, default=str)


def _shown(arguments: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(arguments.items())) or "none"


def _few(items: Sequence[str]) -> str:
    return ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")


def _of(partition: Optional[str]) -> str:
    return f" of partition {partition}" if partition else ""
