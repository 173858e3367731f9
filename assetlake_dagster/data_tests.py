"""Data tests: ``-- data_test`` lines as Dagster asset checks, audited before the commit.

Every test is a query for *failing rows* over a scope DataFrame:

* before a write, the **staged** scope: what the table (or the slice) will hold once the
  write commits, computed from the new rows and the current table without writing;
* for a check run on its own, the **committed** scope: the table as it is.

Scope: the slice just written for a partitioned table, the current rows for SCD2 history,
the whole table otherwise. Values (accepted values, partition keys, arguments) are bound
or compared through Column expressions, never spliced into SQL text.
"""

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import dagster as dg
from pyspark.sql import DataFrame, SparkSession

from assetlake_dagster.delta_sql import is_delta_table, read
from assetlake_dagster.lake import Lake
from assetlake_dagster.spec import PARTITION_PARAMETERS, THIS_MARKER, DataTestKind, DataTestSpec, SqlAssetSpec, WriteStrategy
from assetlake_dagster.writes.commit import WriteTarget
from assetlake_dagster.writes.history import HISTORY_COLUMNS, IS_CURRENT
from assetlake_dagster.writes.merge import merge_key
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
    """

    test: DataTestSpec
    failing: int
    samples: tuple[str, ...]
    rows: int
    scope: str

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

    def check_result(self, asset_key: dg.AssetKey) -> dg.AssetCheckResult:
        metadata: dict[str, Any] = {
            "failing": dg.MetadataValue.int(self.failing),
            "rows_tested": dg.MetadataValue.int(self.rows),
            "scope": self.scope,
            "test": self.test.description,
        }
        if self.samples:
            metadata["samples"] = dg.MetadataValue.json(list(self.samples))
        return dg.AssetCheckResult(
            asset_key=asset_key,
            check_name=self.test.name,
            passed=self.passed,
            severity=dg.AssetCheckSeverity.ERROR if self.test.blocking else dg.AssetCheckSeverity.WARN,
            metadata=metadata,
        )


def check_specs(spec: SqlAssetSpec, asset_key: dg.AssetKey) -> list[dg.AssetCheckSpec]:
    """One Dagster asset check per ``-- data_test`` line (``blocking`` unless ``warn``)."""
    return [
        dg.AssetCheckSpec(
            name=test.name,
            asset=asset_key,
            description=f"{test.description}" + ("" if test.blocking else " (warn: does not block the write)"),
            blocking=test.blocking,
        )
        for test in spec.data_tests
    ]


def staged_scope(spark: SparkSession, rows: DataFrame, target: WriteTarget) -> tuple[DataFrame, str]:
    """What the scope will hold once ``rows`` are written to ``target``; nothing is written.

    replace: the rows. merge: the current rows whose key is not in ``rows``, plus ``rows``.
    append: the current rows plus ``rows``. history: the new current rows (with
    ``deletes=close`` the snapshot; otherwise also current keys absent from it).
    Partitioned tables: only the slice's partitions.
    """
    slice_text = f"staged {'slice ' + describe_slice(target.partitions) if target.partitioned else 'table'}"
    if target.strategy is WriteStrategy.REPLACE or not is_delta_table(spark, target.path):
        return rows, slice_text
    current = read(spark, target.path)
    if target.partitioned:
        current = current.where(partition_predicate(target.partitions))
    if target.strategy is WriteStrategy.APPEND:
        return current.unionByName(rows, allowMissingColumns=True), slice_text
    if target.strategy is WriteStrategy.MERGE:
        kept = current.join(rows.select(*merge_key(target)), on=list(merge_key(target)), how="left_anti")
        return kept.unionByName(rows, allowMissingColumns=True), slice_text
    # history: the tests see the data columns of the rows that will be current.
    if target.close_deletes:
        return rows, "staged current rows"
    live = current.where(current[IS_CURRENT]).drop(*HISTORY_COLUMNS)
    kept = live.join(rows.select(*target.key), on=list(target.key), how="left_anti")
    return kept.unionByName(rows, allowMissingColumns=True), "staged current rows"


def committed_scope(
    spark: SparkSession, lake: Lake, spec: SqlAssetSpec, partitions: Sequence[str]
) -> tuple[Optional[DataFrame], str]:
    """The table as committed, in the test's scope (``None`` when there is no table yet)."""
    path = lake.table_path(spec.uri)
    if not is_delta_table(spark, path):
        return None, "no table yet"
    table = read(spark, path)
    if partitions:
        return table.where(partition_predicate(partitions)), f"committed slice {describe_slice(partitions)}"
    if spec.materialize.strategy is WriteStrategy.HISTORY:
        return table.where(table[IS_CURRENT]).drop(*HISTORY_COLUMNS), "committed current rows"
    return table, "committed table"


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
    """Every test for one run: a custom test that binds ``{partition}`` runs once per
    partition of a batch, on that partition's rows; everything else runs once."""
    if len(slices) <= 1:
        bindings = {**args, **(slices[0].bindings() if slices else {})}
        return evaluate(spark, lake, tests, scope, scope_text, bindings)
    per_slice = [t for t in tests if t.query is not None and set(t.query.parameters) & set(PARTITION_PARAMETERS)]
    once = [t for t in tests if t not in per_slice]
    outcomes = {o.test.name: o for o in evaluate(spark, lake, once, scope, scope_text, args)}
    for piece in slices:
        part = scope.where(partition_predicate([piece.key]))
        for o in evaluate(spark, lake, per_slice, part, scope_text, {**args, **piece.bindings()}):
            prior = outcomes.get(o.test.name)
            if prior is not None:
                o = TestOutcome(o.test, prior.failing + o.failing, (prior.samples + o.samples)[:SAMPLE_SIZE],
                                prior.rows + o.rows, scope_text)
            outcomes[o.test.name] = o
    return [outcomes[t.name] for t in tests]


def blocking_failures(outcomes: Sequence[TestOutcome]) -> list[TestOutcome]:
    return [o for o in outcomes if not o.passed and o.test.blocking]


def audit_failure(outcomes: Sequence[TestOutcome], table: str, version: Optional[int]) -> dg.Failure:
    """The run failure for blocking tests that failed: not retried, nothing written."""
    failed = blocking_failures(outcomes)
    kept = f"the table stays at version {version}" if version is not None else "no table was created"
    text = "; ".join(o.message(table) for o in failed)
    return dg.Failure(
        description=f"{text}. Nothing was written: {kept}. Fix the data or the SQL and run again.",
        metadata={"failed_tests": dg.MetadataValue.json([o.test.name for o in failed])},
        allow_retries=False,
    )

