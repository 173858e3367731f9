"""Data tests evaluated in Spark: each ``-- data_test`` line counts the failing rows of a scope.

This module knows Spark, not Dagster: :mod:`assetlake_dagster.checks` turns the outcomes
into asset check specs, results and run failures.

Every test is a query for *failing rows* over a scope DataFrame:

* before a write, the **staged** scope: what the table (or the slice) will hold once the
  write commits, computed from the new rows and the current table without writing;
* for a check run on its own, the **committed** scope: the table as it is.

Scope: the slice just written for a partitioned table, the current rows for SCD2 history,
the whole table otherwise; each write strategy computes both scopes (``staged_scope`` and
``committed_scope`` of its class in ``writes/``). Values (accepted values, partition keys,
arguments) are bound or compared through Column expressions, never spliced into SQL text.

A partitioned asset is tested partition by partition: each outcome records the partition
it tested, and a backfill batch (several partitions, one run) has one outcome per test per
partition.
"""

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

from pyspark.sql import DataFrame, SparkSession

from assetlake_dagster.delta_sql import is_delta_table, read
from assetlake_dagster.lake import Lake
from assetlake_dagster.spec import THIS_MARKER, DataTestKind, DataTestSpec
from assetlake_dagster.writes.slices import describe_slice, partition_predicate

#: How many failing values a result shows.
SAMPLE_SIZE = 5

@dataclass(frozen=True)
class TestOutcome:
    """The result of one data test on one scope.

    Attributes:
        failing: how many rows (or duplicated values, for ``unique``) fail.
        samples: up to :data:`SAMPLE_SIZE` failing values, as text.
        rows: how many rows were tested.
        scope: what was tested, in words (``staged slice 2024-01-01``, ``current rows``...).
        partition: the partition this outcome covers (``None``: an unpartitioned table).
    """

    test: DataTestSpec
    failing: int
    samples: tuple[str, ...]
    rows: int
    scope: str
    partition: Optional[str] = None

    @property
    def passed(self) -> bool:
        return self.failing == 0

    def message(self, table: str) -> str:
        """The failure as one line: test, column, count and samples."""
        shown = ", ".join(self.samples)
        return (
            f"data test {self.test.name} ({self.test.description}) failed on {table} ({self.scope}): "
            f"{self.failing} failing {'value' if self.test.kind is DataTestKind.UNIQUE else 'row'}"
            f"{'s' if self.failing != 1 else ''}, e.g. {shown}"
        )


def run_test(
    spark: SparkSession,
    lake: Lake,
    test: DataTestSpec,
    scope: DataFrame,
    scope_text: str,
    bindings: Mapping[str, Any],
) -> TestOutcome:
    """Evaluate one test on ``scope``: count the failures and keep a few samples."""
    failing, describe = _failing(spark, lake, test, scope, bindings)
    count = failing.count()
    samples = tuple(describe(r) for r in failing.limit(SAMPLE_SIZE).collect()) if count else ()
    return TestOutcome(test, count, samples, scope.count(), scope_text)


def _failing(spark: SparkSession, lake: Lake, test: DataTestSpec, scope: DataFrame, bindings: Mapping[str, Any]):
    columns = list(test.columns)

    def values(row) -> str:
        return ", ".join(f"{c}={row[c]!r}" for c in columns) if len(columns) > 1 else repr(row[columns[0]])

    def row_text(row) -> str:  # a few columns of a failing row, to find it
        return "{" + ", ".join(f"{k}: {v!r}" for k, v in list(row.asDict().items())[:4]) + "}"

    if test.kind is DataTestKind.NOT_NULL:
        return scope.where(scope[columns[0]].isNull()), row_text
    if test.kind is DataTestKind.UNIQUE:
        grouped = scope.groupBy(*columns).count().toDF(*columns, "_rows")
        dups = grouped.where(grouped["_rows"] > 1)
        return dups, lambda r: f"{values(r)} x{r['_rows']}"
    if test.kind is DataTestKind.ACCEPTED_VALUES:
        column = scope[columns[0]]
        bad = scope.where(column.isNotNull() & ~column.cast("string").isin(list(test.values)))
        return bad.select(*columns), values
    if test.kind is DataTestKind.RELATIONSHIPS:
        ref_path = lake.table_path(test.ref_uri)
        if not is_delta_table(spark, ref_path):
            # Nothing can match: every non-NULL value fails, with the reason in the sample.
            rows = scope.where(scope[columns[0]].isNotNull()).select(*columns)
            return rows, lambda r: f"{values(r)} ({test.ref_uri} has no table yet)"
        ref = read(spark, ref_path)
        ref = ref.select(ref[test.ref_column].alias("__assetlake_ref")).distinct()
        present = scope.where(scope[columns[0]].isNotNull())
        missing = present.join(ref, present[columns[0]] == ref["__assetlake_ref"], "left_anti").select(*columns)
        return missing, values
    # custom: the SELECT returns failing rows; {this} is the scope under test.
    view = f"_assetlake_this_{uuid.uuid4().hex}"
    scope.createOrReplaceTempView(view)
    sql = re.sub(rf"\b{THIS_MARKER}\b", view, test.query.sql)
    used = {name: bindings[name] for name in test.query.parameters if name in bindings}
    return spark.sql(sql, args=used or None), row_text


def evaluate(
    spark: SparkSession,
    lake: Lake,
    tests: Sequence[DataTestSpec],
    scope: DataFrame,
    scope_text: str,
    bindings: Mapping[str, Any],
) -> list[TestOutcome]:
    """Every test on one scope (the scope is cached once for all of them)."""
    if not tests:
        return []
    scope = scope.persist()
    try:
        return [run_test(spark, lake, t, scope, scope_text, bindings) for t in tests]
    finally:
        scope.unpersist()


def evaluate_run(
    spark: SparkSession,
    lake: Lake,
    tests: Sequence[DataTestSpec],
    scope: DataFrame,
    scope_text: str,
    args: Mapping[str, Any],
    slices: Sequence[Any],
) -> list[TestOutcome]:
    """Every test for one run.

    Unpartitioned: one outcome per test. Partitioned: one outcome per test per partition,
    in partition order, each with its ``partition`` set. A batch (several partitions in one
    run) is tested partition by partition, each on its own rows with its own
    ``{partition}`` bindings, exactly as separate runs would.

    Example:
        >>> outcomes = evaluate_run(spark, lake, spec.data_tests, scope, "staged slice d1...d2",
        ...                         {}, [PartitionSlice("d1"), PartitionSlice("d2")])  # doctest: +SKIP
        >>> [(o.partition, o.test.name, o.passed) for o in outcomes]  # doctest: +SKIP
        [('d1', 'unique_order_id', False), ('d2', 'unique_order_id', True)]
    """
    if not slices:
        return evaluate(spark, lake, tests, scope, scope_text, args)
    if len(slices) == 1:
        (piece,) = slices
        outcomes = evaluate(spark, lake, tests, scope, scope_text, {**args, **piece.bindings()})
        return [replace(o, partition=piece.key) for o in outcomes]
    if not tests:
        return []
    keys = [piece.key for piece in slices]
    outcomes: list[TestOutcome] = []
    # Persisted once for the batch: every partition's tests filter the same computed rows.
    scope = scope.persist()
    try:
        for piece in slices:
            part = scope.where(partition_predicate([piece.key]))
            text = _partition_scope_text(scope_text, keys, piece.key)
            for outcome in evaluate(spark, lake, tests, part, text, {**args, **piece.bindings()}):
                outcomes.append(replace(outcome, partition=piece.key))
    finally:
        scope.unpersist()
    return outcomes


def _partition_scope_text(scope_text: str, keys: Sequence[str], key: str) -> str:
    """One partition's scope in words: ``staged slice d1...d3`` -> ``staged slice d2``."""
    batch = describe_slice(keys)
    return scope_text.replace(batch, key, 1) if batch and batch in scope_text else f"{scope_text}, partition {key}"


def blocking_failures(outcomes: Sequence[TestOutcome]) -> list[TestOutcome]:
    return [o for o in outcomes if not o.passed and o.test.blocking]
