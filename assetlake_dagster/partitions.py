"""``-- partitioned`` and ``window=`` -> Dagster partitions, mappings and backfill policy;
a run's partition keys -> the values bound to ``:partition``, ``:partition_start`` and
``:partition_end``.

A slice is one partition. A backfill runs up to ``batch=`` partitions (default
:data:`~assetlake_dagster.spec.DEFAULT_BACKFILL_BATCH`) in one run, and the Delta IO
manager writes all of them in one commit.
"""

import datetime as dt
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import dagster as dg
from pyspark.sql import DataFrame, SparkSession

from assetlake_dagster.dagster_internals import time_window_of
from assetlake_dagster.spec import PARTITION_COLUMN, PartitionKind, PartitionSpec, UpstreamSpec, parse_partition_datetime

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
