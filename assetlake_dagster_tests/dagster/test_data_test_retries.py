"""Layer 5: a run failed by a blocking data test is never run-retried; crashes still are.

Run retries are Dagster's auto-reexecution daemon (instance ``run_retries``). These tests
use a real instance with retries on (including for step failures, the default), runs of a
real code location (``projects/retried``, loaded in process) executed for real, and the
daemon's own event-log iteration, which decides and launches the retries. The run
coordinator only queues what it is given, so a retry is created but not executed.
"""

import os
import sys

import dagster as dg
import pytest
# Dagster has no public API for run retries: these private names run a real code location's
# job as a run the daemon can retry, and the auto-reexecution daemon's own pass over the event log.
# Executing a launched run of a code location (the run launcher's job, not execute_in_process).
from dagster._core.execution.api import execute_run
# How the daemon re-executes a run (from failure or all steps).
from dagster._core.execution.plan.resume_retry import ReexecutionStrategy
# A code location loaded in this process, as the daemon's workspace sees it.
from dagster._core.remote_origin import InProcessCodeLocationOrigin
# The run tags the daemon reads and writes, spelled as Dagster spells them.
from dagster._core.storage.tags import (
    AUTO_RETRY_RUN_ID_TAG,
    RETRY_NUMBER_TAG,
    RUN_FAILURE_REASON_TAG,
    WILL_RETRY_TAG,
)
# The workspace the daemon runs against.
from dagster._core.test_utils import InProcessTestWorkspaceLoadTarget
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
# The auto-reexecution daemon itself, which decides and submits the retries.
from dagster._daemon.auto_run_reexecution.event_log_consumer import EventLogConsumerDaemon
# The job of a run's origin, as a run worker reconstructs it.
from dagster._utils.hosted_user_process import recon_job_from_origin

from assetlake_dagster.defs.checks import RETRY_ON_STEP_FAILURE_TAG
from assetlake_dagster_tests.helpers import PROJECTS

PROJECT = os.path.join(PROJECTS, "retried")
LOCATION = "retried"
JOB = "orders"


@pytest.fixture
def retrying(lake_root, tmp_path, monkeypatch):
    """A persistent instance that retries failed runs twice, step failures included, and
    a workspace holding the fixture project's code location."""
    monkeypatch.setenv("ASSETLAKE_LAKE_ROOT", lake_root)
    overrides = {
        "run_retries": {"enabled": True, "max_retries": 2, "retry_on_asset_or_op_failure": True},
        # Queue the retries the daemon submits instead of launching them (Dagster's own test
        # coordinator; no public one only queues).
        "run_coordinator": {"module": "dagster._core.test_utils", "class": "MockedRunCoordinator"},
    }
    home = tmp_path / "dagster_home"
    home.mkdir()
    with dg.instance_for_test(overrides=overrides, temp_dir=str(home)) as instance:
        origin = InProcessCodeLocationOrigin(
            LoadableTargetOrigin(
                executable_path=sys.executable, python_file=os.path.join(PROJECT, "_location.py")
            ),
            location_name=LOCATION,
        )
        with WorkspaceProcessContext(instance, InProcessTestWorkspaceLoadTarget(origin)) as workspace:
            daemon = EventLogConsumerDaemon()
            run_daemon(daemon, workspace)  # its first pass only sets its cursors
            yield instance, workspace, daemon


def remote_job(workspace):
    location = workspace.create_request_context().get_code_location(LOCATION)
    return location, location.get_repository("__repository__").get_full_job(JOB)


def launch(instance, workspace) -> dg.DagsterRun:
    """Create a run of the job as the UI would (with its code location origin) and execute it."""
    _, job = remote_job(workspace)
    recon = recon_job_from_origin(job.get_python_origin())
    run = instance.create_run_for_job(
        job_def=recon.get_definition(),
        remote_job_origin=job.get_remote_origin(),
        job_code_origin=job.get_python_origin(),
    )
    return execute(instance, run)


def execute(instance, run: dg.DagsterRun) -> dg.DagsterRun:
    execute_run(recon_job_from_origin(run.job_code_origin), run, instance)
    return instance.get_run_by_id(run.run_id)


def run_daemon(daemon, workspace) -> None:
    """One iteration of the daemon process's run-retry loop: read new run failures, retry."""
    for _ in daemon.run_iteration(workspace):
        pass


def retries_of(instance, run: dg.DagsterRun) -> list:
    """The runs the daemon created to retry ``run`` (they carry a retry number)."""
    return [r for r in instance.get_runs() if r.parent_run_id == run.run_id and RETRY_NUMBER_TAG in r.tags]


def failure_message(instance, run) -> str:
    (failure,) = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    return failure.dagster_event.step_failure_data.error.to_string()


def write_orders(spark, lake_root, rows, schema="order_id INT, status STRING"):
    df = spark.createDataFrame(rows, schema)
    df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(f"{lake_root}/raw/orders")


def test_a_data_test_failure_is_not_retried_but_a_crash_is(retrying, spark, lake_root):
    instance, workspace, daemon = retrying

    # Run 1: a status outside the accepted values fails the blocking test.
    write_orders(spark, lake_root, [(1, "paid"), (2, "lost")])
    audited = launch(instance, workspace)
    assert audited.status == dg.DagsterRunStatus.FAILURE
    assert "data test accepted_values_status" in failure_message(instance, audited)
    # A step failure like any other, which the instance would retry, but the run says no.
    assert audited.tags[RUN_FAILURE_REASON_TAG] == "STEP_FAILURE"
    assert audited.tags[RETRY_ON_STEP_FAILURE_TAG] == "false"
    assert audited.tags[WILL_RETRY_TAG] == "false"

    # Run 2, the control: the same asset fails on a Spark error (the column is gone).
    write_orders(spark, lake_root, [(1, "paid")], schema="order_id INT, state STRING")
    crashed = launch(instance, workspace)
    assert crashed.status == dg.DagsterRunStatus.FAILURE
    assert "UNRESOLVED_COLUMN" in failure_message(instance, crashed)
    assert crashed.tags[RUN_FAILURE_REASON_TAG] == "STEP_FAILURE"
    assert RETRY_ON_STEP_FAILURE_TAG not in crashed.tags
    assert crashed.tags[WILL_RETRY_TAG] == "true"

    run_daemon(daemon, workspace)
    assert retries_of(instance, audited) == []
    (retry,) = retries_of(instance, crashed)
    assert instance.get_run_by_id(crashed.run_id).tags[AUTO_RETRY_RUN_ID_TAG] == retry.run_id
    assert retry.status == dg.DagsterRunStatus.NOT_STARTED  # queued by the coordinator, not run


def test_a_reexecution_of_a_data_test_failure_is_retried_after_a_crash(retrying, spark, lake_root):
    instance, workspace, daemon = retrying
    write_orders(spark, lake_root, [(1, "lost")])
    audited = launch(instance, workspace)
    assert audited.tags[WILL_RETRY_TAG] == "false"

    # Someone re-executes it from the UI, which copies the parent run's tags (the refusal
    # too); this time the step crashes, and the crash must be retried per the instance.
    write_orders(spark, lake_root, [(1, "paid")], schema="order_id INT, state STRING")
    location, job = remote_job(workspace)
    rerun = instance.create_reexecuted_run(
        parent_run=audited,
        request_context=workspace.create_request_context(),
        code_location=location,
        remote_job=job,
        strategy=ReexecutionStrategy.FROM_FAILURE,
        use_parent_run_tags=True,
    )
    assert rerun.tags[RETRY_ON_STEP_FAILURE_TAG] == "false"  # inherited
    rerun = execute(instance, rerun)
    assert "UNRESOLVED_COLUMN" in failure_message(instance, rerun)
    assert rerun.tags[RETRY_ON_STEP_FAILURE_TAG] == "true"  # the instance's setting, given back
    assert rerun.tags[WILL_RETRY_TAG] == "true"

    run_daemon(daemon, workspace)
    assert retries_of(instance, audited) == []
    assert len(retries_of(instance, rerun)) == 1
