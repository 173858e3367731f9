"""The strategy interface and the column checks every strategy runs before writing.

A strategy class owns everything that differs between strategies: its options (class
attributes the IO manager and ``managed_write`` consult), its plan and write, the rows a
data test sees before the commit (staged scope) and after it (committed scope), and its
one-line description for ``assetlake plan``. The defaults here are replace's: the new rows
are the scope, and a partitioned table is scoped to the slice.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.lake.delta_sql import is_delta_table, read, table_schema
from assetlake_dagster.errors import WriteError
from assetlake_dagster.spec import PARTITION_COLUMN, RESERVED_COLUMNS, MaterializeSpec, WriteStrategy, is_identifier
from assetlake_dagster.writes.commit import WriteResult, WriteTarget
from assetlake_dagster.writes.slices import describe_slice, partition_predicate

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


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
    """One way of reconciling a slice with its Delta table, in exactly one commit.

    A new strategy subclasses this in its own ``writes/<name>.py``, sets ``strategy`` (the
    options it takes are its class's in :mod:`assetlake_dagster.spec.write_options`), implements :meth:`plan` and :meth:`write`, overrides the scopes
    when its data tests see more than the new rows, and is registered in
    ``writes/__init__.py``.

    Attributes:
        strategy: the ``WriteStrategy`` value it implements.
        whole_table_only: cannot write a partitioned table.
        current_view: keeps a ``<table>_current`` view of the current rows beside the table.

    Example:
        >>> class OverwriteIfEmpty(ReplaceWrite):  # doctest: +SKIP
        ...     strategy = WriteStrategy.OVERWRITE_IF_EMPTY
        ...     def write(self, spark, df, target): ...
    """

    strategy: WriteStrategy
    whole_table_only: bool = False
    current_view: bool = False

    @property
    def title(self) -> str:
        """The strategy's name in messages (``SCD2 history`` for history)."""
        return self.strategy.value

    @abstractmethod
    def plan(self, target: WriteTarget, columns: Optional[Sequence[str]] = None) -> WritePlan:
        """Describe the write without touching Spark (``columns``: the SELECT's, if known)."""

    @abstractmethod
    def write(self, spark: SparkSession, df: DataFrame, target: WriteTarget) -> WriteResult:
        """Write ``df`` as the slice; one Delta commit, or none when nothing changes."""

    def describe(self, spec: MaterializeSpec) -> str:
        """The strategy line of ``assetlake plan`` (its options included).

        Example:
            >>> strategy_for(WriteStrategy.APPEND).describe(spec.materialize)  # doctest: +SKIP
            'append'
        """
        return self.strategy.value

    def test_scope(self, partitioned: bool) -> str:
        """What the data tests run on, in words, for ``assetlake plan``."""
        return "the slice" if partitioned else "the table"

    def staged_scope(self, spark: SparkSession, rows: DataFrame, target: WriteTarget) -> tuple[DataFrame, str]:
        """What the scope will hold once ``rows`` are written to ``target``; nothing is written.

        The default (replace, and any strategy before its table exists): the rows. A
        partitioned table's scope is the slice's partitions only.

        Returns:
            The rows and the scope in words (``staged table``, ``staged slice d1...d3``).
        """
        return rows, staged_scope_text(target)

    def committed_scope(self, spark: SparkSession, target: WriteTarget) -> tuple[Optional[DataFrame], str]:
        """The table as committed, in the tests' scope (``None`` when there is no table yet).

        The default: the slice's partitions of a partitioned table, else the whole table.

        Example:
            >>> scope, text = strategy_for(WriteStrategy.REPLACE).committed_scope(spark, target)  # doctest: +SKIP
            >>> text  # doctest: +SKIP
            'committed slice 2024-01-01'
        """
        if not is_delta_table(spark, target.path):
            return None, "no table yet"
        table = read(spark, target.path)
        if target.partitioned:
            return table.where(partition_predicate(target.partitions)), f"committed slice {describe_slice(target.partitions)}"
        return table, "committed table"

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
    strategy: WriteStrategyBase, target: WriteTarget, source: StructType, existing: StructType
) -> list[str]:
    """Accept added columns only; return them. A dropped or retyped column is refused.

    Delta would silently fill a missing column with NULL on append and merge, and a merge
    casts a retyped column to the table's type (a DOUBLE becomes an INT without a word):
    both are far more often mistakes than intents, so they are errors here, with the diff.
    Nullability is not compared (Delta keeps its columns nullable).
    """
    source_types = {f.name.lower(): f.dataType.simpleString() for f in source.fields}
    missing = [f.name for f in existing.fields if f.name.lower() not in source_types]
    if missing:
        raise strategy.fail(
            target,
            f"the rows lack the table's columns {missing}. Project them in the SELECT, or "
            "drop the key=/append options for one run to rebuild the table with replace.",
            allow_retries=False,
        )
    retyped = [
        f"column {f.name} changes type {f.dataType.simpleString()} -> {source_types[f.name.lower()]}"
        for f in existing.fields
        if source_types[f.name.lower()] != f.dataType.simpleString()
    ]
    if retyped:
        raise strategy.fail(
            target,
            f"{'; '.join(retyped)}. A {strategy.strategy.value} keeps the table's column types "
            "(it accepts added columns only): cast the column back in the SELECT, or rebuild the "
            "table with an unpartitioned replace.",
            allow_retries=False,
        )
    existing_lower = {f.name.lower() for f in existing.fields}
    return [f.name for f in source.fields if f.name.lower() not in existing_lower]


def delta_schema(spark: SparkSession, path: str) -> Optional[StructType]:
    """The schema of the Delta table at ``path``, or ``None`` if there is no table."""
    return table_schema(spark, path)


def staged_scope_text(target: WriteTarget) -> str:
    """``staged table``, or ``staged slice <keys>`` for a partitioned write."""
    return f"staged {'slice ' + describe_slice(target.partitions) if target.partitioned else 'table'}"


def slice_rows(spark: SparkSession, target: WriteTarget) -> Optional[DataFrame]:
    """The table's current rows in the write's scope (the slice, if partitioned), or
    ``None`` when there is no table yet."""
    if not is_delta_table(spark, target.path):
        return None
    current = read(spark, target.path)
    return current.where(partition_predicate(target.partitions)) if target.partitioned else current
