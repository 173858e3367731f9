"""``-- partitioned`` and ``window=`` -> Dagster partitions, mappings and backfill policy;
a run's partition keys -> the values bound to ``:partition``, ``:partition_start`` and
``:partition_end``.

A slice is one partition. A backfill runs up to ``batch=`` partitions (default
:data:`~assetlake_dagster.spec.DEFAULT_BACKFILL_BATCH`) in one run, and the Delta IO
manager writes all of them in one commit.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import dagster as dg

from assetlake_dagster.defs.dagster_internals import time_window_of
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.writes.slices import describe_slice
from assetlake_dagster.spec import PARTITION_COLUMN, PartitionKind, PartitionSpec, UpstreamSpec, parse_partition_datetime

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import Column, DataFrame, SparkSession


_TIME_WINDOW_CLASSES = {
    PartitionKind.HOURLY: dg.HourlyPartitionsDefinition,
    PartitionKind.DAILY: dg.DailyPartitionsDefinition,
    PartitionKind.WEEKLY: dg.WeeklyPartitionsDefinition,
    PartitionKind.MONTHLY: dg.MonthlyPartitionsDefinition,
}


def partitions_definition(spec: PartitionSpec) -> dg.PartitionsDefinition:
    """The Dagster partitions definition of a ``-- partitioned`` line.

    Example:
        >>> from assetlake_dagster.spec import PartitionKind, PartitionSpec
        >>> pd = partitions_definition(PartitionSpec(PartitionKind.DAILY, start="2024-01-01", end="2024-01-04"))
        >>> pd.get_partition_keys()
        ['2024-01-01', '2024-01-02', '2024-01-03']
    """
    if spec.kind is PartitionKind.STATIC:
        return dg.StaticPartitionsDefinition(list(spec.values))
    if spec.kind is PartitionKind.DYNAMIC:
        return dg.DynamicPartitionsDefinition(name=spec.name)
    cls = _TIME_WINDOW_CLASSES[spec.kind]
    return cls(
        start_date=parse_partition_datetime(spec.start),
        end_date=parse_partition_datetime(spec.end) if spec.end else None,
        timezone=spec.timezone or "UTC",
    )


def has_partition_key(spec: PartitionSpec, key: str) -> bool:
    """Whether ``key`` is a partition of a ``-- partitioned`` line (any key, for dynamic ones).

    Example:
        >>> from assetlake_dagster.spec import PartitionKind, PartitionSpec
        >>> daily = PartitionSpec(PartitionKind.DAILY, start="2024-01-01")
        >>> has_partition_key(daily, "2024-01-05"), has_partition_key(daily, "2023-12-31")
        (True, False)
    """
    if spec.kind is PartitionKind.DYNAMIC:
        return True
    return partitions_definition(spec).has_partition_key(key)


def backfill_policy(spec: PartitionSpec) -> dg.BackfillPolicy:
    """Up to ``batch=`` partitions per backfill run (each run is one Delta commit)."""
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=spec.batch_size)


def partition_mapping(upstream: UpstreamSpec) -> Optional[dg.PartitionMapping]:
    """``window=7d`` -> the 7 upstream partitions ending at the downstream one.

    Without a window Dagster's defaults apply: the same granularity maps one to one,
    coarser or finer time partitions map by overlapping windows, and an unpartitioned
    upstream feeds every partition.

    Example:
        >>> from assetlake_dagster.spec import TableUri, WindowSpec
        >>> partition_mapping(UpstreamSpec(TableUri("s", "t"), window=WindowSpec(7, PartitionKind.DAILY)))
        TimeWindowPartitionMapping(start_offset=-6, end_offset=0, allow_nonexistent_upstream_partitions=True)
    """
    if upstream.window is None:
        return None
    # Windows that reach before the upstream's first partition read what exists.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # the option is "beta" in Dagster 1.13
        return dg.TimeWindowPartitionMapping(
            start_offset=-(upstream.window.count - 1), end_offset=0, allow_nonexistent_upstream_partitions=True
        )


@dataclass(frozen=True)
class PartitionSlice:
    """One partition a run writes, and the values its SQL binds.

    Attributes:
        key: the partition key (also the ``_partition`` value of its rows).
        start: time windows: the window's start (inclusive, time-zone aware).
        end: time windows: the window's end (exclusive).
    """

    key: str
    start: Optional[dt.datetime] = None
    end: Optional[dt.datetime] = None

    def bindings(self) -> dict[str, Any]:
        """The named parameters ``partition``, ``partition_start``, ``partition_end``.

        Example:
            >>> PartitionSlice("a' OR 1=1 --").bindings()
            {'partition': "a' OR 1=1 --"}
        """
        values: dict[str, Any] = {"partition": self.key}
        if self.start is not None:
            values["partition_start"] = self.start
            values["partition_end"] = self.end
        return values


def with_partition_key(spark: SparkSession, rows: DataFrame, key: str) -> DataFrame:
    """``rows`` plus the managed ``_partition`` column set to ``key`` (bound, not spliced)."""
    return spark.sql(f"SELECT *, :partition AS {PARTITION_COLUMN} FROM {{rows}}", args={"partition": key}, rows=rows)


def _event_time_key(kind: PartitionKind, t: Column) -> Column:
    """The partition key of a row of ``kind`` from its local time ``t`` (a timestamp in the
    partitions' zone): the key format of Dagster's time windows."""
    from pyspark.sql import functions as F

    d = F.to_date(t)
    if kind is PartitionKind.HOURLY:
        return F.date_format(F.date_trunc("hour", t), "yyyy-MM-dd-HH:mm")
    if kind is PartitionKind.WEEKLY:  # Dagster's weeks start on Sunday (dayofweek: Sunday is 1)
        return F.date_format(F.date_sub(d, F.dayofweek(d) - 1), "yyyy-MM-dd")
    if kind is PartitionKind.MONTHLY:
        return F.date_format(F.trunc(d, "MM"), "yyyy-MM-dd")
    if kind is PartitionKind.DAILY:
        return F.date_format(d, "yyyy-MM-dd")
    raise ValueError(f"{kind.value} partitions have no time windows")


def event_time_range(slices: Sequence["PartitionSlice"]) -> dict[str, dt.datetime]:
    """The ``:partition_start`` and ``:partition_end`` of a run's whole range of windows."""
    return {"partition_start": min(s.start for s in slices), "partition_end": max(s.end for s in slices)}


def with_event_time_partitions(
    spark: SparkSession, rows: DataFrame, partitions: PartitionSpec, keys: Sequence[str], where: str
) -> DataFrame:
    """``rows`` plus ``_partition``, the window of ``partitions`` that each row's
    ``event_time`` column falls in; a row outside the run's ``keys`` fails the write.

    A TIMESTAMP is placed in the partitions' time zone, a DATE (or a TIMESTAMP_NTZ) is
    taken as that zone's local day (or time). ``where`` (``file:line``) starts the errors.

    Example:
        >>> spec = PartitionSpec(PartitionKind.DAILY, start="2024-01-01", event_time="paid_at")
        >>> rows = spark.sql("SELECT TIMESTAMP'2024-01-02 23:30:00' AS paid_at")  # doctest: +SKIP
        >>> with_event_time_partitions(spark, rows, spec, ["2024-01-02"], "f.sql:5").first()._partition  # doctest: +SKIP
        '2024-01-02'
    """
    from pyspark.sql import functions as F, types as T

    column = partitions.event_time
    field = next((f for f in rows.schema.fields if f.name.lower() == column.lower()), None)
    if field is None:
        raise ConfigError(f"{where}: the event_time column '{column}' is not among the SELECT's columns. Project it.")
    value = rows[field.name]
    zone = partitions.timezone or "UTC"
    if isinstance(field.dataType, T.TimestampType):
        # A TIMESTAMP is an instant: its wall time in the partitions' zone, whatever the session's zone.
        session_zone = spark.conf.get("spark.sql.session.timeZone")
        local = F.from_utc_timestamp(F.to_utc_timestamp(value, session_zone), zone)
    elif isinstance(field.dataType, T.TimestampNTZType):
        local = value
    elif isinstance(field.dataType, T.DateType) and partitions.kind is not PartitionKind.HOURLY:
        local = value.cast("timestamp_ntz")
    else:
        needed = "TIMESTAMP" if partitions.kind is PartitionKind.HOURLY else "DATE or TIMESTAMP"
        raise ConfigError(
            f"{where}: the event_time column '{column}' is {field.dataType.simpleString().upper()}; "
            f"{partitions.kind.value} partitions need a {needed}. Cast it in the SELECT."
        )
    key = _event_time_key(partitions.kind, local)
    outside = F.concat(
        F.lit(f"{where}: a row's {column} ("),
        F.coalesce(value.cast("string"), F.lit("NULL")),
        F.lit(f") is outside this run's partitions ({describe_slice(keys)}). Filter the SELECT on "
              "{partition_start} and {partition_end}; nothing was written."),
    )
    return rows.withColumn(PARTITION_COLUMN, F.when(key.isin(list(keys)), key).otherwise(F.raise_error(outside)))


def run_slices(context: dg.AssetExecutionContext) -> list[PartitionSlice]:
    """The partitions this run writes, in order (one for a single-partition run)."""
    partitions_def = context.assets_def.partitions_def
    keys: Sequence[str] = context.partition_keys
    if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        slices = []
        for key in keys:
            window = time_window_of(partitions_def, key)
            slices.append(PartitionSlice(key, window.start, window.end))
        return slices
    return [PartitionSlice(key) for key in keys]


def latest_partition_materialization(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str
) -> Optional[dg.EventLogRecord]:
    """The record of the partition's latest materialization, or ``None`` (a check's target,
    a partition's landing time)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1
    ).records
    return records[0] if records else None
