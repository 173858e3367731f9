"""A ``-- freshness`` line (:class:`~assetlake_dagster.spec.FreshnessSpec`) as Dagster's
``FreshnessPolicy``, as the deadline checks of a time-partitioned asset, and as the
freshness checks of external tables (``build_definitions(source_freshness=…)``)."""

import re
from collections.abc import Mapping, Sequence
from typing import Optional, Union

import dagster as dg

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


def partition_deadline_checks(
    specs_and_assets: Sequence[tuple[SqlAssetSpec, dg.AssetsDefinition]],
) -> list[dg.AssetChecksDefinition]:
    """The checks of "yesterday's partition by 09:00": ``-- freshness cron`` on time partitions.

    Beside the asset's policy, Dagster's time-partition freshness check: at each tick of the
    cron, the last partition that had closed by then must have been materialized (an error
    otherwise). The asset's partitions are read from the built definition, so a translator's
    ``get_partitions_def`` counts.
    """
    checks: list[dg.AssetChecksDefinition] = []
    for spec, asset in specs_and_assets:
        freshness = spec.freshness
        if freshness is None or freshness.cron is None:
            continue
        if not isinstance(asset.partitions_def, dg.TimeWindowPartitionsDefinition):
            continue
        checks.extend(
            dg.build_time_partition_freshness_checks(
                assets=[asset],
                deadline_cron=freshness.cron,
                timezone=freshness.timezone or "UTC",
                severity=dg.AssetCheckSeverity.ERROR,
            )
        )
    return checks


def source_freshness_defaults(texts: SourceFreshness) -> dict[str, FreshnessSpec]:
    """``build_definitions(source_freshness=…)`` parsed, by ``schema.table`` (``"*"``: the rest).

    Each text is what follows ``-- freshness`` on a file's line, checked by the same grammar.
    A source's check has one severity, so a ``warn=`` is refused.

    Raises:
        ValueError: a text the line's grammar refuses (with its located message), or a
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
            raise ValueError(f"{origin}: '{table}' is not a table. Name it 'schema.table', or '*' for every external table.")
        spec = parse_line_text("freshness", text, origin)
        if spec.warn is not None:
            raise ValueError(
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
