"""A ``-- freshness`` line (:class:`~assetlake_dagster.spec.FreshnessSpec`) as Dagster's
``FreshnessPolicy``, as the deadline checks of a time-partitioned asset, and as the
freshness checks of external tables (``build_definitions(source_freshness=…)``).

On a time-partitioned asset the window form is each partition's lag: the partition that
closed at T must land by T + ``fail=`` (a warning past T + ``warn=``), judged by that
partition's own materialization (:func:`partition_lag_result`), not the asset's latest one,
which a backfill of an old partition would make look fresh.
"""

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Optional, Union

import dagster as dg

from assetlake_dagster.defs.dagster_internals import partition_keys_starting_in, time_window_of
from assetlake_dagster.defs.partitions import latest_partition_materialization
from assetlake_dagster.errors import UsageError
from assetlake_dagster.spec import FreshnessSpec, SqlAssetSpec, TableUri

_SOURCE_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*")


def freshness_policy(spec: FreshnessSpec) -> dg.FreshnessPolicy:
    """The policy of a parsed ``-- freshness`` line: a time window or a cron deadline.

    Example:
        >>> from datetime import timedelta
        >>> policy = freshness_policy(FreshnessSpec(fail=timedelta(hours=26), warn=timedelta(hours=24)))
        >>> policy.fail_window.to_timedelta(), policy.warn_window.to_timedelta()
        (datetime.timedelta(days=1, seconds=7200), datetime.timedelta(days=1))
    """
    if spec.cron is not None:
        assert spec.lower_bound is not None  # the parser requires it
        return dg.FreshnessPolicy.cron(
            deadline_cron=spec.cron, lower_bound_delta=spec.lower_bound, timezone=spec.timezone or "UTC"
        )
    assert spec.fail is not None  # the parser requires it
    return dg.FreshnessPolicy.time_window(fail_window=spec.fail, warn_window=spec.warn)


#: The sensor that runs the freshness checks when they are due.
FRESHNESS_SENSOR_NAME = "assetlake_freshness_checks"
#: ``build_definitions(source_freshness=…)``: the text after ``-- freshness``, for every
#: external table (``"*"``) or by ``schema.table``.
SourceFreshness = Union[None, str, Mapping[str, str]]
EVERY_SOURCE = "*"


def is_partition_lag(spec: SqlAssetSpec) -> bool:
    """Whether the file's ``-- freshness`` is a lag per partition (the window form on time
    partitions) rather than a policy on the asset as a whole."""
    freshness, partitioned = spec.freshness, spec.partitions
    return freshness is not None and freshness.cron is None and partitioned is not None and partitioned.kind.is_time_window


def partition_deadline_checks(
    specs_and_assets: Sequence[tuple[SqlAssetSpec, dg.AssetKey, dg.AssetsDefinition]],
) -> list[dg.AssetChecksDefinition]:
    """The checks of a time-partitioned asset's freshness, partition by partition.

    ``-- freshness cron`` ("yesterday's partition by 09:00"): beside the asset's policy,
    Dagster's time-partition freshness check: at each tick of the cron, the last partition
    that had closed by then must have been materialized (an error otherwise).
    ``-- freshness fail=… [warn=…]``: each partition's lag (:func:`partition_lag_check`),
    instead of a policy. The asset's partitions are read from the built definition, so a
    translator's ``get_partitions_def`` counts. Each entry: the file, its asset's key, and
    the definition holding it (a publish group's holds several).
    """
    checks: list[dg.AssetChecksDefinition] = []
    for spec, key, asset in specs_and_assets:
        freshness = spec.freshness
        if freshness is None or not isinstance(asset.partitions_def, dg.TimeWindowPartitionsDefinition):
            continue
        if is_partition_lag(spec):
            checks.append(partition_lag_check(key, asset.partitions_def, freshness))
            continue
        if freshness.cron is None:
            continue
        checks.extend(
            dg.build_time_partition_freshness_checks(
                # One key of a publish group's definition: Dagster reads its partitions from the graph.
                assets=[asset] if len(asset.keys) == 1 else [key],
                deadline_cron=freshness.cron,
                timezone=freshness.timezone or "UTC",
                severity=dg.AssetCheckSeverity.ERROR,
            )
        )
    return checks


#: Dagster's freshness sensor runs a passed check again once this time has come (its key).
FRESH_UNTIL_KEY = "dagster/fresh_until_timestamp"
#: The parameters Dagster's own freshness checks record on their spec and results.
FRESHNESS_PARAMS_KEY = "dagster/freshness_params"
#: Enough days before a time to hold the windows of any cadence around it (a month and more).
_WINDOW_REACH = timedelta(days=64)


def partition_lag_check(
    key: dg.AssetKey, partitions_def: dg.TimeWindowPartitionsDefinition, freshness: FreshnessSpec
) -> dg.AssetChecksDefinition:
    """The ``freshness_check`` of a time-partitioned asset with ``-- freshness fail=… [warn=…]``.

    Run by the freshness sensor when the next partition can be overdue (the result's
    ``dagster/fresh_until_timestamp``), and with every run that materializes the asset.

    Example:
        >>> from datetime import timedelta
        >>> daily = dg.DailyPartitionsDefinition(start_date="2024-01-01")
        >>> check = partition_lag_check(dg.AssetKey(["mart", "daily"]), daily, FreshnessSpec(fail=timedelta(hours=2)))
        >>> [k.name for k in check.check_keys]
        ['freshness_check']
    """
    assert freshness.fail is not None  # the parser requires it
    fail, warn = freshness.fail, freshness.warn
    params = {"lag_fail_seconds": fail.total_seconds(), **({"lag_warn_seconds": warn.total_seconds()} if warn else {})}
    lags = f"fail={_duration_text(fail)}" + (f", warn={_duration_text(warn)}" if warn else "")
    spec = dg.AssetCheckSpec(
        "freshness_check",
        asset=key,
        description=f"Each partition lands within its lag after it closes ({lags}).",
        metadata={FRESHNESS_PARAMS_KEY: dg.MetadataValue.json(params)},
    )

    @dg.multi_asset_check(specs=[spec], name=f"partition_lag_{key.to_python_identifier()}")
    def _check(context: dg.AssetCheckExecutionContext):
        yield partition_lag_result(context.instance, key, partitions_def, fail, warn)

    return _check


def partition_lag_result(
    instance: dg.DagsterInstance,
    key: dg.AssetKey,
    partitions_def: dg.TimeWindowPartitionsDefinition,
    fail: timedelta,
    warn: Optional[timedelta] = None,
    now: Optional[datetime] = None,
) -> dg.AssetCheckResult:
    """Judge the latest partition that is due: closed at T with T + lag past ``now``.

    Fails (an error) while the partition due by ``fail`` has no materialization of its own;
    else warns while the one due by ``warn`` has none; else passes, saying when the next
    partition can be overdue. A partition that landed after its deadline passes, with how late
    it was in the metadata.
    """
    now = now or datetime.now(timezone.utc)
    for lag, severity in ((fail, dg.AssetCheckSeverity.ERROR), (warn, dg.AssetCheckSeverity.WARN)):
        if lag is None:
            continue
        due = last_closed_window(partitions_def, now - lag)
        if due is None:
            continue
        partition = _partition_key(partitions_def, due)
        if _landed_at(instance, key, partition) is None:
            deadline = due.end + lag
            return dg.AssetCheckResult(
                passed=False,
                severity=severity,
                description=(
                    f"Partition {partition} closed at {_when(due.end)} and was due by {_when(deadline)} "
                    f"({_duration_text(lag)} later); it has not landed ({_duration_text(now - deadline)} overdue)."
                ),
                metadata={
                    "partition": partition,
                    "dagster/overdue_deadline_timestamp": dg.MetadataValue.timestamp(deadline),
                    "dagster/overdue_seconds": (now - deadline).total_seconds(),
                },
            )
    shortest = min(lag for lag in (fail, warn) if lag is not None)
    latest = last_closed_window(partitions_def, now - shortest)
    upcoming = next_window(partitions_def, latest.end if latest else None)
    metadata: dict[str, object] = {}
    if upcoming is not None:
        metadata[FRESH_UNTIL_KEY] = dg.MetadataValue.timestamp(upcoming.end + shortest)
    else:  # the definition's last partition is judged: nothing can become overdue
        metadata[FRESH_UNTIL_KEY] = dg.MetadataValue.timestamp(datetime(9999, 1, 1, tzinfo=timezone.utc))
    if latest is None:
        return dg.AssetCheckResult(passed=True, description="No partition is due yet.", metadata=metadata)
    partition = _partition_key(partitions_def, latest)
    landed = _landed_at(instance, key, partition)
    assert landed is not None  # judged above, within the same lags
    deadline = latest.end + shortest
    late = landed - deadline.timestamp()
    metadata.update({"partition": partition, "landed": dg.MetadataValue.timestamp(landed)})
    if late > 0:
        metadata["landed_late_seconds"] = late
    return dg.AssetCheckResult(
        passed=True,
        description=f"Partition {partition}, due by {_when(deadline)}, landed at {_when(landed)}"
        + (f" ({_duration_text(timedelta(seconds=late))} late)." if late > 0 else "."),
        metadata=metadata,
    )


def last_closed_window(partitions_def: dg.TimeWindowPartitionsDefinition, as_of: datetime) -> Optional[dg.TimeWindow]:
    """The asset's latest partition window that had ended by ``as_of`` (``None`` before its first).

    Example:
        >>> daily = dg.DailyPartitionsDefinition(start_date="2024-01-01")
        >>> last_closed_window(daily, datetime(2024, 3, 5, 1, 0, tzinfo=timezone.utc)).start.date()
        datetime.date(2024, 3, 4)
    """
    keys = partition_keys_starting_in(partitions_def, as_of - _WINDOW_REACH, as_of)
    for partition in reversed(keys):
        window = time_window_of(partitions_def, partition)
        if window.end <= as_of:
            return window if _in_definition(partitions_def, window) else None
    return None


def next_window(partitions_def: dg.TimeWindowPartitionsDefinition, after: Optional[datetime]) -> Optional[dg.TimeWindow]:
    """The asset's partition window that starts at ``after`` (its first one for ``None``), if any."""
    start = after or partitions_def.start
    keys = partition_keys_starting_in(partitions_def, start, start + _WINDOW_REACH)
    for partition in keys:
        window = time_window_of(partitions_def, partition)
        if window.start >= start:
            return window if _in_definition(partitions_def, window) else None
    return None


def _in_definition(partitions_def: dg.TimeWindowPartitionsDefinition, window: dg.TimeWindow) -> bool:
    end = partitions_def.end
    return window.start >= partitions_def.start and (end is None or window.end <= end)


def _partition_key(partitions_def: dg.TimeWindowPartitionsDefinition, window: dg.TimeWindow) -> str:
    return window.start.strftime(partitions_def.fmt)


def _landed_at(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str) -> Optional[float]:
    """When the partition's latest materialization was recorded, or ``None``."""
    record = latest_partition_materialization(instance, key, partition)
    return record.timestamp if record else None


def _when(moment: Union[datetime, float]) -> str:
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _duration_text(span: timedelta) -> str:
    """``2h``, ``1d 2h``, ``45m``: the grammar's units, largest first."""
    minutes = int(span.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{days}d"] * bool(days) + [f"{hours}h"] * bool(hours) + [f"{minutes}m"] * bool(minutes)
    return " ".join(parts) or f"{int(span.total_seconds())}s"


def source_freshness_defaults(texts: SourceFreshness) -> dict[str, FreshnessSpec]:
    """``build_definitions(source_freshness=…)`` parsed, by ``schema.table`` (``"*"``: the rest).

    Each text is what follows ``-- freshness`` on a file's line, checked by the same grammar.
    A source's check has one severity, so a ``warn=`` is refused.

    Raises:
        UsageError: (a ``ValueError``) a text the line's grammar refuses (with its located message), or a
            ``warn=``, or a key that is not ``schema.table`` or ``*``.

    Example:
        >>> sorted(source_freshness_defaults({"*": "fail=26h", "raw.events": "cron 0 9 * * * lower_bound=1h"}))
        ['*', 'raw.events']
    """
    from assetlake_dagster.annotations import parse_line_text

    if texts is None:
        return {}
    given = {EVERY_SOURCE: texts} if isinstance(texts, str) else dict(texts)
    defaults = {}
    for table, text in given.items():
        origin = f"source_freshness[{table!r}]"
        if table != EVERY_SOURCE and not _SOURCE_NAME_RE.fullmatch(table):
            raise UsageError(f"{origin}: '{table}' is not a table. Name it 'schema.table', or '*' for every external table.")
        spec = parse_line_text("freshness", text, origin)
        if spec.warn is not None:
            raise UsageError(
                f"{origin}: a source's freshness check has one severity: 'warn=' is not taken. Give 'fail=' only."
            )
        defaults[table.lower()] = spec
    return defaults


def source_freshness_checks(
    external: Mapping[TableUri, dg.AssetsDefinition], defaults: Mapping[str, FreshnessSpec]
) -> list[dg.AssetChecksDefinition]:
    """dbt's "source freshness": a check per external table that has a freshness.

    The check (Dagster's last-update freshness check) reads the table's latest observation,
    which the watch sensor and "Observe" record with the time of the table's last Delta
    commit (``dagster/last_updated_timestamp``): a table nobody has written for longer than
    ``fail=`` (or, with a cron, since ``lower_bound=`` before the last tick) fails it.
    """
    checks: list[dg.AssetChecksDefinition] = []
    for uri, asset in external.items():
        spec = defaults.get(uri.sql_name.lower()) or defaults.get(EVERY_SOURCE)
        if spec is None:
            continue
        if spec.cron is not None:
            assert spec.lower_bound is not None  # the parser requires it
            bound, cron, tz = spec.lower_bound, spec.cron, spec.timezone or "UTC"
        else:
            assert spec.fail is not None  # the parser requires it
            bound, cron, tz = spec.fail, None, "UTC"
        checks.extend(
            dg.build_last_update_freshness_checks(
                assets=[asset], lower_bound_delta=bound, deadline_cron=cron, timezone=tz,
                severity=dg.AssetCheckSeverity.ERROR,
            )
        )
    return checks


def freshness_sensor(
    checks: Sequence[dg.AssetChecksDefinition], name: str = FRESHNESS_SENSOR_NAME
) -> Optional[dg.SensorDefinition]:
    """The running sensor that launches the freshness checks when they are due; ``None`` for none."""
    if not checks:
        return None
    return dg.build_sensor_for_freshness_checks(
        freshness_checks=checks, name=name, default_status=dg.DefaultSensorStatus.RUNNING
    )
