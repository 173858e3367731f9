"""Table maintenance off the write path: ``OPTIMIZE`` and a guarded ``VACUUM``.

``OPTIMIZE`` compacts small files (and clusters a table that declares ``-- cluster_by``);
its commit changes no rows (``dataChange`` false), so it triggers nothing downstream.

``VACUUM`` deletes the files of old versions for good, and with them ``assetlake restore``
to those versions, version-pinned inputs and what recorded upstream versions point at. It
is refused here when it would delete a file a version still needs:

* **the restore window**: every version of the last ``delta.deletedFileRetentionDuration``
  (Delta's default: 7 days) stays restorable; a retention below it is refused;
* **versions something needs** (:class:`Need`): a version recorded by a materialization
  inside the window (the table's own ``delta/version``, a downstream's
  ``assetlake/upstream_versions``), a version an input pins, the version current when a run
  still in flight started.

A version ``v`` keeps its files while every file it references was removed less than the
retention ago; the first commit that can remove one is ``v + 1``, so ``v`` is safe when
``v + 1`` is younger than the retention (the current version always is). The refusal names
the table, the version, why it is needed and the oldest safe retention.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.delta_log import DeltaLog
from assetlake_dagster.lake.delta_sql import is_delta_table, path_identifier, session_conf
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import TableUri, interval_hours

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Delta's default ``delta.deletedFileRetentionDuration``: the restore window of a table
#: that sets none.
DEFAULT_RETENTION_HOURS = 7 * 24
#: VACUUM lists the table's folders in as many Spark tasks as this allows; Spark's default
#: (10000) made a VACUUM of a three-version table take 38-55 s on a local engine, 4 s with 32.
VACUUM_SETTINGS = {"spark.sql.sources.parallelPartitionDiscovery.parallelism": "32"}


class VacuumRefused(ConfigError):
    """A ``VACUUM`` that would delete files a version still needs; nothing was deleted."""


@dataclass(frozen=True)
class Need:
    """A version of the table that must stay readable, and why.

    Example:
        >>> Need(3, "recorded by analytics/orders' materialization of 2024-05-01 (run 1a2b)").version
        3
    """

    version: int
    reason: str


@dataclass(frozen=True)
class TableFiles:
    """What a table holds on storage: its current version's data files, and every data
    file in its folder (old versions' included, which ``VACUUM`` may delete)."""

    current_files: int
    current_bytes: int
    stored_files: int
    stored_bytes: int

    def as_metadata(self) -> dict[str, int]:
        return {
            "current_files": self.current_files,
            "current_bytes": self.current_bytes,
            "stored_files": self.stored_files,
            "stored_bytes": self.stored_bytes,
        }


@dataclass(frozen=True)
class MaintenanceResult:
    """One ``OPTIMIZE`` or ``VACUUM``: the table before and after, and its commit."""

    operation: str
    before: TableFiles
    after: TableFiles
    version: int
    retain_hours: Optional[int] = None

    def summary(self, uri: TableUri) -> str:
        """One line for a log or a terminal.

        Example:
            >>> r = MaintenanceResult("OPTIMIZE", TableFiles(40, 4000, 80, 8000), TableFiles(1, 3900, 81, 11900), 5)
            >>> r.summary(TableUri("s", "t"))
            'delta://s/t: OPTIMIZE -> version 5; current files 40 -> 1 (4000 -> 3900 bytes); stored files 80 -> 81 (8000 -> 11900 bytes)'
        """
        b, a = self.before, self.after
        return (
            f"{uri}: {self.operation}"
            + (f" RETAIN {self.retain_hours} HOURS" if self.retain_hours is not None else "")
            + f" -> version {self.version}; current files {b.current_files} -> {a.current_files} "
            f"({b.current_bytes} -> {a.current_bytes} bytes); stored files {b.stored_files} -> {a.stored_files} "
            f"({b.stored_bytes} -> {a.stored_bytes} bytes)"
        )


def retention_hours(properties: Mapping[str, str]) -> float:
    """The table's restore window in hours: its ``delta.deletedFileRetentionDuration``.

    Example:
        >>> retention_hours({"delta.deletedFileRetentionDuration": "interval 2 days"})
        48.0
        >>> retention_hours({})
        168
    """
    text = properties.get("delta.deletedFileRetentionDuration")
    hours = interval_hours(text.strip()) if text else None
    return DEFAULT_RETENTION_HOURS if hours is None else hours


def required_hours(needed: int, commit_times: Mapping[int, dt.datetime], now: dt.datetime) -> int:
    """The shortest retention, in whole hours, that keeps version ``needed`` readable.

    Example:
        >>> t = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
        >>> times = {3: t, 4: t + dt.timedelta(hours=2)}
        >>> required_hours(3, times, t + dt.timedelta(hours=30)), required_hours(4, times, t)
        (28, 0)
    """
    successor = commit_times.get(needed + 1)
    if successor is None:  # the current version (or one not in the log): nothing removes its files
        return 0
    return max(0, math.ceil((now - successor).total_seconds() / 3600))


def check_vacuum(
    uri: TableUri,
    retain_hours: int,
    window_hours: float,
    needs: Sequence[Need],
    commit_times: Mapping[int, dt.datetime],
    now: dt.datetime,
) -> None:
    """Refuse a ``VACUUM … RETAIN retain_hours HOURS`` that would break a version still needed.

    Raises:
        VacuumRefused: the retention is below the restore window, or a needed version's
            files would go; the message names the version, why, and the oldest safe retention.

    Example:
        >>> t = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
        >>> times = {1: t, 2: t + dt.timedelta(hours=1), 3: t + dt.timedelta(hours=50)}
        >>> check_vacuum(TableUri("s", "t"), 24, 24, [Need(1, "pinned")], times, t + dt.timedelta(hours=60))
        Traceback (most recent call last):
        ...
        assetlake_dagster.lake.maintenance.VacuumRefused: delta://s/t: VACUUM RETAIN 24 HOURS would delete files of version 1 (pinned). The oldest safe retention is 59 hours: run it with --retain 59 or more.
    """
    if retain_hours < window_hours:
        raise VacuumRefused(
            f"{uri}: VACUUM RETAIN {retain_hours} HOURS is shorter than the table's restore window of "
            f"{_hours(window_hours)} (delta.deletedFileRetentionDuration). Retain at least {math.ceil(window_hours)} "
            "hours, or shorten the window with '-- properties delta.deletedFileRetentionDuration=\"interval <n> days\"'."
        )
    worst: Optional[tuple[int, Need]] = None
    for need in needs:
        hours = required_hours(need.version, commit_times, now)
        if hours > retain_hours and (worst is None or hours > worst[0]):
            worst = (hours, need)
    if worst is not None:
        hours, need = worst
        raise VacuumRefused(
            f"{uri}: VACUUM RETAIN {retain_hours} HOURS would delete files of version {need.version} ({need.reason}). "
            f"The oldest safe retention is {hours} hours: run it with --retain {hours} or more."
        )


def table_files(spark: SparkSession, lake: Lake, path: str) -> TableFiles:
    """The current version's files (``DESCRIBE DETAIL``) and every data file stored."""
    detail = spark.sql(f"DESCRIBE DETAIL {path_identifier(path)}").collect()[0]
    stored_files = stored_bytes = 0
    files = lake.files
    folders = [path]
    while folders:
        folder = folders.pop()
        for entry in files.list_folder(folder):
            if entry.name.startswith(("_", ".")) and "=" not in entry.name:
                continue  # _delta_log, Spark's _SUCCESS and hidden checksum files, not _partition=<key>
            full = files.join(folder, entry.name)
            # A local listing does not say which names are folders (a store's does).
            if entry.is_dir or (not lake.is_url and os.path.isdir(full)):
                folders.append(full)
            else:
                stored_files += 1
                stored_bytes += entry.size if entry.size is not None else _local_size(full)
    return TableFiles(int(detail["numFiles"] or 0), int(detail["sizeInBytes"] or 0), stored_files, stored_bytes)


def _local_size(path: str) -> int:
    return os.path.getsize(path)


def optimize_table(spark: SparkSession, lake: Lake, uri: TableUri) -> MaintenanceResult:
    """``OPTIMIZE`` the table (compaction; clustering when it declares ``cluster_by``).

    Example:
        >>> print(optimize_table(spark, lake, TableUri("s", "t")).summary(TableUri("s", "t")))  # doctest: +SKIP
    """
    path = _table_path(spark, lake, uri)
    before = table_files(spark, lake, path)
    spark.sql(f"OPTIMIZE {path_identifier(path)}").collect()
    return MaintenanceResult("OPTIMIZE", before, table_files(spark, lake, path), DeltaLog.open(path, lake.files).latest_version)


def commit_times(lake: Lake, path: str) -> dict[int, dt.datetime]:
    """Each readable version's commit time, from the Delta log (no Spark)."""
    log = DeltaLog.open(path, lake.files)
    return {c.version: c.timestamp for c in log.read_commits(log.first_readable - 1, log.latest_version)}


def restore_window(spark: SparkSession, path: str) -> float:
    """The table's restore window in hours (:func:`retention_hours` of its properties)."""
    detail = spark.sql(f"DESCRIBE DETAIL {path_identifier(path)}").collect()[0]
    return retention_hours(dict(detail["properties"] or {}))


#: Finds the versions that must stay readable, given the start of the restore window and the
#: table's commit times (:func:`assetlake_dagster.defs.maintenance_jobs.needed_versions`).
NeedsFinder = Callable[[dt.datetime, Mapping[int, dt.datetime]], Sequence[Need]]


def vacuum_table(
    spark: SparkSession,
    lake: Lake,
    uri: TableUri,
    retain_hours: Optional[int] = None,
    find_needs: NeedsFinder = lambda since, times: (),
    now: Optional[dt.datetime] = None,
) -> MaintenanceResult:
    """``VACUUM`` the table after :func:`check_vacuum` allowed it.

    Args:
        retain_hours: keep the files of versions younger than this (default: the restore window).
        find_needs: the versions that must stay readable; called once, with the window's
            start and the commit times this function read anyway.
        now: the time the check measures ages from (default: now).

    Raises:
        VacuumRefused: see :func:`check_vacuum`; nothing was deleted.
    """
    path = _table_path(spark, lake, uri)
    now = now or dt.datetime.now(dt.timezone.utc)
    window = restore_window(spark, path)
    retain = math.ceil(window) if retain_hours is None else int(retain_hours)
    times = commit_times(lake, path)
    needs = find_needs(now - dt.timedelta(hours=window), times)
    check_vacuum(uri, retain, window, needs, times, now)
    before = table_files(spark, lake, path)
    with session_conf(spark, VACUUM_SETTINGS):
        spark.sql(f"VACUUM {path_identifier(path)} RETAIN {retain} HOURS").collect()
    after = table_files(spark, lake, path)
    return MaintenanceResult("VACUUM", before, after, DeltaLog.open(path, lake.files).latest_version, retain_hours=retain)


def _table_path(spark: SparkSession, lake: Lake, uri: TableUri) -> str:
    path = lake.table_path(uri)
    if not is_delta_table(spark, path):
        raise ConfigError(f"{uri}: there is no Delta table at {path}.")
    return path


def _hours(hours: float) -> str:
    return f"{hours / 24:g} days" if hours >= 24 and hours % 24 == 0 else f"{hours:g} hours"
