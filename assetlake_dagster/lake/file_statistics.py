"""Bounds on a Delta table's values from its files' statistics, without Spark.

Every data file's ``add`` action carries statistics (``numRecords``, ``minValues``,
``maxValues``, ``nullCount``). The highest ``maxValues`` of a column over the table's files
bounds every value the column holds: a history run checks its timestamp against the bound of
``valid_from``/``valid_to`` instead of reading both columns of the whole table. The files come
from the version's checksum when it lists them (a table of few files), else from the log (the
latest checkpoint's and later commits' ``add`` actions, removed files included: a superset of
the live ones, so still a bound). Anything they cannot say gives ``None``, and the caller
asks Spark.

Example:
    >>> stats = '{"numRecords": 2, "maxValues": {"v": "2026-01-01T00:00:00.123Z"}, "nullCount": {"v": 0}}'
    >>> timestamp_bound([stats], ["v"])
    1767225600124000
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from typing import Optional

from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake.checksum import checksum_file_statistics, checksum_path
from assetlake_dagster.lake.delta_log import DeltaLog
from assetlake_dagster.lake.files import LakeFiles, LocalFiles

#: Delta writes a timestamp's statistics in milliseconds, truncated: the column's true
#: maximum may lie up to this many microseconds above the recorded one.
STATS_TRUNCATION_MICROS = 1000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def table_timestamp_bound(table_path: str, columns: Sequence[str], files: Optional[LakeFiles] = None) -> Optional[int]:
    """A bound (UTC microseconds) no value of the TIMESTAMP ``columns`` of the table's latest
    version exceeds; ``None`` when the statistics cannot say (or there is no table).
    """
    files = files or LocalFiles()
    try:
        log = DeltaLog.open(table_path, files)  # listed once: the latest version, and the log if needed
        try:
            checksum = json.loads(files.read_bytes(checksum_path(files, table_path, log.latest_version)))
        except Exception:  # missing, unreadable, not JSON: the log then
            checksum = None
        stats = checksum_file_statistics(checksum)
        if stats is None:
            stats = log.added_file_statistics()
    except (AssetlakeError, OSError):
        return None
    return timestamp_bound(stats, columns) if stats is not None else None


def timestamp_bound(stats: Iterable[Optional[str]], columns: Sequence[str]) -> Optional[int]:
    """The highest ``maxValues`` of the TIMESTAMP ``columns`` over the files' ``stats`` (JSON
    text each), plus the statistics' truncation; ``None`` when a file lacks statistics for a
    column that holds values, or one is not a zoned timestamp."""
    bound: Optional[int] = None
    for text in stats:
        try:
            file = json.loads(text) if text else None
        except ValueError:
            return None
        if not isinstance(file, dict) or not isinstance(file.get("numRecords"), int):
            return None
        highs, nulls = file.get("maxValues") or {}, file.get("nullCount") or {}
        for column in columns:
            high = highs.get(column) if isinstance(highs, dict) else None
            if high is None:
                if isinstance(nulls, dict) and nulls.get(column) == file["numRecords"]:
                    continue  # every value NULL
                return None
            try:
                at = dt.datetime.fromisoformat(str(high))
            except ValueError:
                return None
            if at.tzinfo is None:
                return None  # not a TIMESTAMP's statistic
            micros = (at - _EPOCH) // dt.timedelta(microseconds=1) + STATS_TRUNCATION_MICROS
            bound = micros if bound is None else max(bound, micros)
    return bound
