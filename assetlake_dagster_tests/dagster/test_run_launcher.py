"""A run whose process is killed does not stay STARTED: the launcher of scripts/dagster.yaml
answers Dagster's run monitoring, which then marks the run failed (and run retries re-execute it).

The run is real (a Dagster run in its own process, on the instance that ``scripts/dev.sh``
configures); Dagster's own monitoring step judges it, as the daemon does every
``poll_interval_seconds``.
"""

import logging
import os
import shutil
import signal
import subprocess
import sys
import time

import dagster as dg
from dagster._daemon.monitoring.run_monitoring import monitor_started_run

from assetlake_dagster.defs.dagster_internals import WorkerStatus
from assetlake_dagster.run.launcher import LocalProcessRunLauncher
from assetlake_dagster_tests.helpers import REPO

#: A run that holds until it is killed, on the instance of $DAGSTER_HOME.
HANGING_RUN = """
import os, sys, time
import dagster as dg

@dg.asset
def hangs():
    open(sys.argv[1], "w").close()
    time.sleep(600)

with dg.DagsterInstance.get() as instance:
    dg.materialize([hangs], instance=instance)
"""


def test_a_killed_runs_worker_is_reported_failed_and_monitoring_fails_the_run(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(os.path.join(REPO, "scripts", "dagster.yaml"), home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    marker = tmp_path / "started"
    env = dict(os.environ, DAGSTER_HOME=str(home))
    proc = subprocess.Popen([sys.executable, "-c", HANGING_RUN, str(marker)], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not marker.exists():
            assert proc.poll() is None, "the run's process exited before its asset ran"
            assert time.monotonic() < deadline, "the run did not start within 300 s"
            time.sleep(0.2)
        with dg.DagsterInstance.get() as instance:
            launcher = instance.run_launcher
            assert isinstance(launcher, LocalProcessRunLauncher) and launcher.supports_check_run_worker_health
            (record,) = instance.get_run_records()
            run = record.dagster_run
            assert run.status == dg.DagsterRunStatus.STARTED
            alive = launcher.check_run_worker_health(run)
            assert alive.status == WorkerStatus.RUNNING and str(proc.pid) in alive.msg

            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
            dead = launcher.check_run_worker_health(run)
            assert dead.status == WorkerStatus.FAILED and str(proc.pid) in dead.msg, dead

            # What the daemon's monitoring does with that answer.
            monitor_started_run(instance, None, record, logging.getLogger("run_monitoring"))
            after = instance.get_run_by_id(run.run_id)
            assert after.status == dg.DagsterRunStatus.FAILURE
            failure = [e for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)]
            assert len(failure) == 1 and f"pid {proc.pid}" in failure[0].message
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)


def test_a_run_that_has_not_reported_its_process_is_left_running(tmp_path, monkeypatch):
    """Between launch and the run process's first event there is no pid to judge: the check
    leaves the run to the STARTING timeout rather than failing a healthy run."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    shutil.copy(os.path.join(REPO, "scripts", "dagster.yaml"), tmp_path / "dagster.yaml")
    with dg.DagsterInstance.get() as instance:
        run = instance.create_run_for_job(dg.JobDefinition(graph_def=dg.GraphDefinition(name="nothing")))
        assert instance.run_launcher.check_run_worker_health(run).status == WorkerStatus.RUNNING
