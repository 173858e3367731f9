"""``build_definitions``: a project folder -> ``dagster.Definitions``."""

import contextlib
import dataclasses
import gc
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Optional, Union

import dagster as dg

from assetlake_dagster.defs.assets import SPARK_RESOURCE_KEY, build_sql_asset
from assetlake_dagster.defs.publish_groups import build_publish_group
from assetlake_dagster.defs.automation_conditions import generated_definitions
from assetlake_dagster.defs.maintenance_jobs import MaintainDefaults, maintain_defaults, maintained_spec, maintenance_definitions
from assetlake_dagster.defs.code_references import link_to_git
from assetlake_dagster.defs.external import external_table_asset
from assetlake_dagster.defs.freshness_checks import (
    FRESHNESS_SENSOR_NAME,
    SourceFreshness,
    freshness_sensor,
    partition_deadline_checks,
    source_freshness_checks,
    source_freshness_defaults,
)
from assetlake_dagster.defs.io_manager import DeltaIOManager
from assetlake_dagster.defs.neighbours import NeighbourTable, resolve_neighbours
from assetlake_dagster.project.dag import publish_groups
from assetlake_dagster.project.load import load_project
from assetlake_dagster.project.python_assets import AssetLike, PythonAsset, python_tables, with_write_kinds
from assetlake_dagster.defs.seed_assets import seed_asset
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.defs.translator import AssetlakeTranslator
from assetlake_dagster.spec import WriteStrategy
from assetlake_dagster.defs.watch import WATCH_SENSOR_NAME, build_watch_sensor


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    was_running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_running:
            gc.enable()


# Building allocates some hundred objects per file, all of them kept: the cyclic collector's
# passes over them find nothing to free (a 1000-file load ran ~10% faster without them).
# Paused for the build only, and only if it was running.
@_cyclic_gc_paused()
def build_definitions(
    project_dir: Union[str, os.PathLike],
    *,
    lake_root: Optional[str] = None,
    spark: Optional[SparkDeltaResource] = None,
    translator: Optional[AssetlakeTranslator] = None,
    python_assets: Sequence[AssetLike] = (),
    load_python_files: bool = True,
    schedules: Iterable = (),
    sensors: Iterable = (),
    jobs: Iterable = (),
    git_url: Optional[str] = None,
    git_branch: Optional[str] = None,
    io_manager_key: str = "io_manager",
    io_manager: Optional[DeltaIOManager] = None,
    spark_resource_key: str = SPARK_RESOURCE_KEY,
    executor: Optional[dg.ExecutorDefinition] = dg.in_process_executor,
    maintain: MaintainDefaults = None,
    neighbours: Sequence[NeighbourTable] = (),
    source_freshness: SourceFreshness = None,
    own_assets_only: bool = False,
    name_suffix: str = "",
) -> dg.Definitions:
    """Turn a folder of annotated SQL files (plus Python assets) into Dagster definitions.

    Every ``*.sql`` file under ``project_dir`` becomes an asset; tables they read that
    nothing produces become external assets. Every ``*.py`` file in the folder is imported
    and its assets added (turn off with ``load_python_files=False``). All files' load errors
    are raised together as one :class:`~assetlake_dagster.errors.ProjectError`.

    Args:
        project_dir: the folder of SQL files.
        lake_root: where the Delta tables live (default: ``$ASSETLAKE_LAKE_ROOT``, else
            ``.assetlake/lake``). Ignored when ``spark`` is given.
        spark: the Spark resource, for a cluster, Spark Connect or extra Spark conf.
        translator: overrides how specs become Dagster attributes.
        python_assets: more assets (written by the same Delta IO manager by default).
        load_python_files: import ``*.py`` files found in ``project_dir``.
        schedules, sensors, jobs: yours, added beside the generated ones; one of yours
            under a generated name replaces it.
        git_url: the project's repository on GitHub or GitLab (default
            ``$ASSETLAKE_GIT_URL``), e.g. ``https://github.com/acme/lakehouse``: when the
            project folder is in a git repository, each SQL asset's code reference links
            to its file there instead of the local path.
        git_branch: the branch those links name (default ``$ASSETLAKE_GIT_BRANCH``, else
            the checked-out branch, else ``main``).
        io_manager_key: the resource key of the Delta IO manager that writes the SQL assets
            and that external tables load through (default ``io_manager``: the code
            location's default IO manager). The component passes a key of its own, so the
            other assets of a ``dg`` project keep theirs; Python assets use the key they
            were defined with.
        io_manager: the Delta IO manager (default: one of ``spark``'s); passing the same
            instance to several calls lets their definitions merge (Dagster merges
            resources under one key only when they are the same object).
        spark_resource_key: the resource key of ``spark`` (default ``spark``); the SQL assets
            and maintenance jobs require it. The component passes a key of its own.
        executor: the executor of the definitions (default: in-process, one JVM for the
            whole run); ``None`` sets none, leaving the code location's (as the component
            does).
        maintain: scheduled maintenance for the tables without a ``-- maintain`` line:
            that line's text for every managed table (``"0 3 * * 0 vacuum=window"``), or
            texts by group name with ``"*"`` for every other group
            (``{"raw": "@daily vacuum=7d", "*": "0 3 * * 0"}``). A file's own line wins;
            ``manual`` files get none.
        neighbours: the tables other assetlake projects of the same code location produce
            (the component finds its sibling components'): a table read from one of them
            depends on that project's asset instead of becoming an external asset here,
            and a table (or asset key) both produce is a located :class:`ProjectError`.
        source_freshness: dbt's "source freshness" for the external tables: the text of a
            ``-- freshness`` line (``"fail=26h"``, ``"cron 0 9 * * * lower_bound=1h"``) for
            every external table, or texts by ``schema.table`` with ``"*"`` for the rest. Each
            becomes a freshness check fed by the table's observed last commit.
        own_assets_only: the automation sensor and the group jobs target these definitions'
            assets only, not every asset of the code location (the component sets it).
        name_suffix: appended to every generated name (jobs, schedules, sensors): the
            component sets ``__<its folder>`` when the project has other assetlake components.

    Returns:
        Definitions with the assets, the Spark resource under ``spark_resource_key``, the
        Delta IO manager under ``io_manager_key``, and the ``executor``;
        a job per group (``<group>_job``), a schedule per ``-- schedule`` line and, when
        an asset has an automation condition, the running ``assetlake_automation_sensor``
        (see :mod:`assetlake_dagster.defs.schedules` and :mod:`assetlake_dagster.defs.automation_conditions`);
        when the SQL reads external tables, the running ``assetlake_watch_external_tables``
        sensor (:mod:`assetlake_dagster.defs.watch`).

    Example:
        >>> defs = build_definitions("pipelines/", lake_root="/data/lake")  # doctest: +SKIP
        >>> dg.materialize(defs.resolve_all_asset_specs())  # doctest: +SKIP
    """
    translator = translator or AssetlakeTranslator()
    # The one load: every file's problems, the cross-file ones included, come from here.
    resource = spark or SparkDeltaResource(lake_root=lake_root)
    project = load_project(
        project_dir, python_assets=python_assets, load_python_files=load_python_files, catalogs=resource.known_catalogs()
    )
    # Seeds are Python assets of ours: the same managed write, the same upstream resolution.
    extra: list[AssetLike] = [
        *(with_write_kinds(asset) for asset in project.python_assets),
        *(seed_asset(seed, spark_resource_key, io_manager_key) for seed in project.seeds),
    ]
    # Every table of these definitions under its translated key: deps follow a translator
    # that renames keys (e.g. adds a prefix), so the graph has no phantom upstreams.
    keys_by_table = {spec.uri: translator.get_asset_key(spec) for spec in project.assets}
    keys_by_table.update({uri: translator.get_external_asset_key(uri) for uri in project.external})
    keys_by_table.update({t.uri: t.key for t in python_tables([PythonAsset(a) for a in extra])})
    # Tables a neighbour produces: its asset is the upstream, not an external asset of ours.
    elsewhere = resolve_neighbours(project.assets, keys_by_table, project.external, neighbours)
    keys_by_table.update({uri: table.key for uri, table in elsewhere.items()})
    project = dataclasses.replace(project, external=tuple(uri for uri in project.external if uri not in elsewhere))
    lake = resource.lake  # a new Lake (and a realpath of its root) per access
    translator = translator.bound_to(keys_by_table)
    views = {spec.uri: spec for spec in project.assets if spec.materialize.strategy is WriteStrategy.VIEW}
    # A publish group's files are one definition of several assets (defs/publish_groups.py).
    groups = publish_groups(project.assets)
    grouped = {spec.uri for members in groups.values() for spec in members}
    sql_assets = [
        *(
            build_sql_asset(spec, translator, lake, io_manager_key, spark_resource_key, views)
            for spec in project.assets if spec.uri not in grouped
        ),
        *(
            build_publish_group(group, members, translator, lake, io_manager_key, spark_resource_key, views)
            for group, members in groups.items()
        ),
    ]
    sql_assets = link_to_git(sql_assets, project_dir, git_url, git_branch)
    # Each file's asset key and the definition that holds it, in the files' order.
    definition_of = {key: asset for asset in sql_assets for key in asset.keys}
    by_file = [(spec, keys_by_table[spec.uri], definition_of[keys_by_table[spec.uri]]) for spec in project.assets]

    readers: dict = {}
    for spec in project.assets:
        for up in spec.upstreams:
            readers.setdefault(up.uri, []).append(spec.uri.sql_name)
    external_by_table = {
        uri: external_table_asset(translator, uri, readers.get(uri), lake, io_manager_key) for uri in project.external
    }
    external = list(external_by_table.values())
    freshness_checks = [
        *partition_deadline_checks(by_file),
        *source_freshness_checks(external_by_table, source_freshness_defaults(source_freshness)),
    ]
    schedules, sensors, jobs = list(schedules), list(sensors), list(jobs)
    # External tables: observed from their Delta logs, their readers run on new commits.
    # Readers as the definitions have them: a translator's partitions and deps, Python assets.
    watch = build_watch_sensor(project, keys_by_table, lake, assets=[*sql_assets, *extra], name=WATCH_SENSOR_NAME + name_suffix)
    checks_sensor = freshness_sensor(freshness_checks, name=FRESHNESS_SENSOR_NAME + name_suffix)
    for sensor in (watch, checks_sensor):
        if sensor is not None and all(s.name != sensor.name for s in sensors):
            sensors.append(sensor)  # a sensor of yours under its name replaces it
    generated = generated_definitions(
        by_file, extra, jobs=jobs, schedules=schedules, sensors=sensors,
        own_assets_only=own_assets_only, name_suffix=name_suffix,
    )
    defaults = maintain_defaults(maintain)
    with_maintenance = [maintained_spec(spec, translator.get_group_name(spec), defaults) for spec in project.assets]
    maintained = [maintenance_definitions(spec, keys_by_table[spec.uri], spark_resource_key) for spec in with_maintenance if spec]
    return dg.Definitions(
        assets=[*sql_assets, *external, *extra],
        asset_checks=freshness_checks,
        schedules=[*schedules, *generated.schedules, *(schedule for _, schedule in maintained)],
        sensors=[*sensors, *generated.sensors],
        jobs=[*jobs, *generated.jobs, *(job for job, _ in maintained)],
        resources={spark_resource_key: resource, io_manager_key: io_manager or DeltaIOManager(spark=resource)},
        executor=executor,
    )
