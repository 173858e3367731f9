"""From the Delta partition values a table's commits changed to its reader's partition keys.

A file's ``partitionValues`` are strings. For a time-partitioned reader a value that is a
date (``2024-01-05``) covers that day, a timestamp an instant, in the reader's time zone;
each maps to the reader's partitions overlapping it, and with a ``window=`` mapping also
to the later partitions whose window includes it. A value equal to a partition key counts
as that partition. For a static- or dynamic-partitioned reader only values equal to one
of its keys count. Which keys exist (the range, a dynamic definition's keys) is asked of
:class:`ExistingPartitions`, once per tick and definition.

Example:
    >>> daily = dg.DailyPartitionsDefinition("2024-01-01")
    >>> existing = ExistingPartitions(dt.datetime(2024, 2, 1, tzinfo=dt.timezone.utc), lambda: None)
    >>> match = match_partition_keys(daily, (0, 0), [{"day": "2024-01-05"}], existing(daily))
    >>> sorted(match.keys)
    ['2024-01-05']
"""

import datetime as dt
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Optional
from zoneinfo import ZoneInfo

import dagster as dg

from assetlake_dagster.defs.dagster_internals import partition_keys_starting_in, time_window_of
from assetlake_dagster.lake.delta_log import Commit, PartitionValues

_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_TIMESTAMP_RE = re.compile(
    r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?", re.ASCII
)


@dataclass(frozen=True)
class PartitionKeyMatch:
    """Where one reader's partitions stand with the values a change touched.

    Attributes:
        keys: the existing partition keys to request.
        unmatched: the files' values that map to no key (neither a date, a timestamp nor a key).
        outside: keys the values map to that do not exist (before ``start=``, from ``end=``
            on, the current window).
    """

    keys: set[str]
    unmatched: list[PartitionValues]
    outside: set[str]


class ExistingPartitions:
    """The partition keys that exist at one instant, per partitions definition.

    One tick asks for the same definition often (every table and reader that shares it),
    so each definition's keys are listed once.

    Args:
        now: the instant the time-window definitions are read at (the tick's).
        dynamic_partitions_store: returns the store of dynamic partitions (the Dagster
            instance); called only for a dynamic definition, so a context without an
            instance serves the others.
    """

    def __init__(self, now: dt.datetime, dynamic_partitions_store: Callable[[], Optional[dg.DagsterInstance]]):
        self._now = now
        self._store = dynamic_partitions_store
        self._keys: dict[dg.PartitionsDefinition, set[str]] = {}

    def __call__(self, partitions_def: dg.PartitionsDefinition) -> set[str]:
        """The keys of ``partitions_def`` that exist now."""
        if partitions_def not in self._keys:
            store = self._store() if isinstance(partitions_def, dg.DynamicPartitionsDefinition) else None
            self._keys[partitions_def] = set(
                partitions_def.get_partition_keys(current_time=self._now, dynamic_partitions_store=store)
            )
        return self._keys[partitions_def]


def match_partition_keys(
    partitions_def: dg.PartitionsDefinition,
    offsets: tuple[int, int],
    values: Sequence[PartitionValues],
    existing: set[str],
) -> PartitionKeyMatch:
    """The reader's partitions whose data the changed files' partition values touched.

    Args:
        partitions_def: the reader's partitions.
        offsets: the reader's ``window=`` mapping: partition P reads upstream P+start .. P+end
            (``(0, 0)`` without one).
        values: the distinct partition values of the changed files (:func:`distinct_values`).
        existing: the reader's partition keys that exist now (:class:`ExistingPartitions`).

    Returns:
        The keys to request, the values that map to none, and the keys outside the range.
    """
    unmatched: list[PartitionValues] = []
    if not isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        keys: set[str] = set()
        for file_values in values:
            matched = {v for v in file_values.values() if v in existing}
            keys |= matched
            if not matched:
                unmatched.append(file_values)
        return PartitionKeyMatch(keys, unmatched, set())
    tz = ZoneInfo(partitions_def.timezone)
    candidates: set[str] = set()
    for file_values in values:
        hit = False
        for value in file_values.values():
            interval = time_interval(value, tz)
            if interval is None and value is not None and value in existing:
                window = time_window_of(partitions_def, value)
                interval = (window.start, window.end)
            if interval is not None:
                candidates.update(window_keys(partitions_def, interval, offsets))
                hit = True
        if not hit:
            unmatched.append(file_values)
    # A key outside the range is no partition (yet): the sensor says so instead of requesting it.
    return PartitionKeyMatch(candidates & existing, unmatched, candidates - existing)


def window_keys(
    partitions_def: dg.TimeWindowPartitionsDefinition,
    interval: tuple[dt.datetime, dt.datetime],
    offsets: tuple[int, int],
) -> list[str]:
    """The reader partitions that read ``interval``: those overlapping it, and with a
    ``window=`` mapping (P reads P+start .. P+end) those whose window includes them.

    Whether the keys exist is not checked: the definition's start and end are ignored.
    """
    start, end = interval
    start_offset, end_offset = offsets
    before, after = max(end_offset, 0), max(-start_offset, 0)
    longest = longest_window(partitions_def)
    # Only the windows near the interval are listed, not every key since the start.
    keys = partition_keys_starting_in(partitions_def, start - (before + 1) * longest, end + (after + 1) * longest)
    hit = [
        i
        for i, key in enumerate(keys)
        if (w := time_window_of(partitions_def, key)).start < end and w.end > start
    ]
    if not hit:
        return []
    return keys[max(hit[0] - end_offset, 0) : hit[-1] - start_offset + 1]


@functools.lru_cache(maxsize=128)
def longest_window(partitions_def: dg.TimeWindowPartitionsDefinition) -> dt.timedelta:
    """An upper bound of one window's length (months and DST days vary)."""
    start = partitions_def.start
    first = partition_keys_starting_in(partitions_def, start, start + dt.timedelta(days=32))[0]
    window = time_window_of(partitions_def, first)
    return (window.end - window.start) * 1.25 + dt.timedelta(hours=2)


def time_interval(value: Optional[str], tz: ZoneInfo) -> Optional[tuple[dt.datetime, dt.datetime]]:
    """The time a partition value stands for: a date its whole day, a timestamp an instant.

    A value without an offset is wall-clock time in ``tz`` (the reader's time zone); Delta
    writes timestamps in UTC only in the ISO form with ``Z``.

    Args:
        value: one partition value, as Delta writes it (``None`` for NULL).
        tz: the reader's time zone.

    Returns:
        ``[start, end)``, or ``None`` for a value that is neither a date nor a timestamp.

    Example:
        >>> time_interval("2024-01-05", ZoneInfo("UTC"))[0].isoformat()
        '2024-01-05T00:00:00+00:00'
        >>> time_interval("eu", ZoneInfo("UTC")) is None
        True
    """
    if value is None:
        return None
    try:
        if match := _DATE_RE.fullmatch(value):
            day = dt.date(*(int(g) for g in match.groups()))
            start = dt.datetime.combine(day, dt.time(), tzinfo=tz)
            return start, dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=tz)
        if match := _TIMESTAMP_RE.fullmatch(value):
            date, clock, fraction, offset = match.groups()
            micros = (fraction or "").ljust(6, "0")[:6]
            text = f"{date}T{clock}" + (f".{micros}" if fraction else "") + (
                "+00:00" if offset == "Z" else (offset or "")
            )
            instant = dt.datetime.fromisoformat(text)
            if instant.tzinfo is None:
                instant = instant.replace(tzinfo=tz)
            return instant, instant + dt.timedelta(microseconds=1)
    except ValueError:  # 2024-02-30, 25:00
        return None
    return None


def distinct_values(commits: Iterable[Commit]) -> list[PartitionValues]:
    """The distinct partition values of the files the commits added or removed, in order.

    Example:
        >>> distinct_values([Commit(1, 0, "WRITE", added=({"day": "2024-01-05"}, {"day": "2024-01-05"}))])
        [{'day': '2024-01-05'}]
    """
    seen: dict[tuple, PartitionValues] = {}
    for commit in commits:
        for values in (*commit.added, *commit.removed):
            seen.setdefault(tuple(sorted(values.items())), values)
    return list(seen.values())


def render_values(values: PartitionValues) -> str:
    """One file's partition values as a message quotes them.

    Example:
        >>> render_values({"day": "2024-01-05", "region": None})
        'day=2024-01-05,region=NULL'
    """
    return ",".join(f"{k}={v if v is not None else 'NULL'}" for k, v in values.items()) or "(none)"
