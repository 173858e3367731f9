"""The strategy interface and the column checks every strategy runs before writing."""

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from pyspark.sql import DataFrame, SparkSession

from assetlake_dagster.delta_sql import is_delta_table, read
from assetlake_dagster.errors import WriteError
from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster.spec import RESERVED_COLUMNS, WriteStrategy, is_identifier
from assetlake_dagster.writes.commit import WriteResult, WriteTarget
from assetlake_dagster.writes.slices import describe_slice, partition_predicate


@dataclass(frozen=True)
class WritePlan:
    """What a write would do, for ``assetlake plan`` and logs.

    Attributes:
        operation: the Delta operation and its options.
        statement: the equivalent Spark SQL / DataFrame call.
        predicate: the row predicate that bounds the write, if any.
    """

    operation: str
    statement: str
    predicate: Optional[str] = None


class WriteStrategyBase(ABC):
    """One way of reconciling a slice with its Delta table, in exactly one commit."""

    strategy: WriteStrategy

    @abstractmethod
    def plan(self, target: WriteTarget, columns: Optional[Sequence[str]] = None) -> WritePlan:
        """Describe the write without touching Spark (``columns``: the SELECT's, if known)."""

    @abstractmethod
    def write(self, spark: SparkSession, df: DataFrame, target: WriteTarget) -> WriteResult:
        """Write ``df`` as the slice; one Delta commit, or none when nothing changes."""

    def fail(self, target: WriteTarget, problem: str, **kwargs: Any) -> WriteError:
        return WriteError(
            problem,
            asset=target.asset,
            table=str(target.uri),
            strategy=self.strategy.value,
            partition=target.stamp.partition,
            **kwargs,
        )


def check_columns(strategy: WriteStrategyBase, target: WriteTarget, columns: Sequence[str]) -> None:
    """Reject reserved, non-identifier and duplicate column names before any write.

    Delta compares names case-insensitively, so ``ID`` and ``id`` are duplicates. A
    partitioned write carries the managed ``_partition`` column (the IO manager adds it).
    """
    if target.partitioned:
        if PARTITION_COLUMN not in columns:
            raise strategy.fail(
                target,
                f"a partitioned write needs the {PARTITION_COLUMN} column naming each row's partition.",
                allow_retries=False,
            )
        columns = [c for c in columns if c != PARTITION_COLUMN]
    bad = [c for c in columns if not is_identifier(c)]
    if bad:
        raise strategy.fail(
            target,
            f"column names {bad} are not plain identifiers. "
            "Alias them in the SELECT, e.g. `count(*) AS order_count`.",
            allow_retries=False,
        )
    reserved = [c for c in columns if c.lower() in RESERVED_COLUMNS]
    if reserved:
        raise strategy.fail(
            target,
            f"columns {reserved} are reserved (managed by assetlake: "
            f"{', '.join(sorted(RESERVED_COLUMNS))}). Rename them in the SELECT.",
            allow_retries=False,
        )
    seen: dict[str, str] = {}
    for column in columns:
        if column.lower() in seen:
            raise strategy.fail(
                target,
                f"columns {seen[column.lower()]!r} and {column!r} collide (Delta column names "
                "are case-insensitive). Rename one of them.",
                allow_retries=False,
            )
        seen[column.lower()] = column


def check_rows_in_slice(strategy: WriteStrategyBase, df: DataFrame, target: WriteTarget) -> None:
    """Every row's ``_partition`` must be one of the slice's keys (never widen a write)."""
    outside = df.where(f"NOT ({partition_predicate(target.partitions)}) OR {PARTITION_COLUMN} IS NULL")
    sample = [r[PARTITION_COLUMN] for r in outside.select(PARTITION_COLUMN).limit(5).collect()]
    if sample:
        raise strategy.fail(
            target,
            f"rows name partitions outside this run's slice, e.g. {sample!r}. A run writes only "
            f"its own partitions ({describe_slice(target.partitions)}).",
            allow_retries=False,
        )


def check_schema_compatible(
    strategy: WriteStrategyBase, target: WriteTarget, source: Sequence[str], existing: Sequence[str]
) -> list[str]:
    """Require every existing column in the source; return the new (additive) columns.

    Delta would silently fill a missing column with NULL on append and merge; a dropped
    column is far more often a mistake than an intent, so it is an error here.
    """
    source_lower = {c.lower() for c in source}
    missing = [c for c in existing if c.lower() not in source_lower]
    if missing:
        raise strategy.fail(
            target,
            f"the rows lack the table's columns {missing}. Project them in the SELECT, or "
            "drop the key=/append options for one run to rebuild the table with replace.",
            allow_retries=False,
        )
    existing_lower = {c.lower() for c in existing}
    return [c for c in source if c.lower() not in existing_lower]


def delta_columns(spark: SparkSession, path: str) -> Optional[list[str]]:
    """The columns of the Delta table at ``path``, or ``None`` if there is no table."""
    if not is_delta_table(spark, path):
        return None
    return read(spark, path).columns
