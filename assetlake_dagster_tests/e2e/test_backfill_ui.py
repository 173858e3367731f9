"""Layer 5: a backfill launched the way the UI launches it, run by `dagster dev`'s daemon.

The UI's "Materialize / Backfill" dialog calls the `launchPartitionBackfill` GraphQL
mutation (all partitions, a range, or the keys the "missing and failed" filter picked);
the daemon splits it into runs of at most `batch=` partitions. Each run must write its
partitions in one Delta commit, and a failed run must not stop the others.
"""

import os
import shutil
import signal
import subprocess
import time

from assetlake_dagster.delta_sql import read
from assetlake_dagster.partitions import PARTITION_COLUMN
from assetlake_dagster_tests.helpers import DAGSTER, PROJECTS, REPO, cli_env, delta_history as history, free_port as _free_port, graphql as _graphql

PROJECT = os.path.join(PROJECTS, "partitioned")

LAUNCH = """
mutation {
  launchPartitionBackfill(backfillParams: {assetSelection: [{path: %s}], %s}) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
  }
}
"""
STATUS = '{ partitionBackfillOrError(backfillId: "%s") { ... on PartitionBackfill { status } } }'
ASSET_STATUS = """
{ assetNodes(assetKeys: [{path: %s}]) {
    partitionStats { numMaterialized numFailed numPartitions } } }
"""


def _launch(port, path, selection):
    data = _graphql(port, LAUNCH % (str(path).replace("'", '"'), selection))
    result = data["data"]["launchPartitionBackfill"]
    assert result["__typename"] == "LaunchBackfillSuccess", data
    return result["backfillId"]


def _wait(port, backfill_id, timeout=900):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = _graphql(port, STATUS % backfill_id)["data"]["partitionBackfillOrError"]["status"]
        if status not in ("REQUESTED",):
            return status
        time.sleep(3)
    raise AssertionError(f"backfill {backfill_id} still running after {timeout} s")


def _stats(port, path):
    nodes = _graphql(port, ASSET_STATUS % str(path).replace("'", '"'))["data"]["assetNodes"]
    return nodes[0]["partitionStats"]


def test_backfills_from_the_ui_batch_commits_and_survive_a_failed_run(spark, tmp_path):
    home, lake = tmp_path / "home", tmp_path / "lake"
    home.mkdir()
    shutil.copy(os.path.join(REPO, "scripts", "dagster.yaml"), home / "dagster.yaml")
    env = cli_env(
        DAGSTER_HOME=str(home),
        ASSETLAKE_PROJECT_DIR=PROJECT,
        ASSETLAKE_LAKE_ROOT=str(lake),
        SPARK_LOCAL_IP="127.0.0.1",
    )
    source = subprocess.run(
        [DAGSTER, "asset", "materialize", "-m", "assetlake_dagster.definitions", "--select", "raw/events"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )
    assert source.returncode == 0, source.stderr[-3000:]
    port = _free_port()
    log = open(tmp_path / "dagster_dev.log", "w")
    proc = subprocess.Popen(
        [DAGSTER, "dev", "-m", "assetlake_dagster.definitions", "-h", "127.0.0.1", "-p", str(port)],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, (tmp_path / "dagster_dev.log").read_text()[-3000:]
            try:
                if _graphql(port, "{ version }")["data"]["version"]:
                    break
            except OSError:
                assert time.monotonic() < deadline, "dagster dev did not answer within 180 s"
                time.sleep(1)
        # All ten days, batch=5: two runs, two commits, every partition materialized.
        daily = ["mart", "daily_events"]
        assert _wait(port, _launch(port, daily, "allPartitions: true")) == "COMPLETED_SUCCESS"
        assert history(spark, str(lake / "mart" / "daily_events")) == [(1, "WRITE"), (0, "WRITE")]
        assert _stats(port, daily) == {"numMaterialized": 10, "numFailed": 0, "numPartitions": 10}
        # A range with a failing day, batch=2: the run holding 2024-01-04 fails, the others land.
        bad = ["mart", "bad_days"]
        keys = '["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05", "2024-01-06"]'
        assert _wait(port, _launch(port, bad, f"partitionNames: {keys}")) == "COMPLETED_FAILED"
        assert _stats(port, bad) == {"numMaterialized": 4, "numFailed": 2, "numPartitions": 6}
        landed = {r[0] for r in read(spark, str(lake / "mart" / "bad_days")).select(PARTITION_COLUMN).distinct().collect()}
        assert landed == {"2024-01-01", "2024-01-02", "2024-01-05", "2024-01-06"}
        assert len(history(spark, str(lake / "mart" / "bad_days"))) == 2
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
