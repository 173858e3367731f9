"""Watched external tables: one sensor observes every external Delta table's log and
triggers the SQL assets that read it.

A table the project's SQL reads but no file produces is an external asset. Every tick
(``minimum_interval_seconds``, default 30 s, or ``$ASSETLAKE_WATCH_INTERVAL_S``) the sensor
lists each such table's ``_delta_log`` once and parses only the commits after the version
it saw last (:mod:`~assetlake_dagster.defs.watch.table_changes`, through
:mod:`assetlake_dagster.lake.delta_log`; no Spark), on local disk or on an object
store (``s3a://``: one ``ListObjectsV2`` per table and tick, a ``GET`` per new commit). For
a table with new commits it:

- records an observation of the external asset whose data version is the Delta version
  (so the UI shows the version, and readers that read an older one become stale), with
  the commit time, operation and files changed as metadata;
- requests runs of its readers, the assets whose upstreams include it as the definitions
  have them (after the translator: its ``get_partitions_def`` and ``get_deps`` decide): the
  SQL files that read it and the Python assets that declare it (``ins=`` or ``deps=``):

  * an unpartitioned reader: one run, when a commit changed rows;
  * a time-partitioned reader: the partitions whose data changed, from the
    ``partitionValues`` of the files the commits added or removed
    (:mod:`~assetlake_dagster.defs.watch.partition_keys`). A value that is a date
    (``2024-01-05``) covers that day, a timestamp an instant, in the reader's time zone;
    each maps to the reader's partitions overlapping it, and with ``window=3d`` also to the
    later partitions whose 3-day window includes it. A value equal to a partition key
    counts as that partition. Partitions outside the reader's range (before ``start=``,
    from ``end=`` on, or the current window, which is not a partition until it closes)
    are not requested, and the log says so;
  * a static- or dynamic-partitioned reader: the partition values equal to one of its keys;
  * when no partition can be derived (the table is not partitioned in Delta, or its values
    are neither dates nor keys), nothing, and a warning in the tick's log saying which
    table and reader, and what to do.

  Readers that share a partitions definition and a partition key share one run; several
  tables changed in one tick still give one run per reader partition. Each request has a
  stable ``run_key`` (``<table>@<version>|<partition>|<readers>``), so a tick that Dagster
  evaluates again never launches a run twice.

The cursor is JSON ``{"delta://schema/table": last_seen_version}`` (``-1``: the table did
not exist), saved with every tick, so a restarted daemon resumes where it stopped: no
commit is replayed, none is skipped.

- **First look at a table** (no cursor entry: a new sensor, a newly referenced table): its
  current version becomes the baseline and nothing is requested, since the readers'
  state cannot be known from the log; the observation is recorded so the UI shows the
  data version. Materialize the readers once yourself if they have never run.
- **Missing table**: a warning, nothing requested; once the table exists every commit it
  then has is new, so its first writes trigger the readers.
- **Unreadable log** (permissions, damaged JSON, an unreachable or refusing object store),
  a table path outside the lake: a warning naming the table and the fix; that table is
  skipped (its cursor kept, so it is retried next tick) and the others are processed.
  No error ever leaves the sensor.
- **Expired commits** (log cleanup deleted commit files the sensor had not read yet, e.g.
  it was off for longer than ``delta.logRetentionDuration``): what they changed cannot be
  known, so unpartitioned readers get a run (the cheap, safe choice), partitioned readers
  get the partitions of the commits still readable, and a warning names the lost versions
  and the backfill to run. The cursor moves past them: warning again every tick would
  help no one.
- A commit that changes no rows (``OPTIMIZE``, a property change) is observed but
  triggers nothing.

Example:
    >>> project = load_project("pipelines/")  # doctest: +SKIP
    >>> keys = {uri: dg.AssetKey(uri.asset_key_path) for uri in [*project.external, *project.by_uri()]}  # doctest: +SKIP
    >>> sensor = build_watch_sensor(project, keys, Lake("/data/lake"))  # doctest: +SKIP
"""

import datetime as dt
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.defs.dagster_internals import DATA_VERSION_TAG, is_materializable
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.defs.external import LAST_UPDATED_KEY, catalog_metadata
from assetlake_dagster.lake.delta_log import DeltaLog, DeltaLogError, PartitionValues
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.defs.translator import AssetlakeTranslator
from assetlake_dagster.project.load import Project
from assetlake_dagster.spec import TableUri
from assetlake_dagster.defs.watch.partition_keys import (
    ExistingPartitions,
    distinct_values,
    match_partition_keys,
    render_values,
)
from assetlake_dagster.defs.watch.table_changes import MISSING_VERSION, TableChange, read_table_change

WATCH_SENSOR_NAME = "assetlake_watch_external_tables"
#: Seconds between two ticks when ``minimum_interval_seconds`` is not given.
WATCH_INTERVAL_ENV = "ASSETLAKE_WATCH_INTERVAL_S"
DEFAULT_WATCH_INTERVAL_S = 30
#: Run tag: the table versions that triggered the run.
WATCH_TAG = "assetlake/watch"
#: How many partition values or keys a message quotes before "and N more".
_SAMPLE = 5


def watch_interval_seconds(minimum_interval_seconds: Optional[int] = None) -> int:
    """The sensor's interval: the argument, else ``$ASSETLAKE_WATCH_INTERVAL_S``, else 30.

    The environment variable configures the bundled code location without Python; it is
    read when the definitions load, so a change takes effect on the next reload.

    Raises:
        ConfigError: not a whole number of seconds of at least 1.

    Example:
        >>> watch_interval_seconds(120)
        120
    """
    if minimum_interval_seconds is not None:
        value, source = str(minimum_interval_seconds), "minimum_interval_seconds"
    else:
        value, source = os.environ.get(WATCH_INTERVAL_ENV, "").strip(), WATCH_INTERVAL_ENV
        if not value:
            return DEFAULT_WATCH_INTERVAL_S
    if not re.fullmatch(r"[0-9]+", value, re.ASCII) or int(value) < 1:
        raise ConfigError(
            f"{source}={value!r} is not a whole number of seconds. "
            f"Use a number of seconds of at least 1 (the default is {DEFAULT_WATCH_INTERVAL_S})."
        )
    return int(value)


@dataclass(frozen=True)
class _Reader:
    """An asset (SQL or Python) reading a watched table, as the sensor needs it."""

    key: dg.AssetKey
    name: str
    partitions_def: Optional[dg.PartitionsDefinition]
    #: The ``window=`` mapping's offsets: partition P reads upstream P+start .. P+end.
    offsets: tuple[int, int] = (0, 0)
    #: The assets a run of it runs as well (a publish group's), itself included; empty: none.
    runs_with: tuple[dg.AssetKey, ...] = ()


@dataclass(frozen=True)
class _Watched:
    uri: TableUri
    key: dg.AssetKey
    readers: tuple[_Reader, ...]


def build_watch_sensor(
    project: Project,
    keys_by_table: Mapping[TableUri, dg.AssetKey],
    lake: Lake,
    *,
    minimum_interval_seconds: Optional[int] = None,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
    name: str = WATCH_SENSOR_NAME,
    assets: Optional[Sequence[Any]] = None,
) -> Optional[dg.SensorDefinition]:
    """The sensor that watches the project's external tables, or ``None`` if it has none.

    One sensor for all of them, not one per table: a tick lists each table's log once,
    a reader of two tables that changed together runs once, and one switch turns watching
    on or off. Each table's own state is on its asset (the observed data version, commit
    time and operation) and each tick's log names the tables it looked at.

    Args:
        project: the loaded project; its ``external`` tables are watched.
        keys_by_table: the asset key of every table (external and SQL), as the
            definitions name them (after the translator).
        lake: where the tables live: a local folder or an object store.
        minimum_interval_seconds: seconds between ticks (default
            ``$ASSETLAKE_WATCH_INTERVAL_S``, else 30).
        default_status: running by default, so ``dagster dev`` watches at once.
        name: the sensor's name.
        assets: the definitions' assets as built (SQL and Python): the readers, their
            partitions and ``window=`` mappings are read from them, so a translator's
            overrides count. Default: the project's SQL files as the default translator
            makes them, and its Python assets.

    Raises:
        ConfigError: a bad interval.

    Example:
        >>> project = load_project("pipelines/")  # doctest: +SKIP
        >>> keys = {uri: dg.AssetKey(uri.asset_key_path) for uri in [*project.external, *project.by_uri()]}  # doctest: +SKIP
        >>> sensor = build_watch_sensor(project, keys, Lake("/data/lake"), minimum_interval_seconds=60)  # doctest: +SKIP
        >>> dg.Definitions(assets=[...], sensors=[sensor])  # doctest: +SKIP
    """
    interval = watch_interval_seconds(minimum_interval_seconds)
    watched = _watched_tables(project, keys_by_table, assets)
    if not watched:
        return None
    reader_keys = sorted({r.key for table in watched for r in table.readers}, key=lambda k: k.to_user_string())

    @dg.sensor(
        name=name,
        minimum_interval_seconds=interval,
        default_status=default_status,
        asset_selection=dg.AssetSelection.assets(*reader_keys).required_multi_asset_neighbors(),
        description=(
            "Reads the Delta log of the external tables "
            + ", ".join(str(t.uri) for t in watched)
            + " (no Spark); on a new commit it records the table's version as its data version "
            "and runs the readers' partitions whose data changed."
        ),
    )
    def _watch(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return _Tick(context, lake).run(watched)

    return _watch


def _watched_tables(
    project: Project, keys_by_table: Mapping[TableUri, dg.AssetKey], assets: Optional[Sequence[Any]]
) -> list[_Watched]:
    if assets is None:
        specs = [*_default_sql_specs(project, keys_by_table), *_runnable_specs(project.python_assets)]
    else:
        specs = _runnable_specs(assets)
    # A publish group's assets run together: a request for one names them all.
    together = {
        key: tuple(sorted(asset.keys, key=lambda k: k.to_user_string()))
        for asset in assets or ()
        if isinstance(asset, dg.AssetsDefinition) and not asset.can_subset and len(asset.keys) > 1
        for key in asset.keys
    }
    external = {keys_by_table[uri]: uri for uri in project.external}
    names = {keys_by_table[spec.uri]: spec.uri.sql_name for spec in project.assets}
    readers: dict[TableUri, list[_Reader]] = {}
    for spec in specs:
        for dep in spec.deps:
            uri = external.get(dep.asset_key)
            if uri is None:
                continue
            mapping = dep.partition_mapping
            offsets = (
                (mapping.start_offset, mapping.end_offset)
                if isinstance(mapping, dg.TimeWindowPartitionMapping)
                else (0, 0)
            )
            name = names.get(spec.key, spec.key.to_user_string())
            readers.setdefault(uri, []).append(
                _Reader(spec.key, name, spec.partitions_def, offsets, together.get(spec.key, ()))
            )
    return [
        _Watched(uri, keys_by_table[uri], tuple(readers[uri])) for uri in project.external if readers.get(uri)
    ]


def _runnable_specs(assets: Sequence[Any]) -> list[dg.AssetSpec]:
    """The specs of the assets that materialize (an AssetSpec or an external asset runs nothing)."""
    return [
        asset.get_asset_spec(key)
        for asset in assets
        if isinstance(asset, dg.AssetsDefinition) and is_materializable(asset)
        for key in sorted(asset.keys, key=lambda k: k.to_user_string())
    ]


def _default_sql_specs(project: Project, keys_by_table: Mapping[TableUri, dg.AssetKey]) -> list[dg.AssetSpec]:
    """The SQL files' readers as the default translator makes them (no definitions given)."""
    translator = AssetlakeTranslator().bound_to(keys_by_table)
    return [
        dg.AssetSpec(keys_by_table[spec.uri], partitions_def=translator.get_partitions_def(spec), deps=translator.get_deps(spec))
        for spec in project.assets
    ]


@dataclass
class _Group:
    readers: set[dg.AssetKey] = field(default_factory=set)
    causes: set[str] = field(default_factory=set)


class _Tick:
    """One evaluation of the sensor."""

    def __init__(self, context: dg.SensorEvaluationContext, lake: Lake):
        self.context = context
        self.log = context.log
        self.lake = lake
        self.now = dt.datetime.now(dt.timezone.utc)
        self.groups: dict[tuple[Optional[dg.PartitionsDefinition], Optional[str]], _Group] = {}
        # The instance is only asked for dynamic partitions: a test's context may have none.
        self.existing = ExistingPartitions(self.now, lambda: context.instance)

    def run(self, watched: Sequence[_Watched]) -> dg.SensorResult:
        seen = self._load_cursor()
        cursor: dict[str, int] = {}
        events: list[dg.AssetObservation] = []
        summaries: list[str] = []
        for table in watched:
            previous = seen.get(str(table.uri))
            wanted: list[tuple[_Reader, Optional[str], str]] = []
            observation = None
            try:
                change = read_table_change(
                    table.uri, self.lake, previous, readers=_names(r.name for r in table.readers), log=self.log
                )
                if change is not None and (change.commits or change.expired):
                    wanted = self._request(table, change)
                if change is not None and change.version != MISSING_VERSION:
                    # A metadata-only commit (a property, a description) is not new data.
                    if change.baseline or change.expired or any(c.data_changed for c in change.commits):
                        observation = self._observation(table, change)
            except Exception:  # noqa: BLE001 - one table's surprise must not stop the others
                self.log.exception(
                    f"{table.uri}: unexpected error while watching it; skipped this tick, "
                    "retried on the next (its cursor is unchanged). Please report this error."
                )
                change = None
            if change is None:
                if previous is not None:
                    cursor[str(table.uri)] = previous
                summaries.append(f"{table.uri}: skipped (see the log)")
                continue
            for reader, key, cause in wanted:
                self._add(reader, key, cause)
            cursor[str(table.uri)] = change.version
            summaries.append(f"{table.uri}: {change.summary}")
            if observation is not None:
                events.append(observation)
        requests = self._run_requests()
        return dg.SensorResult(
            run_requests=requests,
            skip_reason=None if requests else "; ".join(summaries) or "no external table to watch",
            cursor=json.dumps(cursor, sort_keys=True),
            asset_events=events,
        )

    # -- the cursor ------------------------------------------------------------------------

    def _load_cursor(self) -> dict[str, int]:
        text = self.context.cursor
        if not text:
            return {}
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
        except ValueError:
            self.log.warning(
                f"the sensor's cursor {text[:200]!r} is not the JSON object this sensor writes; "
                "starting over: each table's current version becomes its baseline."
            )
            return {}
        return {
            uri: version
            for uri, version in raw.items()
            if isinstance(version, int) and not isinstance(version, bool) and version >= MISSING_VERSION
        }

    # -- the observation -------------------------------------------------------------------

    def _observation(self, table: _Watched, change: TableChange) -> dg.AssetObservation:
        metadata: dict[str, Any] = {"delta_version": change.version, "path": dg.MetadataValue.path(change.path)}
        try:  # the table's schema and location, as "Observe" records them
            metadata.update(catalog_metadata(table.uri, change.log or DeltaLog.open(change.path, self.lake.files)))
        except DeltaLogError as exc:
            self.log.warning(f"{table.uri}: observed without its schema: {exc}")
        commits = change.commits
        last = commits[-1] if commits else change.last_commit
        if last is not None:
            metadata["commit_timestamp"] = dg.MetadataValue.timestamp(last.timestamp)
            # What Dagster's freshness checks read of an observation (source_freshness).
            metadata[LAST_UPDATED_KEY] = dg.MetadataValue.timestamp(last.timestamp)
            metadata["operation"] = last.operation
        if change.baseline:
            description = f"{table.uri} is at version {change.version} (first look: the baseline)."
        else:
            first = change.expired[0] if change.expired else commits[0].version
            operations = list(dict.fromkeys(c.operation for c in commits))
            metadata["versions"] = _span(first, change.version)
            metadata["operations"] = ", ".join(operations)
            metadata["files_added"] = sum(len(c.added) for c in commits)
            metadata["files_removed"] = sum(len(c.removed) for c in commits)
            values = distinct_values(commits)
            if any(values):
                metadata["changed_partitions"] = _sample([render_values(v) for v in values if v])
            if change.expired:
                metadata["expired_versions"] = _span(change.expired[0], change.expired[1])
            description = f"{table.uri} is at version {change.version} ({change.summary})."
        return dg.AssetObservation(
            asset_key=table.key,
            description=description,
            metadata=metadata,
            tags={DATA_VERSION_TAG: str(_data_version(change))},
        )

    # -- run requests ----------------------------------------------------------------------

    def _request(self, table: _Watched, change: TableChange) -> list[tuple[_Reader, Optional[str], str]]:
        """(reader, partition key or None, cause) for every run the change asks for."""
        wanted: list[tuple[_Reader, Optional[str], str]] = []
        cause = f"{table.uri.sql_name}@{change.version}"
        changed = any(c.data_changed for c in change.commits)
        values = distinct_values(change.commits)
        if change.expired:
            self._warn_expired(table, change)
        for reader in table.readers:
            if reader.partitions_def is None:
                if changed or change.expired:
                    wanted.append((reader, None, cause))
                continue
            if not values:
                continue
            existing = self.existing(reader.partitions_def)
            match = match_partition_keys(reader.partitions_def, reader.offsets, values, existing)
            wanted.extend((reader, key, cause) for key in sorted(match.keys))
            if match.unmatched:
                self._warn_unmatched(table, reader, change, match.unmatched)
            if match.outside:
                self.log.warning(
                    f"{table.uri} ({_commits(change)}) changed data of "
                    f"{reader.name} partitions that do not exist: {_sample(sorted(match.outside))}; not requested. "
                    f"{reader.name} has {_range(existing)}; a partition "
                    "before start= or from end= on never exists, and the current window becomes one "
                    "when it closes: materialize it then."
                )
        return wanted

    def _add(self, reader: _Reader, key: Optional[str], cause: str) -> None:
        group = self.groups.setdefault((reader.partitions_def, key), _Group())
        group.readers.update(reader.runs_with or (reader.key,))
        group.causes.add(cause)

    def _run_requests(self) -> list[dg.RunRequest]:
        requests = []
        for (_, key), group in self.groups.items():
            readers = sorted(r.to_user_string() for r in group.readers)
            causes = ",".join(sorted(group.causes))
            requests.append(
                dg.RunRequest(
                    run_key=f"{causes}|{key if key is not None else '-'}|{','.join(readers)}",
                    asset_selection=sorted(group.readers, key=lambda k: k.to_user_string()),
                    partition_key=key,
                    tags={WATCH_TAG: causes},
                )
            )
        return sorted(requests, key=lambda r: r.run_key or "")

    # -- warnings --------------------------------------------------------------------------

    def _warn_unmatched(
        self, table: _Watched, reader: _Reader, change: TableChange, unmatched: Sequence[PartitionValues]
    ) -> None:
        versions = _commits(change)
        todo = (
            f"materialize the partitions of {reader.name} that need it yourself (the UI, or "
            f"`assetlake backfill {reader.key.to_user_string()} --from … --to …`)"
        )
        if not any(unmatched):
            self.log.warning(
                f"{table.uri} is not partitioned in Delta (the files of its {versions} "
                f"carry no partition values), so the sensor cannot tell which partitions of "
                f"{reader.name} changed, and requested none. Partition {table.uri} by a date column "
                f"(partitionBy), or {todo}."
            )
            return
        if isinstance(reader.partitions_def, dg.TimeWindowPartitionsDefinition):
            problem = (
                "are neither dates (YYYY-MM-DD) nor timestamps (YYYY-MM-DD HH:MM[:SS]) nor "
                f"partition keys of {reader.name}"
            )
        else:
            keys = sorted(self.existing(reader.partitions_def)) if reader.partitions_def else []
            problem = f"match no partition key of {reader.name} ({_sample(keys) or 'none yet'})"
        self.log.warning(
            f"the partition values {_sample([render_values(v) for v in unmatched])} of {table.uri} "
            f"({versions}) {problem}, so the sensor requested nothing for them. Partition "
            f"{table.uri} by a column holding those, or {todo}."
        )

    def _warn_expired(self, table: _Watched, change: TableChange) -> None:
        assert change.expired is not None
        first, last, checkpoint = change.expired
        partitioned = _names(r.name for r in table.readers if r.partitions_def is not None)
        plain = _names(r.name for r in table.readers if r.partitions_def is None)
        readable = (
            f"only for the commits still readable ({_span(change.commits[0].version, change.version)})"
            if change.commits
            else "not at all (no commit is readable)"
        )
        self.log.warning(
            f"{table.uri}: the commits {_span(first, last)} are no longer in its Delta log (log cleanup "
            f"removed them after checkpoint {checkpoint}), so the sensor cannot tell what they changed. "
            + (f"Requested a run of {plain} anyway. " if plain else "")
            + (
                f"Partitions of {partitioned} are requested {readable}: backfill them over the "
                "period the table changed (the UI, or `assetlake backfill <asset> --from … --to …`). "
                if partitioned
                else ""
            )
            + "Keep the sensor running more often than the table's delta.logRetentionDuration "
            "(30 days by default) so this does not recur."
        )


def _sample(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SAMPLE])
    return shown + (f" and {len(items) - _SAMPLE} more" if len(items) > _SAMPLE else "")


def _names(names: Iterable[str]) -> str:
    return ", ".join(sorted(set(names)))


def _data_version(change: TableChange) -> int:
    """The table's data version: its newest commit that changed rows, as "Observe" says."""
    changed = [c.version for c in change.commits if c.data_changed]
    if changed:
        return changed[-1]
    if change.baseline and change.log is not None:
        return change.log.last_data_version()
    return change.version


def _commits(change: TableChange) -> str:
    """``commit 5`` or ``commits 3..5``: the readable commits of a change."""
    first = change.commits[0].version
    return f"commit {first}" if first == change.version else f"commits {first}..{change.version}"


def _span(first: int, last: int) -> str:
    return f"{first}" if first == last else f"{first}..{last}"


def _range(keys: set[str]) -> str:
    if not keys:
        return "no partition yet"
    ordered = sorted(keys)
    return f"partitions {ordered[0]} .. {ordered[-1]}" if len(ordered) > 1 else f"one partition, {ordered[0]}"
