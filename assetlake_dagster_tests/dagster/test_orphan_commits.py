"""A commit that landed for a run that never recorded it is reported by the next run.

Issue 28: a run killed while the engine committed its append left Delta version 0 that no
materialization named, and a relaunch appended the same rows again without a word. Here
the killed run is a FAILURE run in the instance (as run monitoring marks a dead run) whose
stamped commit is in the table; the next run of the asset lists that commit in
``assetlake/orphan_commits`` and warns in its log. A commit whose run recorded it is not
listed.
"""

import dagster as dg

from assetlake_dagster.defs.io_manager import DeltaIOManager
from assetlake_dagster.defs.write_contract import managed_write
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
from assetlake_dagster.writes.orphans import ORPHAN_COMMITS_KEY

KEY = dg.AssetKey(["log", "events"])


@dg.asset(key=KEY, metadata=managed_write("append"))
def events(spark: SparkDeltaResource):
    session = spark.get_session()
    return session.createDataFrame([(1, "a"), (2, "b")], "id INT, v STRING")


def materialize(lake_root, instance):
    resource = SparkDeltaResource(lake_root=lake_root)
    result = dg.materialize(
        [events], instance=instance, resources={"spark": resource, "io_manager": DeltaIOManager(spark=resource)}
    )
    (event,) = result.get_asset_materialization_events()
    return result, event.step_materialization_data.materialization.metadata


def test_the_next_run_reports_a_commit_its_failed_run_never_recorded(spark, lake_root):
    with dg.instance_for_test() as instance:
        first, metadata = materialize(lake_root, instance)
        assert ORPHAN_COMMITS_KEY not in metadata  # version 0, recorded by its run

        # A run that died after its commit landed: FAILURE, no materialization recorded.
        dead = instance.add_run(dg.DagsterRun(job_name="__ASSET_JOB", run_id="d" * 32, status=dg.DagsterRunStatus.FAILURE))
        target = WriteTarget(
            uri=TableUri("log", "events"), path=f"{lake_root}/log/events", strategy=WriteStrategy.APPEND,
            stamp=CommitStamp(run_id=dead.run_id, asset="log/events"),
        )
        written = strategy_for(WriteStrategy.APPEND).write(spark, spark.createDataFrame([(3, "c")], "id INT, v STRING"), target)
        assert written.version == 1

        result, metadata = materialize(lake_root, instance)
        assert metadata["delta/version"].value == 2
        assert metadata[ORPHAN_COMMITS_KEY].value == [
            {"version": 1, "run_id": dead.run_id, "run_status": "FAILURE", "partition": None}
        ]
        warnings = [
            e.message for e in instance.all_logs(result.run_id)
            if "never recorded" in (e.user_message or "")
        ]
        assert len(warnings) == 1 and "version 1 by run " + dead.run_id in warnings[0]


def _commit_for(spark, lake_root, run_id, writer=None):
    """An append to log/events stamped for ``run_id`` (as its run's write would be)."""
    target = WriteTarget(
        uri=TableUri("log", "events"), path=f"{lake_root}/log/events", strategy=WriteStrategy.APPEND,
        stamp=CommitStamp(run_id=run_id, asset="log/events", writer=writer),
    )
    return strategy_for(WriteStrategy.APPEND).write(spark, spark.createDataFrame([(9, "z")], "id INT, v STRING"), target)


def _gone_writer():
    """A writer stamp naming a process of this machine that has exited."""
    import subprocess

    from assetlake_dagster.writes import writer

    child = subprocess.Popen(["sleep", "30"])
    started = writer._start_time(child.pid)
    child.kill()
    child.wait()
    alive = writer.this_writer().rsplit(":", 2)[0]  # host:boot of this machine
    return f"{alive}:{child.pid}:{started}"


def test_a_dead_runs_commit_is_found_however_many_commits_later(spark, lake_root):
    with dg.instance_for_test() as instance:
        materialize(lake_root, instance)
        dead = instance.add_run(dg.DagsterRun(job_name="__ASSET_JOB", run_id="d" * 32, status=dg.DagsterRunStatus.FAILURE))
        assert _commit_for(spark, lake_root, dead.run_id).version == 1
        # Eight commits by other writers (no stamp of this instance) before the next run.
        for _ in range(8):
            spark.createDataFrame([(5, "x")], "id INT, v STRING").write.format("delta").mode("append").save(f"{lake_root}/log/events")

        _, metadata = materialize(lake_root, instance)
        assert metadata["delta/version"].value == 10
        assert [o["version"] for o in metadata[ORPHAN_COMMITS_KEY].value] == [1]
        assert metadata["assetlake/log_checked_through"].value == 10
        # Reported once: the run after reads only what came after version 10.
        _, metadata = materialize(lake_root, instance)
        assert ORPHAN_COMMITS_KEY not in metadata and metadata["assetlake/log_checked_through"].value == 11


def test_a_started_run_whose_writer_is_gone_is_reported_and_marked_failed(spark, lake_root):
    """`dagster asset materialize` killed with SIGKILL: no daemon marks its run, which stays
    STARTED. Its commit's writer process is gone, so the next run reports the commit and
    marks the run failed. A STARTED run whose writer lives is in flight: not reported, and the
    watermark stays below its commit until it ends."""
    from assetlake_dagster.writes.writer import this_writer

    with dg.instance_for_test() as instance:
        materialize(lake_root, instance)
        killed = instance.add_run(dg.DagsterRun(job_name="__ASSET_JOB", run_id="k" * 32, status=dg.DagsterRunStatus.STARTED))
        running = instance.add_run(dg.DagsterRun(job_name="__ASSET_JOB", run_id="r" * 32, status=dg.DagsterRunStatus.STARTED))
        assert _commit_for(spark, lake_root, running.run_id, writer=this_writer()).version == 1
        assert _commit_for(spark, lake_root, killed.run_id, writer=_gone_writer()).version == 2

        _, metadata = materialize(lake_root, instance)
        assert metadata[ORPHAN_COMMITS_KEY].value == [
            {"version": 2, "run_id": killed.run_id, "run_status": "FAILURE", "partition": None}
        ]
        assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(running.run_id).status == dg.DagsterRunStatus.STARTED
        assert metadata["assetlake/log_checked_through"].value == 0  # held below the live run's version 1

        # The live run dies later (run monitoring marks it): the next run reports its commit.
        instance.report_run_failed(instance.get_run_by_id(running.run_id), message="lost its heartbeat")
        _, metadata = materialize(lake_root, instance)
        reported = [(o["version"], o["run_id"]) for o in metadata[ORPHAN_COMMITS_KEY].value]
        assert (1, running.run_id) in reported
        assert metadata["assetlake/log_checked_through"].value == 4
