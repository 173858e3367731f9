"""``-- partitioned daily|hourly|weekly|monthly|static|dynamic …``: how the table is sliced.

Time windows take ``start=`` (and ``end=``, ``tz=``, ``event_time=``); static partitions list their keys;
dynamic ones name their Dagster set. Any kind may end in ``batch=<n>``: how many partitions
one backfill run writes in one commit.
"""

import datetime as dt
import unicodedata
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.annotations.header import HeaderDraft, Word, comma_items, option_name, parse_timezone
from assetlake_dagster.errors import did_you_mean
from assetlake_dagster.spec import (
    DEFAULT_BACKFILL_BATCH,
    PartitionKind,
    PartitionSpec,
    is_identifier,
    parse_partition_datetime,
)

PARTITIONED_FORM = (
    "-- partitioned daily|hourly|weekly|monthly start=<YYYY-MM-DD> [end=…] [tz=…] [event_time=<column>] [batch=<n>], "
    "'-- partitioned static a,b,c' or '-- partitioned dynamic <name>'"
)
#: Options of each kind of ``-- partitioned`` line.
TIME_WINDOW_OPTIONS = ("start=", "end=", "tz=", "event_time=", "batch=")
#: Time windows start and end within these years: year 1 or 9999 in a zone overflows
#: Python's datetime when Dagster computes the neighbouring windows.
MIN_PARTITION_DATE = dt.datetime(1900, 1, 1)
MAX_PARTITION_DATE = dt.datetime(2999, 12, 31, 23, 59, 59)
#: Largest ``batch=``: one run and one commit write at most this many partitions.
MAX_BACKFILL_BATCH = 1000


def parse_partitioned(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    """Parse a ``-- partitioned`` line into ``draft.partitions``."""
    if draft.partitioned is not None:
        draft.error(
            keyword,
            f"partitions are already declared on line {draft.partitioned.line}.",
            "A table has one partitioning; keep one '-- partitioned' line.",
        )
        return
    draft.partitioned = keyword
    if not rest:
        draft.error(keyword, "'-- partitioned' needs a kind.", f"Write '{PARTITIONED_FORM}'.")
        return
    kind_word = rest[0]
    try:
        kind = PartitionKind(kind_word.text)
    except ValueError:
        hint = did_you_mean(kind_word.text, [k.value for k in PartitionKind]).strip()
        kinds = ", ".join(k.value for k in PartitionKind)
        draft.error(kind_word, f"unknown partition kind '{kind_word.text}'.", hint or f"Kinds are: {kinds}.")
        return
    location = draft.src.location(keyword.line, keyword.col)
    words = rest[1:]
    batch = DEFAULT_BACKFILL_BATCH
    if words and words[-1].text.startswith("batch="):
        batch_word = words.pop()
        parsed = _batch(draft, batch_word)
        if parsed is None:
            return
        batch = parsed
    misplaced = next((w for w in words if w.text.startswith("event_time=")), None)
    if misplaced is not None and not kind.is_time_window:
        draft.error(
            misplaced,
            f"event_time= needs time-window partitions, not {kind.value}.",
            "A static or dynamic key is not a time; remove event_time=.",
        )
        return
    if kind is PartitionKind.STATIC:
        values = _static_values(draft, kind_word, raw, words)
        if values:
            draft.partitions = PartitionSpec(kind, values=values, batch_size=batch, location=location)
    elif kind is PartitionKind.DYNAMIC:
        if len(words) != 1 or not is_identifier(words[0].text):
            word = words[1] if len(words) > 1 else (words[0] if words else kind_word)
            draft.error(
                word,
                "'partitioned dynamic' needs one name.",
                "Write '-- partitioned dynamic <name>' with letters, digits and '_'.",
            )
            return
        draft.partitions = PartitionSpec(kind, name=words[0].text, batch_size=batch, location=location)
    else:
        _time_window(draft, keyword, kind, words, batch, location)

def check_not_history(draft: HeaderDraft) -> None:
    """SCD2 history rewrites the whole table, so it has no partitions to write one by one."""
    if draft.history is not None and draft.partitioned is not None:
        line = draft.src.line(draft.partitioned.line).strip()
        draft.error(
            draft.partitioned,
            f"'{draft.history.text}' cannot be combined with 'partitioned'.",
            f"SCD2 history is whole-table only; remove '{line}' or drop '{draft.history.text}'.",
        )


def _batch(draft: HeaderDraft, word: Word) -> Optional[int]:
    text = word.text[len("batch=") :]
    # ASCII digits only: str.isdigit() also accepts '²' and '１２', which int() rejects or reads.
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_BACKFILL_BATCH:
        draft.error(
            word,
            f"batch= must be a whole number from 1 to {MAX_BACKFILL_BATCH}, got '{text}'.",
            f"It is how many partitions one backfill run writes in one commit (default {DEFAULT_BACKFILL_BATCH}).",
        )
        return None
    return int(text)


def _static_values(draft: HeaderDraft, kind_word: Word, raw: str, words: list[Word]) -> tuple[str, ...]:
    if not words:
        draft.error(kind_word, "'partitioned static' needs partition keys.", "Write '-- partitioned static a,b,c'.")
        return ()
    first = words[0]
    text = raw[first.col - 1 : words[-1].col - 1 + len(words[-1].text)]
    values: list[str] = []
    for item in comma_items(text, first):
        if not item.text:
            draft.error(item, "empty partition key in the list.", "Write '-- partitioned static a,b,c'.", span=1)
        elif any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in item.text):
            bad = next(ch for ch in item.text if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"))
            draft.error(
                item,
                f"partition key {item.text!r} contains the control character {bad!r}.",
                "Partition keys are printable text (Dagster rejects tabs and newlines); remove it.",
            )
        elif "..." in item.text or "|" in item.text or "[" in item.text or "]" in item.text:
            draft.error(
                item,
                f"partition key '{item.text}' contains '...', '|', '[' or ']'.",
                "Dagster reserves them (ranges and multi-partition keys); choose another key.",
            )
        elif item.text in values:
            draft.error(item, f"partition key '{item.text}' is listed twice.", "Remove the repeated key.")
        else:
            values.append(item.text)
    return tuple(values) if len(values) == len(comma_items(text, first)) else ()


def _time_window(
    draft: HeaderDraft, keyword: Word, kind: PartitionKind, words: list[Word], batch: int, location: Any
) -> None:
    options: dict[str, Word] = {}
    for word in words:
        name = option_name(word.text)
        if name not in TIME_WINDOW_OPTIONS:
            hint = did_you_mean(name, TIME_WINDOW_OPTIONS).strip()
            draft.error(word, f"unknown option '{word.text}'.", hint or f"Write '{PARTITIONED_FORM}'.")
            return
        if name in options or name == "batch=":
            draft.error(word, f"option '{name}' is given twice or out of place.", "Put each option once; 'batch=' last.")
            return
        options[name] = word
    if "start=" not in options:
        draft.error(
            keyword,
            f"'partitioned {kind.value}' needs start=.",
            "Add the first partition's date, e.g. 'start=2024-01-01'.",
            span=len("partitioned"),
        )
        return
    start = _datetime_option(draft, options["start="])
    end = _datetime_option(draft, options["end="]) if "end=" in options else None
    tz = parse_timezone(draft, options["tz="]) if "tz=" in options else None
    if "tz=" in options and tz is None:
        return
    if start is None or ("end=" in options and end is None):
        return
    for word, value in ((options["start="], start), (options.get("end="), end)):
        if value is not None and not MIN_PARTITION_DATE <= value <= MAX_PARTITION_DATE:
            name = word.text.partition("=")[0]
            draft.error(
                word,
                f"{name}= {value.date().isoformat()} is outside the supported range "
                f"{MIN_PARTITION_DATE.year}-01-01 to {MAX_PARTITION_DATE.year}-12-31.",
                "Time-window partitions need dates a time zone can shift by a day and more; "
                f"choose a date in {MIN_PARTITION_DATE.year}..{MAX_PARTITION_DATE.year}.",
            )
            return
    if end is not None and end <= start:
        draft.error(options["end="], "end= must be after start=.", "end= is exclusive: the first instant not covered.")
        return
    event_time = options.get("event_time=")
    if event_time is not None and not is_identifier(event_time.text[len("event_time=") :]):
        draft.error(
            event_time,
            f"event_time= must name one output column, got '{event_time.text[len('event_time='):]}'.",
            "Write e.g. 'event_time=ordered_at': a DATE or TIMESTAMP column of the SELECT.",
        )
        return
    if event_time is not None and kind is PartitionKind.HOURLY and tz not in (None, "UTC"):
        draft.error(
            event_time,
            f"event_time= with hourly partitions needs tz=UTC, not '{tz}'.",
            "Dagster names the hours of a daylight-saving change apart ('01:00-0500'); keep hourly "
            "windows in UTC, or drop event_time= (one query per partition).",
        )
        return
    if not _dagster_accepts(draft, keyword, kind, start, end, tz, options):
        return
    draft.partitions = PartitionSpec(
        kind,
        start=options["start="].text[len("start=") :],
        end=options["end="].text[len("end=") :] if end is not None else None,
        timezone=tz,
        batch_size=batch,
        event_time=event_time.text[len("event_time=") :] if event_time is not None else None,
        location=location,
    )


def _dagster_accepts(
    draft: HeaderDraft,
    keyword: Word,
    kind: PartitionKind,
    start: dt.datetime,
    end: Optional[dt.datetime],
    tz: Optional[str],
    options: dict[str, Word],
) -> bool:
    """Build Dagster's own partitions definition now, so that what loads here also builds later.

    Dagster aligns the first partition to a whole hour/day/week/month at or after start=;
    with end= before that partition's end there is no partition at all, and Dagster then
    reports a first window after its last one (and fails on ranges).
    """
    cls = {
        PartitionKind.HOURLY: dg.HourlyPartitionsDefinition,
        PartitionKind.DAILY: dg.DailyPartitionsDefinition,
        PartitionKind.WEEKLY: dg.WeeklyPartitionsDefinition,
        PartitionKind.MONTHLY: dg.MonthlyPartitionsDefinition,
    }[kind]
    try:
        cls(start_date=start, end_date=end, timezone=tz or "UTC").get_first_partition_window()
    except Exception as err:  # noqa: BLE001 - any refusal by Dagster becomes a located error
        draft.error(
            keyword,
            f"Dagster cannot build these partitions: {str(err).splitlines()[0] if str(err) else type(err).__name__}.",
            "Choose other start=/end=/tz= values.",
            span=len("partitioned"),
        )
        return False
    first_start, first_end = first_window(kind, start)
    if end is not None and first_end > end:
        draft.error(
            options["end="],
            f"no whole {kind.value} partition fits between start= and end= (the first starts "
            f"{first_start:%Y-%m-%d %H:%M} and ends {first_end:%Y-%m-%d %H:%M}).",
            f"Partitions start on a whole {_UNIT[kind]}; move end= later or start= earlier.",
        )
        return False
    return True


def first_window(kind: PartitionKind, start: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The first whole partition at or after ``start`` (local times), as Dagster aligns it:
    hours, midnights, weeks from Sunday (Dagster's default), months from the 1st.

    Example:
        >>> first_window(PartitionKind.WEEKLY, dt.datetime(2024, 4, 1, 6))
        (datetime.datetime(2024, 4, 7, 0, 0), datetime.datetime(2024, 4, 14, 0, 0))
    """
    hour = start.replace(minute=0, second=0, microsecond=0)
    if kind is PartitionKind.HOURLY:
        begin = hour if hour == start else hour + dt.timedelta(hours=1)
        return begin, begin + dt.timedelta(hours=1)
    midnight = hour.replace(hour=0)
    day = midnight if midnight == start else midnight + dt.timedelta(days=1)
    if kind is PartitionKind.DAILY:
        return day, day + dt.timedelta(days=1)
    if kind is PartitionKind.WEEKLY:
        begin = day + dt.timedelta(days=(6 - day.weekday()) % 7)  # Sunday is weekday 6
        return begin, begin + dt.timedelta(days=7)
    begin = day if day.day == 1 else (day.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
    return begin, (begin + dt.timedelta(days=32)).replace(day=1)


_UNIT = {PartitionKind.HOURLY: "hour", PartitionKind.DAILY: "day", PartitionKind.WEEKLY: "week", PartitionKind.MONTHLY: "month"}


def _datetime_option(draft: HeaderDraft, word: Word) -> Optional[dt.datetime]:
    name, _, text = word.text.partition("=")
    try:
        return parse_partition_datetime(text)
    except ValueError:
        draft.error(
            word,
            f"{name}= '{text}' is not a date.",
            f"Write {name}=YYYY-MM-DD, or {name}=YYYY-MM-DDTHH:MM for an hour.",
        )
        return None
