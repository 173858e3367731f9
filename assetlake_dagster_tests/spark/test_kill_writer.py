"""A writer process killed with SIGKILL mid-write leaves the table at its prior version.

RELIABILITY.md's fault plan: one logical write is one Delta commit, so a writer that dies
before its commit, however abruptly, leaves nothing visible. The writer here is a separate
Python process with its own Spark JVM (:mod:`assetlake_dagster_tests.blocked_writer`)
on the same lake as the test's session, with one write per strategy in flight at once (one
table each). Each write blocks inside its Spark job (a UDF that never returns on the last
row, after dropping a marker file), so the test knows every write is under way and none can
have committed; then the whole process group (Python, JVM, Python workers) gets SIGKILL.
No timing is assumed anywhere: the test waits for states on disk.

Where the kill lands differs by strategy, and each case is asserted:
- replace and append write their data files inside that job: the other partitions' files
  are already in the table folder when the process dies (uncommitted leftovers);
- merge and history first stage their input (``persist``) and check its keys, so they die
  in that job, before any data file of the table is written.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from assetlake_dagster.lake.delta_sql import history
from assetlake_dagster.spec import WriteStrategy
from assetlake_dagster.writes import strategy_for
from assetlake_dagster_tests.blocked_writer import (
    EXPECTED_AFTER_NEXT,
    NEW_NAME,
    NEXT,
    PARTITIONS,
    PRIOR,
    SCHEMA,
    STRATEGIES,
    WRITE_IN_THE_BLOCKED_JOB,
    table_path,
    target,
)
from assetlake_dagster_tests.helpers import REPO, C1_ONLY_JVM

#: Seconds the writer gets to start its JVM and reach the blocked rows (~10-20 s normally).
START_TIMEOUT_S = 300


def write(spark, lake_root, strategy, run_id, rows):
    df = spark.createDataFrame(rows, SCHEMA)
    return strategy_for(WriteStrategy(strategy)).write(spark, df, target(lake_root, strategy, run_id))


def table_rows(spark, path):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def versions(spark, path):
    return [r.version for r in history(spark, path).select("version").collect()]


def data_files(path):
    """Every data file in the table folder, committed or not (Hadoop's .crc files aside)."""
    found = set()
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        found.update(os.path.join(folder, f) for f in files if f.endswith(".parquet") and not f.startswith("."))
    return found


def committed_files(spark, path):
    return {f.removeprefix("file:") for f in spark.read.format("delta").load(path).inputFiles()}


def live_members(pgid):
    """PIDs of the process group that are still running (zombies excluded)."""
    members = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            members.append(int(pid))
    return members


def wait_for(condition, proc, log_path, what, timeout):
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the writer exited ({proc.returncode}) before {what}:\n{log_path.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout} s:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)


def test_sigkilled_writer_leaves_every_table_at_its_prior_version(spark, lake_root, tmp_path):
    paths = {strategy: table_path(lake_root, strategy) for strategy in STRATEGIES}
    prior_rows, prior_files = {}, {}
    for strategy, path in paths.items():
        assert write(spark, lake_root, strategy, "run1", PRIOR).version == 0
        prior_rows[strategy], prior_files[strategy] = table_rows(spark, path), data_files(path)

    markers = tmp_path / "blocked"
    markers.mkdir()
    log_path = tmp_path / "writer.log"
    # The writer's JVM lives seconds, until the kill.
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, **C1_ONLY_JVM)
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED"):
        env.pop(name, None)  # a classic writer, whatever ran before in this process
    command = [sys.executable, "-m", "assetlake_dagster_tests.blocked_writer", lake_root, str(markers)]
    with open(log_path, "w") as log:
        # Its own session and process group: SIGKILL to the group reaches the JVM and the
        # Python workers, not only the Python driver.
        proc = subprocess.Popen(
            [*command, str(tmp_path / "warehouse"), *STRATEGIES],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            for strategy in STRATEGIES:
                wait_for((markers / strategy).exists, proc, log_path, f"blocked row of {strategy}", START_TIMEOUT_S)
            for strategy in WRITE_IN_THE_BLOCKED_JOB:
                # The unblocked partitions' tasks finish and leave their data files behind.
                def leftovers(path=paths[strategy], before=prior_files[strategy]):
                    names = {os.path.basename(f) for f in data_files(path) - before}
                    return all(any(n.startswith(f"part-{p:05d}-") for n in names) for p in range(PARTITIONS - 1))

                wait_for(leftovers, proc, log_path, f"uncommitted data files of {strategy}", START_TIMEOUT_S)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 60
    while live_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert live_members(proc.pid) == []  # the writer's JVM died with it
    assert "committed" not in log_path.read_text().split()

    for strategy, path in paths.items():
        # The table is exactly as before: same latest version, same rows.
        assert versions(spark, path) == [0], strategy
        assert table_rows(spark, path) == prior_rows[strategy], strategy
        leftover = data_files(path) - prior_files[strategy]
        if strategy in WRITE_IN_THE_BLOCKED_JOB:
            assert len(leftover) >= PARTITIONS - 1, strategy
        else:
            assert leftover == set(), strategy
        assert not leftover & committed_files(spark, path), strategy

        # A normal write afterwards commits the next version; leftovers never become visible.
        after = write(spark, lake_root, strategy, "run2", NEXT)
        assert after.committed and after.version == 1, strategy
        assert versions(spark, path) == [1, 0], strategy
        rows = table_rows(spark, path)
        assert not any(NEW_NAME in r for r in rows), strategy
        if strategy == "history":
            rows = sorted((r[0], r[1], r[4]) for r in rows)  # id, name, is_current
        assert rows == EXPECTED_AFTER_NEXT[strategy], strategy
        assert not leftover & committed_files(spark, path), strategy
