"""A job per group, and ``-- schedule`` lines -> Dagster schedules on asset jobs.

**Jobs per group.** Every group with an asset that materializes (SQL or Python) gets a job
on the UI's Jobs page, ``<group>_job``, selecting the group (``AssetSelection.groups``),
its asset checks included. Dagster 1.13 refuses one asset job over assets with different
partitions definitions ("Selected assets must have the same partitions definitions"), so a
group whose assets have several is split: one job per partitions definition,
``<group>_<cadence>_job`` (``sales_daily_job``, ``sales_monthly_job``; the cadence is
hourly, daily, weekly, monthly, time, static, dynamic, multi or partitioned), and
``<group>_job`` for its unpartitioned assets. Two definitions of one cadence (two daily
ones with different starts) are numbered in the order of their first asset key:
``sales_daily_job``, then ``sales_daily_2_job``. A group of external tables only (the
``external`` group) has nothing to run and gets no job. A ``/`` in a group name becomes
``__``; two groups that then share a generated name (``a/b`` and ``a__b``) fail the load
(:func:`check_generated_names`).

**Schedules.** The SQL assets with a ``-- schedule`` line are bucketed by group, cron,
time zone and partitions definition; each bucket is one schedule on one job of its own
(``<schedule>_job``), RUNNING by default (the line is the user's explicit intent). A
bucket of one asset is named after the asset (``analytics__orders_schedule``: the key's
segments joined by ``__``); a bucket of several after the group (``sales_schedule``); when
a group has several such buckets they are numbered in the order of their first asset key
(``sales_schedule``, ``sales_schedule_2``). A cron without ``tz=`` is UTC.

What one tick requests, at the tick's *scheduled* time (not the time it is evaluated):

* time windows: the partition that closed last, e.g. the tick of 2026-01-05 02:00 of a
  daily asset runs ``2026-01-04``, a daily tick of a monthly asset the last whole month
  (the same month each day until the next one closes: late data is picked up). After
  ``end=`` the final partition is run until the window after it would have closed, then
  a tick skips (it does not rerun the final partition forever);
* static partitions: one run per key;
* dynamic partitions: one run per key that exists at the tick (a schedule refreshes what is
  there; an asset that should run when a key is *added* wants ``-- automation on_missing``);
* unpartitioned: one run.

Names are derived from the project alone, so they are stable across loads. A group job or
schedule you pass to ``build_definitions`` under a generated name replaces the generated
one (a schedule's own job is not replaceable: name yours differently).
"""

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

import dagster as dg

from assetlake_dagster.defs.dagster_internals import partition_keys_starting_in, time_window_of
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.spec import ScheduleSpec

#: The zone of a cron written without ``tz=``.
DEFAULT_CRON_TIMEZONE = "UTC"

#: What ``dg.define_asset_job`` returns (its class, UnresolvedAssetJobDefinition, is not exported).
AssetJob = Any


@dataclass(frozen=True)
class AssetEntry:
    """What naming jobs and schedules needs to know of one materializable asset.

    Attributes:
        key: the asset key (as the translator made it).
        group: the asset's group (as the translator made it).
        partitions_def: the asset's partitions, if any.
        schedule: the file's ``-- schedule`` line (SQL assets only).
        source: where the schedule line is, for descriptions (``orders.sql:3``).
        where: where the asset is defined, for errors (``orders.sql:1``; SQL assets only).
    """

    key: dg.AssetKey
    group: str
    partitions_def: Optional[dg.PartitionsDefinition] = None
    schedule: Optional[ScheduleSpec] = None
    source: str = ""
    where: str = ""

    @property
    def sort_key(self) -> str:
        return self.key.to_user_string()


def group_jobs(entries: Sequence[AssetEntry], *, suffix: str = "", own_assets_only: bool = False) -> list[AssetJob]:
    """One job per group, split by partitions definition when Dagster requires it.

    ``suffix`` ends each name; ``own_assets_only`` selects the group's assets among
    ``entries`` rather than the whole group of the code location (the component's case).

    Example:
        >>> daily = dg.DailyPartitionsDefinition("2026-01-01")
        >>> [j.name for j in group_jobs([AssetEntry(dg.AssetKey(["s", "a"]), "sales", daily),
        ...                              AssetEntry(dg.AssetKey(["s", "b"]), "sales")])]
        ['sales_job']
    """
    return [
        dg.define_asset_job(
            plan.name + suffix,
            # A publish group runs whole: a job with one of its members runs them all.
            selection=(plan.own if own_assets_only else plan.selection).required_multi_asset_neighbors(),
            description=plan.description,
        )
        for plan in _group_job_plans(entries)
    ]


@dataclass(frozen=True)
class _JobPlan:
    name: str
    selection: dg.AssetSelection
    description: str
    #: What the name stands for, for the clash error ("the group 'sales' (s/a in a.sql:1)").
    origin: str
    #: The same assets, named one by one: the group's assets among the entries.
    own: dg.AssetSelection


def _group_job_plans(entries: Sequence[AssetEntry]) -> list[_JobPlan]:
    plans = []
    for group, members in _by_group(entries).items():
        base = _name(group)
        origin = f"the group '{group}' ({_at(members[0], members[0].where)})"
        by_partitions = _by_partitions(members)
        partitioned = [p for p in by_partitions if p is not None]
        if len(partitioned) <= 1:
            description = f"Every asset of the group '{group}'."
            own = dg.AssetSelection.assets(*(m.key for m in members))
            plans.append(_JobPlan(f"{base}_job", dg.AssetSelection.groups(group), description, origin, own))
            continue
        for partitions_def, suffix in _cadence_names(by_partitions).items():
            keys = [m.key for m in by_partitions[partitions_def]]
            name = f"{base}_{suffix}_job" if suffix else f"{base}_job"
            what = f"partitioned {partitions_def}" if partitions_def is not None else "unpartitioned"
            description = f"The {what} assets of the group '{group}'."
            plans.append(_JobPlan(name, dg.AssetSelection.assets(*keys), description, origin, dg.AssetSelection.assets(*keys)))
    return plans


def check_generated_names(entries: Sequence[AssetEntry]) -> None:
    """Refuse two generated jobs or schedules of one name.

    Dagster names allow only letters, digits and ``_``, so a group ``a/b`` and a group
    ``a__b`` both make ``a__b_job`` (and an asset ``a/b`` alone on its cron makes the
    ``a__b_schedule`` of a group ``a/b``). Numbering one of them would rename the other's
    job and schedule when a group is added, and a schedule's state and history follow its
    name; so the load fails, naming both and where they are.

    Raises:
        ConfigError: every clash, one per line.

    Example:
        >>> check_generated_names([AssetEntry(dg.AssetKey(["x", "a"]), "a/b"), AssetEntry(dg.AssetKey(["y", "a"]), "a__b")])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        assetlake_dagster.errors.ConfigError: the job name 'a__b_job' is generated twice: ...
    """
    claims: dict[str, list[str]] = {}
    kinds: dict[str, str] = {}
    for plan in _group_job_plans(entries):
        claims.setdefault(plan.name, []).append(plan.origin)
        kinds[plan.name] = "job"
    for bucket in _schedule_buckets(entries):
        for name, kind in ((bucket.name, "schedule"), (f"{bucket.name}_job", "job")):
            claims.setdefault(name, []).append(bucket.origin)
            kinds[name] = kind
    problems = []
    for name, origins in claims.items():
        if len(origins) < 2:
            continue
        times = "twice" if len(origins) == 2 else f"{len(origins)} times"
        listed = ", ".join(f"for {o}" for o in origins[:-1]) + f" and for {origins[-1]}"
        problems.append(
            f"the {kinds[name]} name '{name}' is generated {times}: {listed}. Dagster names allow only "
            "letters, digits and '_' (a group's '/' becomes '__'), so rename one of them: its "
            "'-- group' line (or the translator's get_group_name), or the table."
        )
    if problems:
        raise ConfigError("\n".join(problems))


def _at(entry: AssetEntry, where: str) -> str:
    return entry.sort_key + (f" in {where}" if where else "")


def asset_schedules(entries: Sequence[AssetEntry], *, suffix: str = "") -> list[tuple[AssetJob, dg.ScheduleDefinition]]:
    """A schedule (and its job) per bucket of assets sharing group, cron, zone and partitions
    (``suffix`` ends each name).

    Example:
        >>> entry = AssetEntry(dg.AssetKey(["analytics", "orders"]), "sales", schedule=ScheduleSpec("0 2 * * *"))
        >>> [(job.name, schedule.name) for job, schedule in asset_schedules([entry])]
        [('analytics__orders_schedule_job', 'analytics__orders_schedule')]
    """
    found = []
    for b in _schedule_buckets(entries):
        name = b.name + suffix
        job = dg.define_asset_job(
            f"{b.name}_job{suffix}",
            selection=dg.AssetSelection.assets(*(m.key for m in b.members)).required_multi_asset_neighbors(),
            description=f"The assets of the schedule {name}.",
        )
        found.append((job, _schedule(name, job, b.cron, b.tz, b.partitions_def, b.members)))
    return found


@dataclass(frozen=True)
class _Bucket:
    name: str
    cron: str
    tz: str
    partitions_def: Optional[dg.PartitionsDefinition]
    members: list[AssetEntry]
    #: What the name stands for, for the clash error.
    origin: str


def _schedule_buckets(entries: Sequence[AssetEntry]) -> list[_Bucket]:
    found = []
    for group, members in _by_group([e for e in entries if e.schedule is not None]).items():
        buckets: dict[tuple, list[AssetEntry]] = {}
        for member in members:
            schedule = member.schedule
            assert schedule is not None
            tz = schedule.timezone or DEFAULT_CRON_TIMEZONE
            buckets.setdefault((schedule.cron, tz, member.partitions_def), []).append(member)
        shared = 0
        for (cron, tz, partitions_def), bucket in sorted(buckets.items(), key=lambda item: item[1][0].sort_key):
            first = bucket[0]
            if len(bucket) == 1:
                name = f"{_key_name(first.key)}_schedule"
                origin = f"the schedule of {first.sort_key} ({_at(first, first.source)})"
            else:
                shared += 1
                name = f"{_name(group)}_schedule" + (f"_{shared}" if shared > 1 else "")
                origin = f"the schedule of the group '{group}' ({_at(first, first.source)})"
            found.append(_Bucket(name, cron, tz, partitions_def, bucket, origin))
    return found


def without_replaced(generated: Iterable, given: Iterable) -> list:
    """The generated definitions whose names none of ``given`` takes (yours win)."""
    taken = {definition.name for definition in given}
    return [definition for definition in generated if definition.name not in taken]


def _schedule(
    name: str,
    job: AssetJob,
    cron: str,
    tz: str,
    partitions_def: Optional[dg.PartitionsDefinition],
    bucket: list[AssetEntry],
) -> dg.ScheduleDefinition:
    assets = ", ".join(m.sort_key for m in bucket)
    sources = ", ".join(m.source for m in bucket if m.source)
    what = _what_a_tick_runs(partitions_def)
    description = f"Runs {assets} at '{cron}' ({tz}): {what}." + (f" From {sources}." if sources else "")

    def evaluate(context: dg.ScheduleEvaluationContext):
        # A ScheduleDefinition's execution_fn yields its requests (a returned list is not unpacked).
        found = run_requests(partitions_def, context)
        yield from found if isinstance(found, list) else [found]

    return dg.ScheduleDefinition(
        name=name,
        cron_schedule=cron,
        execution_timezone=tz,
        job=job,
        execution_fn=evaluate,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=description,
    )


def run_requests(
    partitions_def: Optional[dg.PartitionsDefinition], context: dg.ScheduleEvaluationContext
) -> Union[list[dg.RunRequest], dg.SkipReason]:
    """What one tick of a schedule requests (see the module docstring).

    Example:
        >>> daily = dg.DailyPartitionsDefinition("2026-01-01")
        >>> at = dt.datetime(2026, 1, 5, 2, tzinfo=dt.timezone.utc)
        >>> [r.partition_key for r in run_requests(daily, dg.build_schedule_context(scheduled_execution_time=at))]
        ['2026-01-04']
    """
    if partitions_def is None:
        return [dg.RunRequest()]
    at = _scheduled_time(context)
    if isinstance(partitions_def, dg.DynamicPartitionsDefinition):
        keys = partitions_def.get_partition_keys(dynamic_partitions_store=context.instance)
    else:
        # Keys as of the scheduled time: a time window exists once it has closed.
        keys = partitions_def.get_partition_keys(current_time=at)
    if not keys:
        return dg.SkipReason(f"No partition of {partitions_def} exists at {at.isoformat()}.")
    if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        keys = keys[-1:]
        if partitions_def.end is not None and _closed_after(partitions_def, keys[0]) <= at:
            # Past end= the final partition stays the last one forever: without this every
            # tick reran it. It is rerun as any partition is, until the window
            # after it would have closed; then the partition that closed last is none.
            return dg.SkipReason(
                f"{keys[0]} is the last partition (end=) and no window closed since: "
                f"nothing to run at {at.isoformat()}."
            )
    # The run key makes a tick retried after a crash launch no second run (per tick).
    return [dg.RunRequest(partition_key=key, run_key=key) for key in keys]


def _closed_after(partitions_def: dg.TimeWindowPartitionsDefinition, key: str) -> dt.datetime:
    """When the window after ``key`` closes (or would, past the definition's end)."""
    window = time_window_of(partitions_def, key)
    # A window is at most about twice as long as the one before it (28- and 31-day months,
    # 23- and 25-hour days): the next key starts within this span.
    span = (window.end - window.start) * 2 + dt.timedelta(days=1)
    following = partition_keys_starting_in(partitions_def, window.end, window.end + span)[0]
    return time_window_of(partitions_def, following).end


def _scheduled_time(context: dg.ScheduleEvaluationContext) -> dt.datetime:
    try:
        return context.scheduled_execution_time
    # A context built by hand without a time (a manual "evaluate now") has none: now, then.
    except Exception:  # noqa: BLE001 - Dagster fails a check, with no public type to catch
        return dt.datetime.now(dt.timezone.utc)


def _what_a_tick_runs(partitions_def: Optional[dg.PartitionsDefinition]) -> str:
    if partitions_def is None:
        return "one run"
    if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        return "the partition that closed last"
    if isinstance(partitions_def, dg.DynamicPartitionsDefinition):
        return "one run per partition that exists then"
    return "one run per partition"


def _by_group(entries: Iterable[AssetEntry]) -> dict[str, list[AssetEntry]]:
    groups: dict[str, list[AssetEntry]] = {}
    for entry in sorted(entries, key=lambda e: e.sort_key):
        groups.setdefault(entry.group, []).append(entry)
    return dict(sorted(groups.items()))


def _by_partitions(members: list[AssetEntry]) -> dict[Optional[dg.PartitionsDefinition], list[AssetEntry]]:
    """Members by partitions definition, in the order of each one's first asset key."""
    found: dict[Optional[dg.PartitionsDefinition], list[AssetEntry]] = {}
    for member in members:  # sorted by key already
        found.setdefault(member.partitions_def, []).append(member)
    return found


def _cadence_names(by_partitions: dict) -> dict[Optional[dg.PartitionsDefinition], str]:
    """Each partitions definition's job-name suffix (``""`` for the unpartitioned assets)."""
    names: dict[Optional[dg.PartitionsDefinition], str] = {}
    seen: dict[str, int] = {}
    for partitions_def in by_partitions:
        if partitions_def is None:
            names[None] = ""
            continue
        cadence = _cadence(partitions_def)
        seen[cadence] = seen.get(cadence, 0) + 1
        names[partitions_def] = cadence if seen[cadence] == 1 else f"{cadence}_{seen[cadence]}"
    return names


def _cadence(partitions_def: dg.PartitionsDefinition) -> str:
    if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        schedule_type = partitions_def.schedule_type
        return schedule_type.value.lower() if schedule_type is not None else "time"
    if isinstance(partitions_def, dg.StaticPartitionsDefinition):
        return "static"
    if isinstance(partitions_def, dg.DynamicPartitionsDefinition):
        return "dynamic"
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return "multi"
    return "partitioned"


def _name(group: str) -> str:
    """A group as part of a Dagster name (letters, digits and ``_``)."""
    return group.replace("/", "__")


def _key_name(key: dg.AssetKey) -> str:
    return "__".join(re.sub(r"\W", "_", part) for part in key.path)

