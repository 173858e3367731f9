"""The Dagster face of data tests: asset check specs, results, evaluations, run failures.

:mod:`assetlake_dagster.run.data_tests` evaluates the tests in Spark and returns
:class:`~assetlake_dagster.spec.TestOutcome`s; this module turns them into what
Dagster records. Each ``-- data_test`` line is one asset check, ``blocking`` unless
``warn``. The checks of a partitioned asset are partitioned too: each evaluation records
the partition it tested, and a backfill batch (several partitions, one run) records one
evaluation per check per partition.
"""

import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.defs.dagster_internals import (
    AssetCheckEvaluationTargetMaterializationData,
    add_run_tags,
    check_output_name,
    retries_on_step_failure,
)
from assetlake_dagster.defs.partitions import latest_partition_materialization
from assetlake_dagster.spec import TestOutcome, blocking_failures
from assetlake_dagster.spec import DataTestSpec, SqlAssetSpec

#: Dagster's run tag: ``false`` keeps run retries (the auto-reexecution daemon) off a run
#: that failed in a step, whatever the instance's ``retry_on_asset_or_op_failure`` says.
RETRY_ON_STEP_FAILURE_TAG = "dagster/retry_on_asset_or_op_failure"
#: The run whose data test set that tag to ``false``. Re-executions inherit their parent's
#: tags, so a run that finds another run's id here inherited it.
NO_RETRY_RUN_TAG = "assetlake/no_retry_after_data_test_run"
#: The tag's value before (``""``: it was not set), to give an inheriting run back.
PRIOR_RETRY_TAG = "assetlake/retry_on_asset_or_op_failure_before"


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


def severity(outcome: TestOutcome) -> dg.AssetCheckSeverity:
    """``ERROR`` for a blocking test, ``WARN`` for a ``warn`` one."""
    return dg.AssetCheckSeverity.ERROR if outcome.test.blocking else dg.AssetCheckSeverity.WARN


def check_metadata(outcome: TestOutcome) -> dict[str, Any]:
    """What the check result shows: failing count, rows tested, scope, test, samples."""
    metadata: dict[str, Any] = {
        "failing": dg.MetadataValue.int(outcome.failing),
        "rows_tested": dg.MetadataValue.int(outcome.rows),
        "scope": outcome.scope,
        "test": outcome.test.description,
    }
    if outcome.samples:
        metadata["samples"] = dg.MetadataValue.json(list(outcome.samples))
    if outcome.test.quarantine:
        # A quarantining test's failures left the table: it says how many, and where they went.
        metadata["quarantined"] = dg.MetadataValue.int(outcome.failing)
        metadata["passed"] = dg.MetadataValue.int(outcome.rows - outcome.failing)
    return metadata


def check_result(outcome: TestOutcome, asset_key: dg.AssetKey) -> dg.AssetCheckResult:
    """The result for a run of one partition or none (Dagster adds the run's partition)."""
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=outcome.test.name,
        passed=outcome.passed,
        severity=severity(outcome),
        metadata=check_metadata(outcome),
    )


def check_evaluation(
    outcome: TestOutcome, asset_key: dg.AssetKey, target: Optional[AssetCheckEvaluationTargetMaterializationData]
) -> dg.AssetCheckEvaluation:
    """The evaluation of one partition of a batch.

    An ``AssetCheckResult`` only gets a run's *single* partition key; in a partition
    range run Dagster would record it unpartitioned. ``target`` is the partition's
    materialization the test judged: Dagster counts a partition's check status only
    while it targets the partition's latest materialization.
    """
    return dg.AssetCheckEvaluation(
        asset_key=asset_key,
        check_name=outcome.test.name,
        passed=outcome.passed,
        metadata=check_metadata(outcome),
        target_materialization_data=target,
        severity=severity(outcome),
        blocking=outcome.test.blocking,
        partition=outcome.partition,
    )


def check_events(
    context: dg.AssetExecutionContext, key: dg.AssetKey, outcomes: Sequence[TestOutcome]
) -> Iterator[Any]:
    """The check results of ``outcomes``, each recorded for its partition (if any).

    Dagster gives an ``AssetCheckResult`` the ``dagster/partition`` of the run, which a
    partition range run (a batch, even of one key) does not have. There we yield one
    ``AssetCheckEvaluation`` per check per partition ourselves, plus once per check the
    (empty) output a result would have produced: downstream steps gated on a blocking
    check wait for that output.
    """
    outputs_done: set[str] = set()
    targets: dict[str, Optional[AssetCheckEvaluationTargetMaterializationData]] = {}
    for outcome in outcomes:
        if outcome.partition is None or context.has_partition_key:
            yield check_result(outcome, key)
            continue
        output_name = check_output_name(context.assets_def, dg.AssetCheckKey(key, outcome.test.name))
        if output_name not in outputs_done:
            outputs_done.add(output_name)
            yield dg.Output(None, output_name=output_name)
        if outcome.partition not in targets:
            targets[outcome.partition] = _latest_materialization(context.instance, key, outcome.partition)
        yield check_evaluation(outcome, key, targets[outcome.partition])


def _latest_materialization(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str
) -> Optional[AssetCheckEvaluationTargetMaterializationData]:
    """The partition's latest materialization (what ``AssetCheckResult`` looks up for one)."""
    record = latest_partition_materialization(instance, key, partition)
    if record is None:
        return None
    return AssetCheckEvaluationTargetMaterializationData(
        storage_id=record.storage_id,
        run_id=record.event_log_entry.run_id,
        timestamp=record.event_log_entry.timestamp,
    )


def selected_tests(context: dg.AssetExecutionContext, spec: SqlAssetSpec, key: dg.AssetKey) -> list[DataTestSpec]:
    """The data tests of ``spec`` whose asset checks this run executes."""
    selected = context.selected_asset_check_keys
    return [t for t in spec.data_tests if dg.AssetCheckKey(key, t.name) in selected]


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
