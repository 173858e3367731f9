"""Commits that landed for a run that never recorded them ("orphan commits").

A run killed while the engine commits its write (issue 28) leaves a Delta version that no
Dagster materialization names: its run ends FAILURE (marked by run monitoring) or CANCELED
and has no materialization of the asset. The next run of the asset reads the table's last
few commits (``ORPHAN_SEARCH_DEPTH``, from the log on a local disk: no Spark job), and
reports each such commit in its log and in ``assetlake/orphan_commits``, so that nobody
repeats it silently. A run still in progress (a concurrent one) is never reported: its
commit may be recorded in a moment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.lake import delta_log
from assetlake_dagster.lake.delta_sql import history_rows
from assetlake_dagster.writes.commit import NOT_A_WRITE, STAMP_TAG
from assetlake_dagster.lake.versions import reads_log_here

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ORPHAN_COMMITS_KEY = "assetlake/orphan_commits"
#: How many of the latest commits are checked: an orphan is found by the next run or two.
ORPHAN_SEARCH_DEPTH = 5


def recent_stamps(spark: SparkSession, path: str, depth: int = ORPHAN_SEARCH_DEPTH) -> list[tuple[int, dict]]:
    """``[(version, assetlake stamp)]`` of the last ``depth`` commits, newest first
    (commits without a stamp, and compactions carrying their write's, left out)."""
    if reads_log_here(path):
        try:
            log = delta_log.DeltaLog.open(path)
        except delta_log.DeltaTableMissingError:
            return []
        first = max(log.first_readable, log.latest_version - depth + 1)
        entries = [(c.version, c.user_metadata, c.operation) for c in log.read_commits(first - 1, log.latest_version)]
        entries.reverse()
    else:
        rows = history_rows(spark, path, depth, "version", "userMetadata", "operation") or ()
        entries = [(int(r["version"]), r["userMetadata"], r["operation"]) for r in rows]
    stamps = []
    for version, text, operation in entries:
        if operation in NOT_A_WRITE:
            continue
        try:
            stamp = json.loads(text).get(STAMP_TAG) if text else None
        except (ValueError, AttributeError):
            stamp = None
        if isinstance(stamp, dict) and stamp.get("run_id"):
            stamps.append((version, stamp))
    return stamps


def orphan_commits(
    stamps: Sequence[tuple[int, dict]],
    asset: str,
    this_run_id: str,
    never_recorded: Callable[[str], Optional[str]],
) -> list[dict[str, Any]]:
    """The commits of ``asset`` whose run never recorded them, newest first.

    Args:
        stamps: from :func:`recent_stamps`.
        asset: ``schema/table``.
        this_run_id: the run asking (its own commits are not orphans).
        never_recorded: the status of a run that ended without recording ``asset``
            (``"FAILURE"``, ``"CANCELED"``), else ``None``.

    Example:
        >>> stamps = [(1, {"run_id": "b", "asset": "s/t"}), (0, {"run_id": "a", "asset": "s/t"})]
        >>> orphan_commits(stamps, "s/t", "c", lambda run: "FAILURE" if run == "a" else None)
        [{'version': 0, 'run_id': 'a', 'run_status': 'FAILURE', 'partition': None}]
    """
    found, seen = [], {}
    for version, stamp in stamps:
        run_id = stamp["run_id"]
        if stamp.get("asset") != asset or run_id == this_run_id:
            continue
        if run_id not in seen:
            seen[run_id] = never_recorded(run_id)
        if seen[run_id] is not None:
            found.append({"version": version, "run_id": run_id, "run_status": seen[run_id],
                          "partition": stamp.get("partition")})
    return found


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
