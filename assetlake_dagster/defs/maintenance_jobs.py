"""Maintenance on the Dagster side: the ``-- maintain`` jobs and schedules, and the versions
of a table Dagster still needs, for the ``VACUUM`` guard.

:mod:`assetlake_dagster.lake.maintenance` runs ``OPTIMIZE`` and ``VACUUM`` on a table and
refuses a ``VACUUM`` that would delete a needed version's files. A table with a
``-- maintain`` line gets a job (``maintain__<schema>__<table>``) and a schedule on its
cron: an op, not an asset, so it materializes nothing and triggers nothing downstream; it
records the files and bytes before and after as an observation of the asset
(``assetlake/maintenance``). :func:`needed_versions` finds the versions the guard keeps,
where Dagster keeps them:

* materializations inside the restore window: the table's own ``delta/version``, and every
  downstream's ``assetlake/upstream_versions`` entry for the table;
* inputs that pin a version (``AssetIn(metadata={"assetlake/version": N})``), read from the
  project's assets (:class:`ProjectAssets`);
* runs still in flight: the version that was current when each started.

The scheduled job and ``assetlake vacuum`` take one path, :func:`guarded_vacuum`: the job
with its code location's assets (the run's repository), the command with those of
``--project-dir``. Where neither is known (a job executed in process, the command without a
project) no input can be ruled out, so every version the table can still be read at is
kept: a ``VACUUM`` that would delete any of them is refused, saying how to name the project.

Tables without a line of their own take a default from ``build_definitions(maintain=…)``
(the component's ``maintain`` attribute): one ``-- maintain`` line's text for every managed
table, or one per group (``"*"``: every other group), parsed by the line's own grammar
(:func:`maintain_defaults`).
"""

from __future__ import annotations

import datetime as dt
import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

import dagster as dg

from assetlake_dagster.errors import ConfigError, display_path
from assetlake_dagster.defs.write_contract import materialize_spec_for
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.spec import READ_VERSION_KEY, UPSTREAM_VERSIONS_KEY, MaintainSpec, SqlAssetSpec, TableUri, WriteStrategy

if TYPE_CHECKING:  # PySpark loads when a run starts, not with the code location
    from assetlake_dagster.lake.maintenance import MaintenanceResult, Need
    from assetlake_dagster.lake.root import Lake

#: The key of ``build_definitions(maintain={…})`` that applies to every group not named.
EVERY_GROUP = "*"
#: What ``build_definitions(maintain=…)`` takes: one line's text, or texts by group name.
MaintainDefaults = Union[None, str, Mapping[str, str]]
#: Materializations read per asset key (inside the window; newest first).
RECORD_LIMIT = 1000
#: Observation metadata of a maintenance run: each operation's files and bytes before and after.
MAINTENANCE_KEY = "assetlake/maintenance"
#: Why a run without its code location cannot know the inputs that pin a version.
NO_CODE_LOCATION = (
    "the run has no code location to read the inputs that pin versions from (it was executed in process); "
    "run the job from its code location (its schedule, the UI, 'dagster job execute'), or "
    "'assetlake vacuum --project-dir <folder>'"
)


@dataclasses.dataclass(frozen=True, eq=False)
class ProjectAssets:
    """The assets that may read a table at a pinned version: a project's, or none known (and why).

    Example:
        >>> ProjectAssets.of(dg.Definitions()).pins(TableUri("s", "t"))
        []
        >>> ProjectAssets.unknown("no project was given").known
        False
    """

    graph: Any  # Dagster's asset graph (not public as a type), or None: not known
    missing: str = ""

    @classmethod
    def of(cls, definitions: Union[dg.Definitions, dg.RepositoryDefinition]) -> "ProjectAssets":
        """The assets of a project's definitions, or of a code location's repository."""
        if isinstance(definitions, dg.Definitions):
            return cls(definitions.resolve_asset_graph())
        return cls(definitions.asset_graph)

    @classmethod
    def unknown(cls, why: str) -> "ProjectAssets":
        """No project: ``why`` says how to name one (it ends the guard's refusal)."""
        return cls(None, why)

    @classmethod
    def of_run(cls, context: Any) -> "ProjectAssets":
        """A run's code location (every run Dagster launches has one), else :meth:`unknown`."""
        try:
            repository = context.repository_def
        except Exception:  # noqa: BLE001 - Dagster's CheckError: executed in process, no repository
            return cls.unknown(NO_CODE_LOCATION)
        return cls.of(repository)

    @property
    def known(self) -> bool:
        return self.graph is not None

    def table_key(self, uri: TableUri) -> Optional[dg.AssetKey]:
        """The key of the asset that is ``uri`` here (a translator may have renamed it)."""
        for node in self.graph.asset_nodes if self.known else ():
            if _table_of(node.key, node.metadata) == uri:
                return node.key
        return None

    def pins(self, uri: TableUri) -> list[Need]:
        """The versions of ``uri`` that inputs pin (``AssetIn(metadata={"assetlake/version": N})``).

        The input's table is found as the IO manager finds it, from its upstream's write
        contract, so a renamed key pins its table too.
        """
        from assetlake_dagster.lake.maintenance import Need

        needs = []
        for assets_def in self.graph.assets_defs if self.known else ():
            if not assets_def.is_executable:
                continue  # an external asset reads nothing
            for name, input_def in assets_def.node_def.input_dict.items():
                upstream = assets_def.keys_by_input_name.get(name)
                if upstream is None or not self.graph.has(upstream) or _table_of(upstream, self.graph.get(upstream).metadata) != uri:
                    continue
                pinned = (input_def.metadata or {}).get(READ_VERSION_KEY)
                pinned = getattr(pinned, "value", pinned)
                if pinned is not None:
                    reader = ", ".join(k.to_user_string() for k in assets_def.keys)
                    needs.append(Need(int(pinned), f"pinned by {reader}'s input '{name}'"))
        return needs

    def unknown_pins(self, commit_times: Mapping[int, dt.datetime]) -> list[Need]:
        """Without a project, every version still readable, as one an input may pin."""
        from assetlake_dagster.lake.maintenance import Need

        if self.known or not commit_times:
            return []
        latest = max(commit_times)
        return [Need(v, f"an input may pin it, and {self.missing}") for v in sorted(commit_times) if v != latest]


def maintain_defaults(maintain: MaintainDefaults) -> dict[str, MaintainSpec]:
    """``build_definitions(maintain=…)`` parsed, by group name (:data:`EVERY_GROUP`: the rest).

    Each text is what follows ``-- maintain`` on a file's line, checked by the same grammar.

    Raises:
        ValueError: a text the line's grammar refuses, with the line's located message.

    Example:
        >>> sorted(maintain_defaults({"*": "0 3 * * 0", "raw": "@daily vacuum=7d"}))
        ['*', 'raw']
        >>> maintain_defaults("0 3 * * 0 vacuum=window")["*"].retain_hours is None
        True
    """
    from assetlake_dagster.annotations import parse_line_text

    if maintain is None:
        return {}
    texts = {EVERY_GROUP: maintain} if isinstance(maintain, str) else dict(maintain)
    return {group: parse_line_text("maintain", text, f"maintain[{group!r}]") for group, text in texts.items()}


def maintained_spec(spec: SqlAssetSpec, group: str, defaults: Mapping[str, MaintainSpec]) -> Optional[SqlAssetSpec]:
    """``spec`` with the maintenance it gets: its own line, else its group's default, else
    the project's; ``None`` for none (a ``manual`` file is never maintained by default)."""
    if spec.maintain is not None:
        return spec
    if spec.materialize.strategy is WriteStrategy.MANUAL:
        return None
    default = defaults.get(group) or defaults.get(EVERY_GROUP)
    return dataclasses.replace(spec, maintain=default) if default else None


def maintenance_definitions(
    spec: SqlAssetSpec, asset_key: dg.AssetKey, spark_key: str = "spark"
) -> tuple[dg.JobDefinition, dg.ScheduleDefinition]:
    """The job and schedule of a file's ``-- maintain`` line.

    Example:
        >>> job, schedule = maintenance_definitions(spec, dg.AssetKey(["s", "t"]))  # doctest: +SKIP
        >>> job.name, schedule.cron_schedule  # doctest: +SKIP
        ('maintain__s__t', '0 3 * * 0')
    """
    maintain = spec.maintain
    assert maintain is not None
    uri, name = spec.uri, f"maintain__{spec.uri.schema}__{spec.uri.table}"

    # The op's name is not the job's: a code location checks that every op and graph name in it
    # stands for one definition, and the job's graph takes the job's name.
    @dg.op(name=f"{name}__op", required_resource_keys={spark_key}, description=f"OPTIMIZE{' and VACUUM' if maintain.vacuum else ''} {uri}")
    def maintain_table(context) -> None:  # unannotated: this module postpones annotations, Dagster reads them
        from assetlake_dagster.lake.maintenance import optimize_table

        resource: SparkDeltaResource = getattr(context.resources, spark_key)
        session, lake = resource.get_session(), resource.lake
        done = []
        try:
            result = optimize_table(session, lake, uri)
            context.log.info(result.summary(uri))
            done.append(result)
            if maintain.vacuum:
                # The code location's assets, as 'assetlake vacuum --project-dir' reads a project's.
                project = ProjectAssets.of_run(context)
                result = guarded_vacuum(session, lake, uri, maintain.retain_hours, context.instance, project, asset_key=asset_key)
                context.log.info(result.summary(uri))
                done.append(result)
        finally:
            if done:
                context.log_event(dg.AssetObservation(asset_key=asset_key, metadata={MAINTENANCE_KEY: dg.MetadataValue.json([
                    {"operation": r.operation, "version": r.version, "retain_hours": r.retain_hours,
                     "before": r.before.as_metadata(), "after": r.after.as_metadata()} for r in done
                ])}))

    job = dg.GraphDefinition(name=name, node_defs=[maintain_table]).to_job(
        description=f"Maintenance of {uri} ({display_path(spec.path)})",
    )
    schedule = dg.ScheduleDefinition(
        name=f"{name}_schedule",
        job=job,
        cron_schedule=maintain.cron,
        execution_timezone=maintain.timezone or "UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"-- maintain {maintain.cron} in {display_path(spec.path)}",
    )
    return job, schedule


def guarded_vacuum(
    spark: Any,
    lake: Lake,
    uri: TableUri,
    retain_hours: Optional[int],
    instance: dg.DagsterInstance,
    project: ProjectAssets,
    *,
    asset_key: Optional[dg.AssetKey] = None,
) -> MaintenanceResult:
    """``VACUUM`` the table unless it would delete a version that :func:`needed_versions` finds.

    The one path of the scheduled job and of ``assetlake vacuum``.

    Args:
        retain_hours: keep the files of versions younger than this (default: the restore window).
        instance: where materializations and runs are recorded.
        project: the assets whose inputs may pin a version (:class:`ProjectAssets`).
        asset_key: the table's asset key (default: the project's asset of the table, else
            ``[schema, table]``).

    Raises:
        VacuumRefused: nothing was deleted; the message names the version and the oldest
            safe retention.

    Example:
        >>> defs = build_definitions("pipelines/")  # doctest: +SKIP
        >>> guarded_vacuum(spark, lake, TableUri("s", "t"), 720, instance, ProjectAssets.of(defs))  # doctest: +SKIP
    """
    from assetlake_dagster.lake.maintenance import vacuum_table

    key = asset_key or project.table_key(uri) or dg.AssetKey(uri.asset_key_path)
    return vacuum_table(
        spark, lake, uri, retain_hours,
        lambda since, times: needed_versions(instance, uri, key, since=since, commit_times=times, project=project),
    )


def needed_versions(
    instance: dg.DagsterInstance,
    uri: TableUri,
    asset_key: dg.AssetKey,
    *,
    since: dt.datetime,
    commit_times: Mapping[int, dt.datetime],
    project: ProjectAssets,
) -> list[Need]:
    """Every version of ``uri`` that Dagster still needs (see the module docstring).

    Args:
        instance: where materializations and runs are recorded.
        asset_key: the table's own asset key.
        since: the start of the restore window: older materializations are not read.
        commit_times: the table's commit times by version (to find the version a run in
            flight started on).
        project: the assets whose inputs may pin a version; when not known, every version in
            ``commit_times`` but the latest is needed.

    Example:
        >>> needed_versions(dg.DagsterInstance.ephemeral(), TableUri("s", "t"), dg.AssetKey(["s", "t"]),
        ...                 since=dt.datetime.now(dt.timezone.utc), commit_times={}, project=ProjectAssets.of(dg.Definitions()))
        []
    """
    from assetlake_dagster.lake.maintenance import Need

    needs: list[Need] = []
    for key in instance.get_asset_keys():
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, after_timestamp=since.timestamp()), limit=RECORD_LIMIT
        ).records
        for record in records:
            materialization = record.asset_materialization
            if materialization is None:
                continue
            metadata = materialization.metadata
            run = record.run_id[:8]
            when = dt.datetime.fromtimestamp(record.timestamp, dt.timezone.utc).isoformat(timespec="seconds")
            own = metadata.get("delta/version")
            if key == asset_key and own is not None and own.value is not None:
                needs.append(Need(int(own.value), f"recorded by its materialization of {when} (run {run})"))
            upstream = metadata.get(UPSTREAM_VERSIONS_KEY)
            version = (upstream.value or {}).get(str(uri)) if upstream is not None else None
            if version is not None:
                needs.append(Need(int(version), f"read by {key.to_user_string()}'s materialization of {when} (run {run})"))
    needs += project.pins(uri) + project.unknown_pins(commit_times)
    needs += _in_flight(instance, commit_times)
    return needs


def _table_of(key: dg.AssetKey, metadata: Any) -> Optional[TableUri]:
    """The table an asset is, as the IO manager reads it; ``None`` for one of another IO manager."""
    try:
        return materialize_spec_for(key, metadata).uri
    except (ConfigError, ValueError):  # not [schema, table] and no table named: not a table of this lake
        return None


def _in_flight(instance: dg.DagsterInstance, commit_times: Mapping[int, dt.datetime]) -> list[Need]:
    from assetlake_dagster.lake.maintenance import Need

    needs = []
    statuses = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=statuses)):
        started = record.start_time or record.create_timestamp.timestamp()
        at_start = [v for v, t in commit_times.items() if t.timestamp() <= started]
        if at_start:
            needs.append(Need(max(at_start), f"current when run {record.dagster_run.run_id[:8]}, still in flight, started"))
    return needs
