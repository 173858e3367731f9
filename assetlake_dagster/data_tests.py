"""Data tests: ``-- data_test`` lines as Dagster asset checks, audited before the commit.

Every test is a query for *failing rows* over a scope DataFrame:

* before a write, the **staged** scope: what the table (or the slice) will hold once the
  write commits, computed from the new rows and the current table without writing;
* for a check run on its own, the **committed** scope: the table as it is.

Scope: the slice just written for a partitioned table, the current rows for SCD2 history,
the whole table otherwise; each write strategy computes both scopes (``staged_scope`` and
``committed_scope`` of its class in ``writes/``). Values (accepted values, partition keys,
arguments) are bound or compared through Column expressions, never spliced into SQL text.

The checks of a partitioned asset are partitioned too: each evaluation records the
partition it tested, and a backfill batch (several partitions, one run) records one
evaluation per check per partition.
"""

import re
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

import dagster as dg
from pyspark.sql import DataFrame, SparkSession

from assetlake_dagster.dagster_internals import (
    AssetCheckEvaluationTargetMaterializationData,
    add_run_tags,
    retries_on_step_failure,
)
from assetlake_dagster.delta_sql import is_delta_table, read
from assetlake_dagster.lake import Lake
from assetlake_dagster.spec import THIS_MARKER, DataTestKind, DataTestSpec, SqlAssetSpec
from assetlake_dagster.writes.slices import describe_slice, partition_predicate

#: How many failing values a result shows.
SAMPLE_SIZE = 5

#: Dagster's run tag: ``false`` keeps run retries (the auto-reexecution daemon) off a run
#: that failed in a step, whatever the instance's ``retry_on_asset_or_op_failure`` says.
RETRY_ON_STEP_FAILURE_TAG = "dagster/retry_on_asset_or_op_failure"
#: The run whose data test set that tag to ``false``. Re-executions inherit their parent's
#: tags, so a run that finds another run's id here inherited it.
NO_RETRY_RUN_TAG = "assetlake/no_retry_after_data_test_run"
#: The tag's value before (``""``: it was not set), to give an inheriting run back.
PRIOR_RETRY_TAG = "assetlake/retry_on_asset_or_op_failure_before"


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

    @property
    def severity(self) -> dg.AssetCheckSeverity:
        return dg.AssetCheckSeverity.ERROR if self.test.blocking else dg.AssetCheckSeverity.WARN

    def metadata(self) -> dict[str, Any]:
        """What the check result shows: failing count, rows tested, scope, test, samples."""
        metadata: dict[str, Any] = {
            "failing": dg.MetadataValue.int(self.failing),
            "rows_tested": dg.MetadataValue.int(self.rows),
            "scope": self.scope,
            "test": self.test.description,
        }
        if self.samples:
            metadata["samples"] = dg.MetadataValue.json(list(self.samples))
        return metadata

    def check_result(self, asset_key: dg.AssetKey) -> dg.AssetCheckResult:
        """The result for a run of one partition or none (Dagster adds the run's partition)."""
        return dg.AssetCheckResult(
            asset_key=asset_key,
            check_name=self.test.name,
            passed=self.passed,
            severity=self.severity,
            metadata=self.metadata(),
        )

    def check_evaluation(
        self, asset_key: dg.AssetKey, target: Optional[AssetCheckEvaluationTargetMaterializationData]
    ) -> dg.AssetCheckEvaluation:
        """The evaluation of one partition of a batch.

        An ``AssetCheckResult`` only gets a run's *single* partition key; in a partition
        range run Dagster would record it unpartitioned. ``target`` is the partition's
        materialization the test judged: Dagster counts a partition's check status only
        while it targets the partition's latest materialization.
        """
        return dg.AssetCheckEvaluation(
            asset_key=asset_key,
            check_name=self.test.name,
            passed=self.passed,
            metadata=self.metadata(),
            target_materialization_data=target,
            severity=self.severity,
            blocking=self.test.blocking,
            partition=self.partition,
        )


def check_specs(
    spec: SqlAssetSpec, asset_key: dg.AssetKey, partitions_def: Optional[dg.PartitionsDefinition] = None
) -> list[dg.AssetCheckSpec]:
    """One Dagster asset check per ``-- data_test`` line (``blocking`` unless ``warn``).

    With the asset's ``partitions_def`` the checks are partitioned: the UI shows a result
    per partition and "Execute" on a check runs it for the partitions picked.

    Example:
        >>> specs = check_specs(spec, dg.AssetKey(["mart", "orders"]))  # doctest: +SKIP
        >>> [(s.name, s.blocking) for s in specs]  # doctest: +SKIP
        [('unique_order_id', True), ('not_null_note', False)]
    """
    with warnings.catch_warnings():
        # Partitioned asset checks are a "preview" feature in Dagster 1.13; every load would warn.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return [
            dg.AssetCheckSpec(
                name=test.name,
                asset=asset_key,
                description=f"{test.description}" + ("" if test.blocking else " (warn: does not block the write)"),
                blocking=test.blocking,
                partitions_def=partitions_def,
            )
            for test in spec.data_tests
        ]


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


def refuse_run_retries(instance: dg.DagsterInstance, run_id: str) -> None:
    """Keep run retries off this run: a blocking data test failed it, and a retry would fail
    the same way. Call it before the step fails.

    ``Failure(allow_retries=False)`` stops step retries only. Run retries (the
    auto-reexecution daemon) retry a run failed in a step unless the instance says
    ``retry_on_asset_or_op_failure: false`` (the user's setting, not ours) or the run
    carries the tag ``dagster/retry_on_asset_or_op_failure: false``. As a job tag it would
    keep crashes from being retried too, so it goes on the one run a test failed. That is
    in time: the instance reads the run's tags when it stores the run's failure, after this
    step, to set ``dagster/will_retry``, which is what the daemon goes by.
    """
    tags = _run_tags(instance, run_id)
    if tags.get(NO_RETRY_RUN_TAG) == run_id:
        return  # another step of this run already did (and kept the first prior value)
    add_run_tags(
        instance,
        run_id,
        {
            RETRY_ON_STEP_FAILURE_TAG: "false",
            NO_RETRY_RUN_TAG: run_id,
            PRIOR_RETRY_TAG: tags.get(RETRY_ON_STEP_FAILURE_TAG, ""),
        },
    )


def restore_run_retries(instance: dg.DagsterInstance, run_id: str) -> None:
    """Undo :func:`refuse_run_retries` in a re-execution that inherited it from its parent.

    Dagster copies a parent run's tags into a re-execution (the UI's "Re-execute" does),
    so after a data test failure, fixing the data and re-executing would leave that run's
    crashes unretried. The tag goes back to its value before the failure, or to the
    instance's setting when there was none (a tag cannot be removed).
    """
    tags = _run_tags(instance, run_id)
    marked = tags.get(NO_RETRY_RUN_TAG)
    if not marked or marked == run_id:
        return
    prior = tags.get(PRIOR_RETRY_TAG) or str(retries_on_step_failure(instance)).lower()
    add_run_tags(instance, run_id, {RETRY_ON_STEP_FAILURE_TAG: prior, NO_RETRY_RUN_TAG: "", PRIOR_RETRY_TAG: ""})


def _run_tags(instance: dg.DagsterInstance, run_id: str) -> Mapping[str, str]:
    # The stored run, not the context's copy from the run's start: tags added since count.
    run = instance.get_run_by_id(run_id)
    return run.tags if run is not None else {}


def audit_failure(outcomes: Sequence[TestOutcome], table: str, version: Optional[int]) -> dg.Failure:
    """The run failure for blocking tests that failed: not retried, nothing written."""
    failed = blocking_failures(outcomes)
    kept = f"the table stays at version {version}" if version is not None else "no table was created"
    text = "; ".join(o.message(table) for o in failed)
    metadata = {"failed_tests": dg.MetadataValue.json(list(dict.fromkeys(o.test.name for o in failed)))}
    partitions = list(dict.fromkeys(o.partition for o in failed if o.partition is not None))
    if partitions:  # a batch: which of its partitions failed (the whole batch is not written)
        metadata["failed_partitions"] = dg.MetadataValue.json(partitions)
    return dg.Failure(
        description=f"{text}. Nothing was written: {kept}. Fix the data or the SQL and run again.",
        metadata=metadata,
        allow_retries=False,
    )

