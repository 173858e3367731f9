"""Quarantine: the rows that fail an ``on_fail=quarantine`` data test go aside, the rest are
published.

``-- data_test not_null email on_fail=quarantine`` marks each row of the run that fails it;
:func:`split_rows` separates those rows (one Spark pass, staged once) from the ones that
pass every quarantining test. The run then audits the rest with its other tests, and only
when they pass writes the marked rows to ``<schema>.<table>__quarantine`` (one append
commit, created on first need, idempotent per run and slice) before the IO manager publishes
the rest: a run whose quarantine write fails publishes nothing. Each quarantining test's
check result counts the rows it sent aside, with a sample.

Row-level tests only (``not_null``, ``accepted_values``, ``relationships``): the grammar
refuses the others. Values are compared through Column expressions, never spliced into SQL.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.lake.registration import register_table
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.run.data_tests import reference_table, row_text
from assetlake_dagster.spark.session import local_checkpoint
from assetlake_dagster.spec import PARTITION_COLUMN, SAMPLE_SIZE, DataTestKind, DataTestSpec, TableUri, TestOutcome, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteResult, WriteTarget, strategy_for
from assetlake_dagster.writes.slices import describe_slice

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The suffix of a table's quarantine table: ``sales.orders`` -> ``sales.orders__quarantine``.
QUARANTINE_SUFFIX = "__quarantine"
#: The quarantine table's own columns, after the rows' columns.
FAILED_TESTS_COLUMN, RUN_ID_COLUMN, QUARANTINED_AT_COLUMN = "quarantine_tests", "quarantine_run_id", "quarantined_at"
#: The quarantine table's column naming a row's partition key (a partitioned table's only).
PARTITION_KEY_COLUMN = "quarantine_partition"
_FLAG = "__assetlake_quarantine_{}"
_REF = "__assetlake_quarantine_ref"


def quarantine_uri(uri: TableUri) -> TableUri:
    """``delta://sales/orders`` -> ``delta://sales/orders__quarantine``.

    Example:
        >>> quarantine_uri(TableUri("sales", "orders")).sql_name
        'sales.orders__quarantine'
    """
    return TableUri(uri.schema, uri.table + QUARANTINE_SUFFIX)


@dataclass(frozen=True)
class Split:
    """A run's rows, split by its quarantining tests.

    Attributes:
        kept: the rows every quarantining test passes (to be audited and published).
        aside: the rows some test failed, each with the names of the tests it failed in
            :data:`FAILED_TESTS_COLUMN`.
        outcomes: one per test (and partition): how many rows it sent aside, with samples.
        count: how many rows went aside (a row failing two tests counts once).
    """

    kept: DataFrame
    aside: DataFrame
    outcomes: tuple[TestOutcome, ...]
    count: int


def split_rows(
    spark: SparkSession,
    lake: Lake,
    tests: Sequence[DataTestSpec],
    rows: DataFrame,
    partitions: Sequence[str] = (),
    elsewhere: Mapping[TableUri, Any] = {},
) -> Split:
    """Mark each row with the quarantining ``tests`` it fails, in one pass, staged once.

    ``partitions``: the run's partition keys; a batch's rows carry their key in
    ``PARTITION_COLUMN``, and each partition gets its own outcomes.
    """
    from pyspark.sql import functions as F

    marked = rows
    flags = []
    for index, test in enumerate(tests):
        flag = _FLAG.format(index)
        flags.append((flag, test.name))
        column = marked[test.columns[0]]
        if test.kind is DataTestKind.NOT_NULL:
            marked = marked.withColumn(flag, column.isNull())
        elif test.kind is DataTestKind.ACCEPTED_VALUES:
            marked = marked.withColumn(flag, column.isNotNull() & ~column.cast("string").isin(list(test.values)))
        elif test.kind is DataTestKind.RELATIONSHIPS:
            ref = reference_table(spark, lake, test.ref_uri, elsewhere)
            if ref is None:
                marked = marked.withColumn(flag, column.isNotNull())  # nothing can match yet
                continue
            ref = ref.select(ref[test.ref_column].alias(_REF)).distinct()
            joined = marked.join(ref, marked[test.columns[0]] == ref[_REF], "left")
            marked = joined.withColumn(flag, joined[test.columns[0]].isNotNull() & joined[_REF].isNull()).drop(_REF)
        else:
            raise ValueError(f"{test.kind.value} tests cannot quarantine rows")  # the grammar refuses them
    failed = F.filter(F.array(*[F.when(marked[flag], F.lit(name)) for flag, name in flags]), lambda x: x.isNotNull())
    marked = local_checkpoint(marked.withColumn(FAILED_TESTS_COLUMN, failed).drop(*(f for f, _ in flags)))
    aside = marked.where(F.size(marked[FAILED_TESTS_COLUMN]) > 0)
    kept = marked.where(F.size(marked[FAILED_TESTS_COLUMN]) == 0).drop(FAILED_TESTS_COLUMN)
    outcomes, count = _outcomes(marked, tests, partitions)
    return Split(kept, aside, tuple(outcomes), count)


def _outcomes(
    marked: DataFrame, tests: Sequence[DataTestSpec], partitions: Sequence[str]
) -> tuple[list[TestOutcome], int]:
    """Per test and partition: the rows it sent aside (and a few of them), of how many; and
    how many rows went aside in all, counted in the same Spark job."""
    from pyspark.sql import functions as F

    batch = len(partitions) > 1
    groups: list[Optional[str]] = list(partitions) or [None]
    key = marked[PARTITION_COLUMN].cast("string") if batch else F.lit(groups[0])
    counted = marked.withColumn("__group", key)
    aggregates = [F.count(F.lit(1)).alias("rows"), F.sum((F.size(counted[FAILED_TESTS_COLUMN]) > 0).cast("int")).alias("aside")] + [
        F.sum(F.array_contains(counted[FAILED_TESTS_COLUMN], test.name).cast("int")).alias(f"t{i}")
        for i, test in enumerate(tests)
    ]
    totals = {r["__group"]: r for r in counted.groupBy("__group").agg(*aggregates).collect()}
    outcomes = []
    for group in groups:
        row = totals.get(group)
        for i, test in enumerate(tests):
            failing = int(row[f"t{i}"] or 0) if row is not None else 0
            samples: tuple[str, ...] = ()
            if failing:
                picked = counted.where((counted["__group"] == group) if group is not None else F.lit(True))
                picked = picked.where(F.array_contains(picked[FAILED_TESTS_COLUMN], test.name))
                shown = [c for c in marked.columns if c not in (FAILED_TESTS_COLUMN, PARTITION_COLUMN)]
                samples = tuple(row_text({c: r[c] for c in shown}) for r in picked.limit(SAMPLE_SIZE).collect())
            scope = "the run's rows" + (f", partition {group}" if group is not None and batch else "")
            outcomes.append(TestOutcome(test, failing, samples, int(row["rows"]) if row is not None else 0,
                                        f"{scope}: {failing} sent to quarantine", partition=group))
    return outcomes, sum(int(r["aside"] or 0) for r in totals.values())


def write_aside(
    spark: SparkSession,
    lake: Lake,
    uri: TableUri,
    aside: DataFrame,
    run_id: str,
    root_run_id: str,
    partitions: Sequence[str] = (),
    now: Optional[dt.datetime] = None,
) -> WriteResult:
    """Append the rows set aside to ``uri``'s quarantine table, with the run and the time:
    one commit, created on first need, at most once per run and slice (a retry of the run
    appends nothing again), and registered in the catalog."""
    from pyspark.sql import functions as F

    target_uri = quarantine_uri(uri)
    at = (now or dt.datetime.now(dt.timezone.utc)).replace(tzinfo=None)  # a UTC wall time, as the session reads it
    rows = aside.withColumn(RUN_ID_COLUMN, F.lit(run_id)).withColumn(QUARANTINED_AT_COLUMN, F.lit(at).cast("timestamp"))
    if PARTITION_COLUMN in rows.columns:  # a batch's rows carry their partition key
        rows = rows.withColumnRenamed(PARTITION_COLUMN, PARTITION_KEY_COLUMN)
    elif partitions:
        rows = rows.withColumn(PARTITION_KEY_COLUMN, F.lit(partitions[0]))
    stamp = CommitStamp(
        run_id, f"{target_uri.schema}/{target_uri.table}", describe_slice(partitions) or None, idempotency_id=root_run_id
    )
    target = WriteTarget(uri=target_uri, path=lake.table_path(target_uri), strategy=WriteStrategy.APPEND, stamp=stamp)
    result = strategy_for(WriteStrategy.APPEND).write(spark, rows, target)
    register_table(spark, lake, target_uri)
    return result
