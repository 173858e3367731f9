"""Value parsing shared by the grammar and the runtime: argument values, partition dates and
Delta intervals.

The grammar calls these to report a located error; the runtime calls them on run config
and partition bounds. Both get the same answer because there is one parser.
"""

import datetime as dt
import re
from typing import Any, Optional

from assetlake_dagster.spec.model import ArgumentSpec, ArgumentType

# ASCII digits only: \d also matches '１' or '٣', which int() and fromisoformat() accept,
# so a look-alike would pass silently where Spark later reads something else.
_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INTERVAL_RE = re.compile(r"interval\s+([0-9]+)\s+(second|minute|hour|day|week)s?", re.IGNORECASE)
_UNIT_HOURS = {"second": 1 / 3600, "minute": 1 / 60, "hour": 1, "day": 24, "week": 168}


def interval_hours(text: str) -> Optional[float]:
    """The hours of a Delta interval property value (``interval 30 days``), ``None`` if it is not one.

    The ``-- properties`` grammar accepts what this reads; the VACUUM guard reads a
    table's ``delta.deletedFileRetentionDuration`` with it.

    Example:
        >>> interval_hours("interval 2 days"), interval_hours("interval 36 hours"), interval_hours("2 days")
        (48.0, 36.0, None)
    """
    match = _INTERVAL_RE.fullmatch(text)
    return None if match is None else float(int(match.group(1)) * _UNIT_HOURS[match.group(2).lower()])


def convert_value(text: str, type_: ArgumentType) -> Any:
    """Convert the text of an argument value to the Python value of ``type_``.

    Raises:
        ValueError: with a hint on how to write a valid value.

    Example:
        >>> convert_value("2024-01-31", ArgumentType.DATE), convert_value("'a b'", ArgumentType.STRING)
        (datetime.date(2024, 1, 31), 'a b')
    """
    if type_ in (ArgumentType.STRING, ArgumentType.DATE, ArgumentType.TIMESTAMP):
        # Quotes are optional; SQL habit is to quote strings and dates.
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
    if type_ is ArgumentType.STRING:
        return text
    if type_ is ArgumentType.INT and _INT_RE.fullmatch(text):
        return int(text)
    if type_ is ArgumentType.FLOAT and _FLOAT_RE.fullmatch(text):
        return float(text)
    if type_ is ArgumentType.BOOL and text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        if not text.isascii():
            pass  # a look-alike digit (fromisoformat would read '２０２４' as 2024)
        elif type_ is ArgumentType.DATE and _DATE_RE.fullmatch(text):
            return dt.date.fromisoformat(text)
        elif type_ is ArgumentType.TIMESTAMP and _DATE_RE.match(text):
            return dt.datetime.fromisoformat(text)
    except ValueError:
        pass  # e.g. 2024-02-30: right shape, not a real date
    raise ValueError(_VALUE_HINTS[type_])


_VALUE_HINTS = {
    ArgumentType.INT: "Write a whole number, e.g. '= 10'.",
    ArgumentType.FLOAT: "Write a number, e.g. '= 0.5'.",
    ArgumentType.BOOL: "Write 'true' or 'false'.",
    ArgumentType.DATE: "Write a date as YYYY-MM-DD, e.g. '= 2024-01-31'.",
    ArgumentType.TIMESTAMP: "Write an ISO timestamp, e.g. '= 2024-01-31T08:00:00'.",
}


def parse_partition_datetime(text: str) -> dt.datetime:
    """``2024-01-31`` or ``2024-01-31T06:00`` -> a naive datetime (ValueError otherwise).

    Example:
        >>> parse_partition_datetime("2024-01-31"), parse_partition_datetime("2024-01-31T06:00")
        (datetime.datetime(2024, 1, 31, 0, 0), datetime.datetime(2024, 1, 31, 6, 0))
    """
    if not _DATE_RE.match(text) or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?)?", text):
        raise ValueError(text)
    return dt.datetime.fromisoformat(text)


#: How to give a valid value in run config or a SQL test (not in the header's own syntax).
_GIVEN_HINTS = {
    ArgumentType.STRING: "Give a string.",
    ArgumentType.INT: "Give a whole number, e.g. 20.",
    ArgumentType.FLOAT: "Give a number, e.g. 0.5.",
    ArgumentType.BOOL: "Give true or false.",
    ArgumentType.DATE: "Give a date as YYYY-MM-DD, e.g. 2024-01-31.",
    ArgumentType.TIMESTAMP: "Give an ISO timestamp, e.g. 2024-01-31T08:00:00.",
}


def typed_value(arg: ArgumentSpec, value: Any) -> Any:
    """``value`` for ``arg`` as the Python value Spark binds.

    Text is parsed as in the SQL header (``"20"`` for an ``int``, ``"2024-01-31"`` for a
    ``date``), except that a ``string`` argument takes its text as it is. Python values
    must have the argument's type (an ``int`` is a valid ``float``).

    Raises:
        ValueError: with how to write a valid value.

    Example:
        >>> typed_value(ArgumentSpec("n", ArgumentType.INT), "5"), typed_value(ArgumentSpec("x", ArgumentType.FLOAT), 1)
        (5, 1.0)
    """
    type_ = arg.type
    if type_ is ArgumentType.STRING:
        if isinstance(value, str):
            return value
    elif isinstance(value, str):
        try:
            return convert_value(value, type_)
        except ValueError:
            pass
    elif isinstance(value, bool):
        if type_ is ArgumentType.BOOL:
            return value
    elif type_ is ArgumentType.INT and isinstance(value, int):
        return value
    elif type_ is ArgumentType.FLOAT and isinstance(value, (int, float)):
        return float(value)
    elif type_ is ArgumentType.TIMESTAMP and isinstance(value, dt.datetime):
        return value
    elif type_ is ArgumentType.DATE and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    raise ValueError(_GIVEN_HINTS[type_])
