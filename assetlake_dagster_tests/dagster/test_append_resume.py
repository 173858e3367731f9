"""A crash after an append committed, then "re-execute from failure": no duplicate rows.

The step below appends (its output is written at once by the Delta IO manager), then
fails. The re-execution from failure runs the step again in a new run whose root is the
first run; the append must be recognised as already applied.
"""

import os

import dagster as dg

from assetlake_dagster.defs.io_manager import DeltaIOManager
from assetlake_dagster.defs.write_contract import managed_write
from assetlake_dagster.defs.resources import SparkDeltaResource

LAKE_ENV = "ASSETLAKE_TEST_RESUME_LAKE"
FAIL_FLAG_ENV = "ASSETLAKE_TEST_RESUME_FAIL_FLAG"


@dg.multi_asset(
    outs={
        "events": dg.AssetOut(key=["log", "events"], metadata=managed_write("append")),
        "after": dg.AssetOut(key=["log", "after"], metadata=managed_write("replace")),
    }
)
def events_then_crash(spark: SparkDeltaResource):
    session = spark.get_session()
    yield dg.Output(session.createDataFrame([(1, "a"), (2, "b")], "id INT, v STRING"), "events")
    if os.path.exists(os.environ[FAIL_FLAG_ENV]):
        raise RuntimeError("crash after the append was committed")
    yield dg.Output(session.createDataFrame([(1,)], "n INT"), "after")


def resume_job() -> dg.JobDefinition:
    resource = SparkDeltaResource(lake_root=os.environ[LAKE_ENV])
    defs = dg.Definitions(
        assets=[events_then_crash],
        resources={"spark": resource, "io_manager": DeltaIOManager(spark=resource)},
        jobs=[dg.define_asset_job("resume", selection="*")],
        executor=dg.in_process_executor,
    )
    return defs.resolve_job_def("resume")


def test_resume_from_failure_does_not_append_twice(spark, lake_root, tmp_path, monkeypatch):
    flag = tmp_path / "fail"
    flag.touch()
    monkeypatch.setenv(LAKE_ENV, lake_root)
    monkeypatch.setenv(FAIL_FLAG_ENV, str(flag))
    job = dg.reconstructable(resume_job)
    events = os.path.join(lake_root, "log", "events")
    with dg.instance_for_test() as instance:
        with dg.execute_job(job, instance=instance) as first:
            assert not first.success
        assert spark.read.format("delta").load(events).count() == 2

        flag.unlink()
        options = dg.ReexecutionOptions.from_failure(first.run_id, instance)
        with dg.execute_job(job, instance=instance, reexecution_options=options) as resumed:
            assert resumed.success
            assert resumed.dagster_run.root_run_id == first.run_id
            (event,) = [
                e for e in resumed.get_asset_materialization_events()
                if e.asset_key == dg.AssetKey(["log", "events"])
            ]
            metadata = event.step_materialization_data.materialization.metadata
            assert metadata["delta/committed"].value is False
            assert metadata["delta/version"].value == 0
        assert spark.read.format("delta").load(events).count() == 2

        # A new, unrelated run appends again: append is insert-only by design.
        with dg.execute_job(job, instance=instance) as fresh:
            assert fresh.success
        assert spark.read.format("delta").load(events).count() == 4
