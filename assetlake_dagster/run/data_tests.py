"""Data tests evaluated in Spark: each ``-- data_test`` line counts the failing rows of a scope.

This module knows Spark, not Dagster: :mod:`assetlake_dagster.defs.checks` turns the outcomes
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
partition. A batch's built-in tests run as one grouped Spark job each, not one per partition.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.lake.delta_sql import is_delta_table, read
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import PARTITION_COLUMN, SAMPLE_SIZE, THIS_MARKER, DataTestKind, DataTestSpec, TableUri, TestOutcome
from assetlake_dagster.writes.slices import describe_slice, partition_predicate

if TYPE_CHECKING:  # PySpark loads when tests run, not with the definitions (defs/checks.py)
    from pyspark.sql import DataFrame, SparkSession

def run_test(
    spark: SparkSession,
    lake: Lake,
    test: DataTestSpec,
    scope: DataFrame,
    scope_text: str,
    bindings: Mapping[str, Any],
) -> TestOutcome:
    """Evaluate one test on ``scope``: count the failures and keep a few samples."""
    (outcome,) = evaluate(spark, lake, [test], scope, scope_text, bindings)
    return outcome


def evaluate(
    spark: SparkSession,
    lake: Lake,
    tests: Sequence[DataTestSpec],
    scope: DataFrame,
    scope_text: str,
    bindings: Mapping[str, Any],
    elsewhere: Mapping[TableUri, Any] = {},
) -> list[TestOutcome]:
    """Every test on one scope (the scope is cached once for all of them)."""
    return _evaluate_groups(spark, lake, tests, scope, {None: (scope_text, bindings)}, batch=False, elsewhere=elsewhere)


def evaluate_run(
    spark: SparkSession,
    lake: Lake,
    tests: Sequence[DataTestSpec],
    scope: DataFrame,
    scope_text: str,
    args: Mapping[str, Any],
    slices: Sequence[Any],
    elsewhere: Mapping[TableUri, Any] = {},
) -> list[TestOutcome]:
    """Every test for one run.

    ``elsewhere``: tables read from another lake at a pinned version, ``{table: (path,
    version)}`` (a dev run's prod inputs, :mod:`assetlake_dagster.run.defer`), for the tables a
    ``relationships`` test reads.

    Unpartitioned: one outcome per test. Partitioned: one outcome per test per partition,
    in partition order, each with its ``partition`` set. A batch (several partitions in one
    run) is judged partition by partition, each on its own rows with its own
    ``{partition}`` bindings, exactly as separate runs would be; the built-in tests of a
    batch are evaluated for all its partitions at once (one Spark job per test, grouped
    by partition), a custom SQL test once per partition (its bindings differ).

    Example:
        >>> outcomes = evaluate_run(spark, lake, spec.data_tests, scope, "staged slice d1...d2",
        ...                         {}, [PartitionSlice("d1"), PartitionSlice("d2")])  # doctest: +SKIP
        >>> [(o.partition, o.test.name, o.passed) for o in outcomes]  # doctest: +SKIP
        [('d1', 'unique_order_id', False), ('d2', 'unique_order_id', True)]
    """
    if not slices:
        return evaluate(spark, lake, tests, scope, scope_text, args, elsewhere)
    keys = [piece.key for piece in slices]
    groups = {
        piece.key: (
            scope_text if len(slices) == 1 else _partition_scope_text(scope_text, keys, piece.key),
            {**args, **piece.bindings()},
        )
        for piece in slices
    }
    return _evaluate_groups(spark, lake, tests, scope, groups, batch=len(slices) > 1, elsewhere=elsewhere)


def _evaluate_groups(
    spark: SparkSession,
    lake: Lake,
    tests: Sequence[DataTestSpec],
    scope: DataFrame,
    groups: Mapping[Optional[str], tuple[str, Mapping[str, Any]]],
    batch: bool,
    elsewhere: Mapping[TableUri, Any] = {},
) -> list[TestOutcome]:
    """The outcomes of ``tests`` for each group (partition key, or ``None``) of ``scope``.

    ``groups`` maps each key to its scope text and bindings. With ``batch``, ``scope``
    holds several partitions and each key's rows are those of its ``_partition``;
    otherwise the whole scope is the one group's.
    """
    if not tests:
        return []
    from pyspark.sql import functions as F

    # Persisted once: every test (and every partition's custom test) reads the same rows.
    scope = scope.persist()
    try:
        key_column = F.col(PARTITION_COLUMN) if batch else F.lit(next(iter(groups)))
        keyed = scope.withColumn(_GROUP, key_column.cast("string"))
        rows = {r[_GROUP]: r["count"] for r in keyed.groupBy(_GROUP).count().collect()}
        found: dict[tuple[int, Optional[str]], tuple[int, tuple[str, ...]]] = {}
        for index, test in enumerate(tests):
            if test.kind is DataTestKind.CUSTOM:
                for key, (_, bindings) in groups.items():
                    part = scope.where(partition_predicate([key])) if batch else scope
                    failing = _custom_failing(spark, test, part, bindings)
                    count = failing.count()
                    samples = tuple(row_text(r.asDict()) for r in failing.limit(SAMPLE_SIZE).collect()) if count else ()
                    found[index, key] = (count, samples)
            else:
                failing, describe = _failing(spark, lake, test, keyed, elsewhere)
                for key, result in _count_by_group(failing, describe).items():
                    found[index, key] = result
        return [
            TestOutcome(test, *found.get((index, key), (0, ())), rows.get(key, 0), text, partition=key)
            for key, (text, _) in groups.items()
            for index, test in enumerate(tests)
        ]
    finally:
        scope.unpersist()


#: The column that names each failing row's group (partition) while a batch is tested.
_GROUP = "__assetlake_group"
_RANK = "__assetlake_rank"
_FAILING = "__assetlake_failing"


def _count_by_group(failing: DataFrame, describe) -> dict[Optional[str], tuple[int, tuple[str, ...]]]:
    """Per group: how many rows of ``failing`` there are, and the first few, described.

    One Spark job for every group: a window counts each group's rows and ranks them;
    the samples are the first :data:`SAMPLE_SIZE` in the order of their shown columns.
    """
    from pyspark.sql import Window, functions as F
    from pyspark.sql.types import MapType

    shown = [c for c in failing.columns if c != _GROUP]
    orderable = [
        failing[f.name] for f in failing.schema.fields
        if f.name in shown[:4] and not isinstance(f.dataType, MapType)
    ]
    group = Window.partitionBy(_GROUP)
    ranked = failing.withColumn(_FAILING, F.count(F.lit(1)).over(group)).withColumn(
        _RANK, F.row_number().over(group.orderBy(*(orderable or [F.lit(0)])))
    )
    found: dict[Optional[str], tuple[int, list[str]]] = {}
    for row in ranked.where(ranked[_RANK] <= SAMPLE_SIZE).orderBy(_GROUP, _RANK).collect():
        values = {c: row[c] for c in shown}
        count, samples = found.setdefault(row[_GROUP], (row[_FAILING], []))
        samples.append(describe(values))
    return {key: (count, tuple(samples)) for key, (count, samples) in found.items()}


def row_text(row: Mapping[str, Any]) -> str:
    """A few columns of a failing row, to find it: ``{order_id: 4, amount: -2.0}``."""
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in list(row.items())[:4]) + "}"


def _failing(
    spark: SparkSession,
    lake: Lake,
    test: DataTestSpec,
    scope: DataFrame,
    elsewhere: Mapping[TableUri, Any] = {},
):
    """The failing rows of a built-in test, each with the scope's group column kept."""
    columns = list(test.columns)

    def values(row: Mapping[str, Any]) -> str:
        return ", ".join(f"{c}={row[c]!r}" for c in columns) if len(columns) > 1 else repr(row[columns[0]])

    if test.kind is DataTestKind.NOT_NULL:
        return scope.where(scope[columns[0]].isNull()), row_text
    if test.kind is DataTestKind.UNIQUE:
        grouped = scope.groupBy(_GROUP, *columns).count().toDF(_GROUP, *columns, "_rows")
        dups = grouped.where(grouped["_rows"] > 1)
        return dups, lambda r: f"{values(r)} x{r['_rows']}"
    if test.kind is DataTestKind.ACCEPTED_VALUES:
        column = scope[columns[0]]
        bad = scope.where(column.isNotNull() & ~column.cast("string").isin(list(test.values)))
        return bad.select(_GROUP, *columns), values
    if test.kind is DataTestKind.RELATIONSHIPS:
        ref = reference_table(spark, lake, test.ref_uri, elsewhere)
        if ref is None:
            # Nothing can match: every non-NULL value fails, with the reason in the sample.
            rows = scope.where(scope[columns[0]].isNotNull()).select(_GROUP, *columns)
            return rows, lambda r: f"{values(r)} ({test.ref_uri} has no table yet)"
        ref = ref.select(ref[test.ref_column].alias("__assetlake_ref")).distinct()
        present = scope.where(scope[columns[0]].isNotNull())
        missing = present.join(ref, present[columns[0]] == ref["__assetlake_ref"], "left_anti")
        return missing.select(_GROUP, *columns), values
    raise ValueError(f"{test.kind} is not a built-in data test")


def reference_table(
    spark: SparkSession, lake: Lake, uri: TableUri, elsewhere: Mapping[TableUri, Any] = {}
) -> Optional[DataFrame]:
    """The rows of the table a ``relationships`` test references, ``None`` when it has no
    table yet.

    ``elsewhere``: tables read from another lake, ``{table: (path, version)}``, or staged by
    the run's publish group, ``{table: name}`` (a view the session reads).
    """
    source = elsewhere.get(uri)
    if isinstance(source, str):
        return spark.table(source)
    path, version = source or (lake.table_path(uri), None)
    if version is None and not is_delta_table(spark, path):
        return None
    return read(spark, path, version)


def _custom_failing(spark: SparkSession, test: DataTestSpec, scope: DataFrame, bindings: Mapping[str, Any]) -> DataFrame:
    """A custom test's failing rows: its SELECT, with ``{this}`` the scope under test."""
    view = f"_assetlake_this_{uuid.uuid4().hex}"
    scope.createOrReplaceTempView(view)
    sql = re.sub(rf"\b{THIS_MARKER}\b", view, test.query.sql)
    used = {name: bindings[name] for name in test.query.parameters if name in bindings}
    return spark.sql(sql, args=used or None)


def _partition_scope_text(scope_text: str, keys: Sequence[str], key: str) -> str:
    """One partition's scope in words: ``staged slice d1...d3`` -> ``staged slice d2``."""
    batch = describe_slice(keys)
    return scope_text.replace(batch, key, 1) if batch and batch in scope_text else f"{scope_text}, partition {key}"
