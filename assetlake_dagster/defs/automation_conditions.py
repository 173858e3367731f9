"""``-- automation`` -> Dagster declarative automation; the sensor, jobs and schedules of a project.

Each condition is Dagster's own, adjusted where the product asks more of it (each choice
checked in ``assetlake_dagster_tests/dagster/test_automation.py``):

* ``eager`` -> ``AutomationCondition.eager()`` without ``in_latest_time_window()``, as
  Dagster's docs show under "Updating older time partitions". Eager alone considers only
  the latest time partition; late data for an older upstream partition must reach the
  same partition downstream too. It still runs partition by partition: a downstream
  partition is requested when one of *its* upstream partitions updates. "Updates" means its
  data version changed (:func:`deps_data_changed`): a run that changed no row wakes nobody.
* ``on_cron <cron> [tz=]`` -> ``AutomationCondition.on_cron(cron, cron_timezone=tz or
  "UTC")``: after each tick, once every upstream has updated since it; for time-window
  partitions the latest partition, like a schedule.
* ``on_missing`` -> ``AutomationCondition.on_missing()``, Dagster's meaning unchanged: a
  partition is requested when it *becomes* missing after the condition is first evaluated
  (a new day, a new dynamic key), never a table or partitions that were missing all along
  (materialize those once, or backfill them), and for time windows only the latest.
* Upstreams that are external tables (no file or Python asset produces them) are left out
  of "no upstream is missing" (eager, on_missing) and "every upstream updated since the
  tick" (on_cron), with ``.allow(AssetSelection.all().materializable())``: Dagster counts an
  external asset as missing until something *materializes* it, and an observation (the
  watch sensor's) is no update, so an asset reading an external table would never run.
  A change of an external table reaches its readers through the watch sensor instead, so
  eager's "any upstream updated" leaves external tables out too: they are observable (their
  Delta version is their data version), and Dagster would turn a new version of an
  unpartitioned table into a request for every partition of a partitioned reader.
* Every condition is AND-ed with ``AutomationCondition.all_deps_blocking_checks_passed()``:
  none of Dagster's three includes it (``eager()`` waits for upstreams that are missing or
  in progress, not for failed checks), and a failed blocking data test of an upstream must
  hold the downstream back. (Our blocking tests already stop a failing write before its
  commit; this also covers a check run on its own that fails against the committed table.)

The conditions need a sensor to be evaluated: :func:`automation_sensor` adds
``assetlake_automation_sensor``, RUNNING when the code location loads, over every asset (so
Dagster adds no ``default_automation_condition_sensor`` of its own), except the assets a
sensor of yours already evaluates.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Optional

import dagster as dg

from assetlake_dagster.defs.dagster_internals import condition_without, is_materializable, sensor_asset_selection
from assetlake_dagster.errors import display_path
from assetlake_dagster.project.python_assets import AssetLike
from assetlake_dagster.defs.schedules import (
    DEFAULT_CRON_TIMEZONE,
    AssetEntry,
    asset_schedules,
    check_generated_names,
    group_jobs,
    without_replaced,
)
from assetlake_dagster.spec import AutomationKind, AutomationSpec, SqlAssetSpec

#: The sensor that evaluates the automation conditions of a project's assets.
AUTOMATION_SENSOR_NAME = "assetlake_automation_sensor"
#: The upstreams the conditions wait for: not external tables (see the module docstring).
MATERIALIZABLE = dg.AssetSelection.all().materializable()


def automation_condition(spec: AutomationSpec) -> dg.AutomationCondition:
    """The Dagster automation condition of an ``-- automation`` line (see the module docstring).

    Example:
        >>> from assetlake_dagster.spec import AutomationKind, AutomationSpec
        >>> automation_condition(AutomationSpec(AutomationKind.EAGER)).get_label()
        'eager'
    """
    A = dg.AutomationCondition
    if spec.kind is AutomationKind.EAGER:
        condition = condition_without(A.eager(), A.in_latest_time_window())
        # An external table's new data version (an observation) is not an update here: the
        # watch sensor requests exactly the partitions it changed (Dagster would map an
        # unpartitioned upstream's update to every partition of the reader).
        updated = A.any_deps_updated()
        condition = condition.replace(updated.get_label(), deps_data_changed().allow(MATERIALIZABLE))
        label = "eager"
    elif spec.kind is AutomationKind.ON_CRON:
        tz = spec.timezone or DEFAULT_CRON_TIMEZONE
        cron = spec.cron or ""
        condition = A.on_cron(cron, cron_timezone=tz)
        updated = A.all_deps_updated_since_cron(cron, tz)
        condition = condition.replace(updated.get_label(), updated.allow(MATERIALIZABLE))
        label = f"on_cron({cron}, {tz})"
    else:
        condition = A.on_missing()
        label = "on_missing"
    missing = A.any_deps_missing()
    condition = condition.replace(missing.get_label(), missing.allow(MATERIALIZABLE))
    return (condition & A.all_deps_blocking_checks_passed()).with_label(label)


def deps_data_changed() -> dg.AutomationCondition:
    """Dagster's ``any_deps_updated()`` with "updated" meaning "its data version changed".

    A run that found its inputs unchanged, or a merge that changed no row, records a
    materialization with the data version it had (the Delta version holding its rows): its
    eager readers have nothing new to read, so they are not requested.

    Example:
        >>> deps_data_changed().get_label()
        'any_deps_updated'
    """
    A = dg.AutomationCondition
    changed = (A.data_version_changed() & ~A.executed_with_root_target()).with_label("data_version_changed_without_root")
    return A.any_deps_match(changed | A.will_be_requested()).with_label("any_deps_updated")


def automation_sensor(
    assets: Iterable[AssetLike],
    sensors: Iterable[dg.SensorDefinition] = (),
    *,
    own_assets_only: bool = False,
    name: str = AUTOMATION_SENSOR_NAME,
) -> Optional[dg.AutomationConditionSensorDefinition]:
    """The sensor evaluating the automation conditions of ``assets``, if any asset has one.

    Args:
        assets: every asset of the definitions.
        sensors: your sensors; the assets your own automation condition sensors target
            are left to them.
        own_assets_only: target ``assets`` only, not every asset of the code location
            (the component: the project's other assets are not its business).
        name: the sensor's name.

    Example:
        >>> automation_sensor([dg.AssetSpec("a", automation_condition=dg.AutomationCondition.eager())]).name
        'assetlake_automation_sensor'
    """
    specs = list(_specs(assets))
    if not any(spec.automation_condition is not None for spec in specs):
        return None
    target = dg.AssetSelection.assets(*(spec.key for spec in specs)) if own_assets_only else dg.AssetSelection.all()
    for sensor in sensors:
        if isinstance(sensor, dg.AutomationConditionSensorDefinition):
            selection = sensor_asset_selection(sensor)
            if selection is not None:
                target = target - selection
    return dg.AutomationConditionSensorDefinition(
        name,
        target=target,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Evaluates the automation conditions of the assets ('-- automation' lines).",
    )


@dataclass(frozen=True)
class GeneratedDefinitions:
    """The jobs, schedules and sensors generated for a project, beside the user's own."""

    jobs: tuple = ()
    schedules: tuple = ()
    sensors: tuple = ()


def generated_definitions(
    sql_files: Sequence[tuple[SqlAssetSpec, dg.AssetKey, dg.AssetsDefinition]],
    other_assets: Sequence[AssetLike],
    *,
    jobs: Iterable = (),
    schedules: Iterable = (),
    sensors: Iterable = (),
    own_assets_only: bool = False,
    name_suffix: str = "",
) -> GeneratedDefinitions:
    """A job per group, a schedule per ``-- schedule`` bucket and the automation sensor.

    Args:
        sql_files: each SQL file, its asset's key and the definition holding it (a
            publish group's definition holds several).
        other_assets: the Python assets (and any other asset of the definitions).
        jobs, schedules, sensors: yours; a group job, schedule or sensor of yours under a
            generated name replaces the generated one.
        own_assets_only: the automation sensor and the group jobs target these assets only.
        name_suffix: appended to every generated name (jobs, schedules, the sensor).

    Example:
        >>> generated = generated_definitions(sql_files, python_assets)  # doctest: +SKIP
        >>> sorted(job.name for job in generated.jobs)  # doctest: +SKIP
        ['analytics__orders_schedule_job', 'sales_job']
    """
    jobs, schedules, sensors = list(jobs), list(schedules), list(sensors)
    entries = [_sql_entry(spec, key, assets_def) for spec, key, assets_def in sql_files]
    sql_assets = list({id(assets_def): assets_def for _, _, assets_def in sql_files}.values())
    entries += [entry for asset in other_assets for entry in _python_entries(asset)]
    check_generated_names(entries)
    taken = {schedule.name for schedule in schedules}
    scheduled = [(job, schedule) for job, schedule in asset_schedules(entries, suffix=name_suffix) if schedule.name not in taken]
    sensor = automation_sensor(
        [*sql_assets, *other_assets], sensors, own_assets_only=own_assets_only, name=AUTOMATION_SENSOR_NAME + name_suffix
    )
    return GeneratedDefinitions(
        jobs=(
            *without_replaced(group_jobs(entries, suffix=name_suffix, own_assets_only=own_assets_only), jobs),
            *(job for job, _ in scheduled),
        ),
        schedules=tuple(schedule for _, schedule in scheduled),
        sensors=tuple(without_replaced([sensor] if sensor is not None else [], sensors)),
    )


def _sql_entry(spec: SqlAssetSpec, key: dg.AssetKey, assets_def: dg.AssetsDefinition) -> AssetEntry:
    asset_spec = assets_def.get_asset_spec(key)
    line = spec.schedule.location.line if spec.schedule and spec.schedule.location else None
    return AssetEntry(
        key=asset_spec.key,
        group=asset_spec.group_name or "default",
        partitions_def=asset_spec.partitions_def,
        schedule=spec.schedule,
        source=f"{display_path(spec.path)}:{line}" if line else "",
        where=f"{display_path(spec.path)}:{spec.materialize.location.line if spec.materialize.location else 1}",
    )


def _python_entries(asset: AssetLike) -> list[AssetEntry]:
    if not isinstance(asset, dg.AssetsDefinition) or not is_materializable(asset):
        return []  # an AssetSpec (or an external AssetsDefinition) runs nothing
    entries = []
    for key in sorted(asset.keys, key=lambda k: k.to_user_string()):
        spec = asset.get_asset_spec(key)
        entries.append(AssetEntry(key=key, group=spec.group_name or "default", partitions_def=spec.partitions_def))
    return entries


def _specs(assets: Iterable[AssetLike]) -> Iterable[dg.AssetSpec]:
    """The spec of every asset key of ``assets``."""
    for asset in assets:
        if isinstance(asset, dg.AssetSpec):
            yield asset
        elif isinstance(asset, dg.AssetsDefinition):
            for key in asset.keys:
                yield asset.get_asset_spec(key)
