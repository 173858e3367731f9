"""A client process SIGKILLed while the warm engine writes for it: the write never commits.

Issue 28: ``dagster asset materialize`` of a large append, killed mid-write; the engine went
on, committed version 0 after the run had died, and a relaunch appended the rows again.
Spark Connect keeps a dead client's reattachable operation running (for minutes), so the
engine's supervisor interrupts the operations of client processes that are gone
(``engine_supervisor.DeadClientReaper``).

The writer (:mod:`assetlake_dagster_tests.big_append_writer`) is a real process on the
suite's engine; the test kills its process group once the write's data files appear (the
write job runs on the engine), then waits until the engine's JVM is idle (no task running:
the write either committed or was stopped) and asserts that the table is at its prior
version. No timing is asserted.
"""

import os
import signal
import subprocess
import sys
import time
import uuid

import deltalake
import pyarrow as pa
import pytest

from assetlake_dagster.spark.engine import WarmEngine, local_table_version
from assetlake_dagster_tests.big_append_writer import table_path
from assetlake_dagster_tests.helpers import REPO, c1_only_engine, cli_env

#: Rows of the killed append. Without the interrupt it commits ~30 s after it starts here
#: (4M rows, 33 s on 2 loaded cores); with it the engine stops within a task's length.
ROWS = 4_000_000
#: Seconds for the writer to connect and start its write, and for the engine to settle.
TIMEOUT_S = 300
#: The engine counts as idle when its JVM used less than this many CPU-seconds per second
#: for IDLE_SPELL_S seconds (a running write task uses about one per task).
IDLE_CPU_PER_S = 0.2
IDLE_SPELL_S = 2.0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_idle(pid):
    deadline = time.monotonic() + TIMEOUT_S
    last, quiet = cpu_seconds(pid), 0.0
    while quiet < IDLE_SPELL_S:
        if time.monotonic() > deadline:
            pytest.fail(f"the engine (pid {pid}) did not become idle within {TIMEOUT_S} s")
        time.sleep(0.5)
        now = cpu_seconds(pid)
        quiet = quiet + 0.5 if now - last < IDLE_CPU_PER_S * 0.5 else 0.0
        last = now


def data_files(path):
    found = set()
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        found.update(os.path.join(folder, f) for f in files if f.endswith(".parquet"))
    return found


def run_writer(lake, rows, run_id, **popen):
    command = [sys.executable, "-m", "assetlake_dagster_tests.big_append_writer", lake, str(rows), run_id]
    return subprocess.Popen(command, cwd=REPO, env=cli_env(), **popen)


def test_a_sigkilled_clients_append_never_commits_on_the_engine(tmp_path):
    lake = str(tmp_path / "lake")
    path = table_path(lake)
    # Version 0 by delta-rs: one writer process (a Spark Connect client costs ~4 CPU-s to start).
    prior = pa.table({"id": pa.array(range(10), pa.int64()), "h": pa.array(["prior"] * 10)})
    deltalake.write_deltalake(path, prior)
    assert local_table_version(path) == 0
    prior_files = data_files(path)
    with c1_only_engine():
        engine = WarmEngine(os.environ["ASSETLAKE_ENGINE_DIR"]).ensure()  # the writer's engine

    log_path = tmp_path / "writer.log"
    with open(log_path, "w") as log:
        # Its own process group: the kill reaches all of it, as a killed run's would.
        writer = run_writer(lake, ROWS, uuid.uuid4().hex, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while not data_files(path) - prior_files:  # the write's job runs on the engine
                assert writer.poll() is None, log_path.read_text()[-3000:]
                assert time.monotonic() < deadline, log_path.read_text()[-3000:]
                time.sleep(0.1)
        finally:
            os.killpg(writer.pid, signal.SIGKILL)
            writer.wait(timeout=60)
    assert writer.returncode == -signal.SIGKILL

    wait_until_idle(engine.server_pid)
    assert local_table_version(path) == 0
    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 10
    # The dead writer's record was handled (and removed).
    assert not [n for n in os.listdir(engine.clients_dir) if n.startswith(f"{writer.pid}-")]
