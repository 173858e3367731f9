"""Dagster's default run launcher, with the worker health check its run monitoring needs.

``dagster dev`` (and any instance with the default launcher) starts each run in a process
of the code server. Dagster's run monitoring asks the launcher whether that process still
lives, but the default launcher does not answer (``supports_check_run_worker_health`` is
``False``), so a run whose process was killed (SIGKILL, the OOM killer, a closed laptop
lid's suspend gone wrong) stays STARTED forever and is never retried.

This launcher answers from the run's own event log: the run process reports its pid when
it starts (Dagster's "Started process for run (pid: N)." engine event). The run's worker
is ``RUNNING`` while that process lives, and ``FAILED`` once it is gone (or the pid now
names a process that started after it), so run monitoring marks the run failed and, with
``run_retries`` on, re-executes it. The re-execution continues the same root run, so an
append the dead run had committed is not repeated (see ``docs/object-storage.md``).

It sees processes on this machine only: use it where the daemon runs beside the runs
(``dagster dev``, one host). ``scripts/dagster.yaml`` sets it::

    run_launcher:
      module: assetlake_dagster.run.launcher
      class: LocalProcessRunLauncher
"""

from __future__ import annotations

import os
from typing import Optional

import dagster as dg

from assetlake_dagster.defs.dagster_internals import CheckRunHealthResult, WorkerStatus, run_launcher_instance
from assetlake_dagster.spark.engine import pid_alive, process_start

#: A process that started this long after its run's "Started process" event is another
#: one that reuses the pid (clock ticks and event times differ by well under a second).
_PID_REUSE_SLACK_S = 5.0


class LocalProcessRunLauncher(dg.DefaultRunLauncher):
    """:class:`dagster.DefaultRunLauncher` whose runs run monitoring can check.

    Example:
        >>> LocalProcessRunLauncher().supports_check_run_worker_health
        True
    """

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        """``RUNNING`` while the run's process lives, ``FAILED`` when it is gone."""
        worker = run_worker_process(run_launcher_instance(self), run.run_id)
        if worker is None:
            # Not reported yet (the run's process reports its pid first thing): not ours to judge.
            return CheckRunHealthResult(WorkerStatus.RUNNING, "the run's process has not reported its pid yet")
        pid, reported_at = worker
        if process_alive_since(pid, reported_at):
            return CheckRunHealthResult(WorkerStatus.RUNNING, f"the run's process (pid {pid}) is running")
        return CheckRunHealthResult(
            WorkerStatus.FAILED,
            f"the run's process (pid {pid}) is gone: it was killed or crashed before it could report. "
            "Any commit it made is reported by the asset's next run (assetlake/orphan_commits).",
        )


def run_worker_process(instance: dg.DagsterInstance, run_id: str) -> Optional[tuple[int, float]]:
    """The pid the run's process reported when it started, and when, from the event log."""
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = record.dagster_event
        data = event.engine_event_data if event is not None else None
        pid = data.metadata.get("pid") if data is not None else None
        if pid is not None:
            try:
                return int(pid.value), record.timestamp
            except (TypeError, ValueError):
                continue
    return None


def process_alive_since(pid: int, not_after: float) -> bool:
    """Whether ``pid`` is a live process that started no later than ``not_after`` (epoch s)."""
    if not pid_alive(pid):
        return False
    ticks = process_start(pid)
    if ticks is None:
        return True  # no /proc: the pid's liveness is all we know
    return _boot_time() + ticks / os.sysconf("SC_CLK_TCK") <= not_after + _PID_REUSE_SLACK_S


def _boot_time() -> float:
    """When this machine booted (epoch seconds): ``/proc``'s process start times count from it."""
    with open("/proc/stat", encoding="utf-8") as f:
        return float(next(line.split()[1] for line in f if line.startswith("btime ")))
