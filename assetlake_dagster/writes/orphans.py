"""Commits that landed for a run that never recorded them ("orphan commits").

A run killed while the engine commits its write leaves a Delta version that no Dagster
materialization names. The next run of the asset finds it, however many commits later,
reports it in its log and in ``assetlake/orphan_commits``, so that nobody repeats it
silently, and records in ``assetlake/log_checked_through`` the version up to which every
commit is accounted for: the run after it reads only the commits after that one.

A commit's run is judged from Dagster's instance and from the commit's stamp:

- **recorded** (its run materialized the asset), unknown to this instance, or this run's
  own: accounted for;
- **dead**: its run ended ``FAILURE`` or ``CANCELED``, or is still ``STARTED`` while the
  process that wrote the commit is gone (:func:`~assetlake_dagster.writes.writer.writer_is_gone`:
  ``dagster asset materialize`` killed with SIGKILL, where no daemon marks the run). Such a
  commit is reported, and a run still ``STARTED`` is marked failed by the reporting run;
- **in flight** (a concurrent run whose writer may live): not reported yet; the watermark
  stays below it, so a later run judges it again (and reports again a dead run's commit
  above it: reported twice rather than missed).

Example:
    >>> stamps = [(2, {"run_id": "c", "asset": "s/t"}), (1, {"run_id": "b", "asset": "s/t"}),
    ...           (0, {"run_id": "a", "asset": "s/t"})]
    >>> verdicts = {"a": "FAILURE", "b": IN_FLIGHT, "c": None}
    >>> check = check_commits(stamps, 2, "s/t", "d", lambda run, stamp: verdicts[run])
    >>> check.orphans, check.checked_through
    ([{'version': 0, 'run_id': 'a', 'run_status': 'FAILURE', 'partition': None}], 0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.lake import delta_log
from assetlake_dagster.lake.delta_sql import history_rows
from assetlake_dagster.writes.commit import NOT_A_WRITE, stamp_in
from assetlake_dagster.lake.versions import reads_log_here

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ORPHAN_COMMITS_KEY = "assetlake/orphan_commits"
#: Materialization metadata: every commit up to this version is accounted for.
CHECKED_THROUGH_KEY = "assetlake/log_checked_through"
#: At most this many of the latest commits are read: all of a table never checked, and a
#: bound on a table whose watermark a run on another machine holds back (in flight there).
MAX_CHECK_DEPTH = 1000
#: A verdict: the commit's run may still record it.
IN_FLIGHT = "in flight"


@dataclass(frozen=True)
class CommitCheck:
    """What one run found in its table's log.

    Attributes:
        orphans: the commits whose run is dead and never recorded them, newest first.
        checked_through: every commit up to this version is accounted for (``-1``: none).
    """

    orphans: list[dict[str, Any]]
    checked_through: int


def stamps_after(spark: SparkSession, path: str, after: Optional[int]) -> tuple[list[tuple[int, dict]], int]:
    """``([(version, assetlake stamp)], latest version)`` of the commits after version
    ``after`` (``None``: from the first; at most the last :data:`MAX_CHECK_DEPTH`), newest first; commits without a
    stamp and compactions carrying their write's are left out. Read from the log on a local
    disk (no Spark job), else with ``DESCRIBE HISTORY``. ``([], -1)`` when there is no table.
    """
    if reads_log_here(path):
        try:
            log = delta_log.DeltaLog.open(path)
        except delta_log.DeltaTableMissingError:
            return [], -1
        latest = log.latest_version
        first = max(log.first_readable, latest - MAX_CHECK_DEPTH + 1, -1 if after is None else after + 1)
        entries = [(c.version, c.user_metadata, c.operation) for c in log.read_commits(first - 1, latest)]
        entries.reverse()
    else:
        rows = history_rows(spark, path, 1, "version") or ()
        if not rows:
            return [], -1
        latest = int(rows[0]["version"])
        depth = min(MAX_CHECK_DEPTH, latest + 1 if after is None else max(latest - after, 0))
        rows = (history_rows(spark, path, depth, "version", "userMetadata", "operation") or ()) if depth else ()
        entries = [(int(r["version"]), r["userMetadata"], r["operation"]) for r in rows]
    stamps = []
    for version, text, operation in entries:
        if operation in NOT_A_WRITE:
            continue
        stamp = stamp_in(text)
        if stamp.get("run_id"):
            stamps.append((version, stamp))
    return stamps, latest


def check_commits(
    stamps: Sequence[tuple[int, dict]],
    latest: int,
    asset: str,
    this_run_id: str,
    judge: Callable[[str, dict], Optional[str]],
) -> CommitCheck:
    """Judge each commit of ``asset`` (see the module docstring).

    Args:
        stamps: from :func:`stamps_after`, newest first.
        latest: the table's latest version (the watermark when nothing is in flight).
        asset: ``schema/table``.
        this_run_id: the run asking (its own commits are accounted for).
        judge: ``(run id, stamp)`` -> the status of a dead run that never recorded
            ``asset`` (``"FAILURE"``, ``"CANCELED"``), :data:`IN_FLIGHT`, or ``None``
            (accounted for). Called once per run.
    """
    found, seen = [], {}
    in_flight = [latest + 1]
    for version, stamp in stamps:
        run_id = stamp["run_id"]
        if stamp.get("asset") != asset or run_id == this_run_id:
            continue
        if run_id not in seen:
            seen[run_id] = judge(run_id, stamp)
        verdict = seen[run_id]
        if verdict == IN_FLIGHT:
            in_flight.append(version)
        elif verdict is not None:
            found.append({"version": version, "run_id": run_id, "run_status": verdict,
                          "partition": stamp.get("partition")})
    return CommitCheck(found, min(in_flight) - 1)


def describe_orphans(uri: Any, orphans: Sequence[dict[str, Any]]) -> str:
    """The run log's warning about ``orphans``: what happened and what to do."""
    listed = "; ".join(
        f"version {o['version']} by run {o['run_id']} ({o['run_status']}"
        + (f", partition {o['partition']}" if o["partition"] else "") + ")"
        for o in orphans
    )
    return (
        f"{uri}: {len(orphans)} commit(s) landed for a run that never recorded them: {listed}. "
        "Their rows are in the table (an append's rows are there once more if this run appended them "
        "again). Check them with DESCRIBE HISTORY, and restore an earlier version if they should not be there."
    )
