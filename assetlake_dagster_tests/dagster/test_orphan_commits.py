"""A commit that landed for a run that never recorded it is reported by the next run.

Issue 28: a run killed while the engine committed its append left Delta version 0 that no
materialization named, and a relaunch appended the same rows again without a word. Here
the killed run is a FAILURE run in the instance (as run monitoring marks a dead run) whose
stamped commit is in the table; the next run of the asset lists that commit in
``assetlake/orphan_commits`` and warns in its log. A commit whose run recorded it is not
listed.
"""

import dagster as dg

from assetlake_dagster.io_manager import DeltaIOManager, managed_write
from assetlake_dagster.resources import SparkDeltaResource
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
