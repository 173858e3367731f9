"""What one watched table did since the sensor last looked: its new commits, read from its log.

Each tick the sensor asks :func:`read_table_change` once per external table, with the version
its cursor holds. The answer is a plain :class:`TableChange` (the table's version now, the
commits after the cursor's, the versions log cleanup removed before they were read, or the
first look's baseline); the sensor turns it into an observation and run requests. The log
is read without Spark (:mod:`assetlake_dagster.lake.delta_log`), on local disk or an object
store. Nothing here knows Dagster: messages go to the logger it is given.

Example:
    >>> change = read_table_change(uri, Lake("/data/lake"), 4, readers="sales.daily", log=log)  # doctest: +SKIP
    >>> change.version, [c.version for c in change.commits]  # doctest: +SKIP
    (6, [5, 6])
"""

import logging
from dataclasses import dataclass, field
from typing import Optional

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.delta_log import Commit, DeltaLog, DeltaLogError, DeltaLogExpiredError, DeltaTableMissingError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import TableUri

#: The cursor's version of a table that did not exist when last looked at.
MISSING_VERSION = -1


@dataclass
class TableChange:
    """What one table did since the last tick.

    Attributes:
        version: the table's version now; :data:`MISSING_VERSION` if it does not exist.
        path: where the table is.
        commits: the readable commits after the cursor's version, oldest first.
        expired: the versions log cleanup removed before the sensor read them, as
            ``(first, last, checkpoint)``; ``None`` when none were lost.
        baseline: the first look at the table: its version is where watching starts.
        last_commit: the latest commit, when only read for the observation's metadata
            (the baseline).
        summary: one phrase for the tick's log (``2 new commits (version 6)``).
        log: the listing the change was read from (the observation reads the schema from
            it too).
    """

    version: int
    path: str = ""
    commits: list[Commit] = field(default_factory=list)
    expired: Optional[tuple[int, int, int]] = None
    baseline: bool = False
    last_commit: Optional[Commit] = None
    summary: str = ""
    log: Optional[DeltaLog] = None


def read_table_change(
    uri: TableUri, lake: Lake, previous: Optional[int], *, readers: str, log: logging.Logger
) -> Optional[TableChange]:
    """The table's change since ``previous``, the version the sensor saw last.

    A missing table, a first look (``previous`` is ``None``: the current version becomes the
    baseline), a re-created table (its version went back: every commit is new) and commits
    lost to log cleanup (read from the first readable one, the lost ones named in
    ``expired``) are all answers; an unreadable log or a path outside the lake is ``None``.

    Args:
        uri: the watched table.
        lake: where it lives.
        previous: the cursor's version of the table; ``None`` if it has none.
        readers: the table's readers, named for the messages (``sales.daily, sales.monthly``).
        log: where warnings and notes go (the tick's log).

    Returns:
        The change, or ``None`` to skip the table this tick (the warning is logged; its
        cursor is kept, so it is retried on the next).
    """
    try:
        path = lake.table_path(uri)
        delta_log = DeltaLog.open(path, lake.files)
    except DeltaTableMissingError as exc:
        # Said once as a warning; while it stays missing, a note is enough.
        if previous == MISSING_VERSION:
            log.info(f"{uri} still does not exist ({exc}).")
        else:
            log.warning(
                f"{uri} does not exist: {exc} Nothing is requested until it does; then every "
                f"commit it has triggers its readers ({readers})."
            )
        return TableChange(MISSING_VERSION, summary="missing")
    except (DeltaLogError, ConfigError) as exc:
        log.warning(f"{uri} skipped this tick (retried on the next): {exc}")
        return None
    latest = delta_log.latest_version
    if previous is None:
        log.info(
            f"{uri}: first look; version {latest} is the baseline, so only later commits "
            f"trigger {readers}. Materialize them yourself if they have never run."
        )
        try:
            last = delta_log.read_commits(latest - 1, latest)[-1]
        except DeltaLogError:
            last = None  # only for the metadata: the baseline stands without it
        return TableChange(
            latest, path, baseline=True, last_commit=last, summary=f"baseline at version {latest}", log=delta_log
        )
    if previous > latest:
        log.warning(
            f"{uri} went back from version {previous} to {latest}: the table was re-created. "
            "All of its commits are treated as new."
        )
        previous = MISSING_VERSION
    if previous == latest:
        return TableChange(latest, path, summary=f"no new commit (version {latest})")
    expired = None
    try:
        try:
            commits = delta_log.read_commits(previous, latest)
        except DeltaLogExpiredError as exc:
            # What the lost commits changed is unknowable; the readable rest still counts.
            expired = (exc.first_missing, exc.last_missing, exc.checkpoint_version)
            commits = delta_log.read_commits(exc.last_missing, latest)
    except DeltaLogError as exc:
        log.warning(f"{uri} skipped this tick (retried on the next): {exc}")
        return None
    count = len(commits) + (expired[1] - expired[0] + 1 if expired else 0)
    summary = f"{count} new commit{'s' if count != 1 else ''} (version {latest})"
    return TableChange(latest, path, commits=commits, expired=expired, summary=summary, log=delta_log)
