"""Python values becoming Spark values: a naive timestamp is a wall time in the session's zone.

PySpark reads a naive ``datetime`` as a time in the Python process's local zone when it
turns rows into Spark values (a classic session's ``createDataFrame`` of rows:
``time.mktime``; a Spark Connect session's: ``astimezone(utc)``; a pandas frame on the
classic path without Arrow), but as a time in the session's zone
(``spark.sql.session.timeZone``) when a pandas frame goes through Arrow, and Spark's own
``CAST('2024-01-02 09:30:00' AS TIMESTAMP)`` does the same. Seeds, the given rows of SQL
unit tests and the pandas outputs of Python assets therefore loaded the same text as other
instants on a laptop in Tokyo than in CI (UTC). Here a naive timestamp gets the session
zone's ``tzinfo`` before PySpark sees it, which every path above reads as the same instant.

A session whose ``TIMESTAMP`` means ``TIMESTAMP_NTZ`` (``spark.sql.timestampType``) stores
wall times, not instants: its values are left naive (PySpark keeps their wall time, and
a Connect session refuses an aware value for such a column).

Collected the other way (``DataFrame.collect()``), PySpark gives a ``TIMESTAMP`` as a naive
wall time in the process's local zone; :func:`collected_in_zone` turns it back into an
aware time in the session's zone.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assetlake_dagster.errors import ConfigError

if TYPE_CHECKING:  # PySpark and pandas load when a run needs them, not with the definitions
    import pandas as pd
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType

#: The setting that names the session's zone, and its default (Spark's: the JVM's zone).
SESSION_TIME_ZONE = "spark.sql.session.timeZone"
#: ``TIMESTAMP_LTZ`` (instants, Spark's default) or ``TIMESTAMP_NTZ`` (wall times).
TIMESTAMP_TYPE = "spark.sql.timestampType"
#: Spark's zone offsets: ``+9``, ``+09``, ``+09:00``, ``+0900``, ``-05:30:00``, after an
#: optional ``UTC``/``GMT``/``UT`` prefix (Java's ``ZoneId.of``).
_OFFSET_RE = re.compile(r"^(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$")
_UTC_NAMES = {"Z", "UTC", "GMT", "UT", "UTC0", "GMT0", "Zulu", "Universal"}
#: The three-letter names Spark also accepts (Java's ``ZoneId.SHORT_IDS``), as Java reads them.
_SHORT_IDS = {
    "EST": "-05:00", "HST": "-10:00", "MST": "-07:00", "ACT": "Australia/Darwin", "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo", "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
    "CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan", "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
}


def parse_time_zone(name: str) -> dt.tzinfo:
    """A Spark session time zone name as a Python ``tzinfo``.

    Raises:
        ConfigError: a name Python does not know, with how to spell it.

    Example:
        >>> parse_time_zone("Asia/Tokyo"), parse_time_zone("+09:00"), parse_time_zone("UTC")
        (zoneinfo.ZoneInfo(key='Asia/Tokyo'), datetime.timezone(datetime.timedelta(seconds=32400)), datetime.timezone.utc)
    """
    text = _SHORT_IDS.get(name.strip(), name.strip())
    if text in _UTC_NAMES:
        return dt.timezone.utc
    offset = _OFFSET_RE.match(text)
    if offset:
        sign, hours, minutes, seconds = offset.groups()
        delta = dt.timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        if delta <= dt.timedelta(hours=18):  # Java's bound for a zone offset
            return dt.timezone(-delta if sign == "-" else delta)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"{SESSION_TIME_ZONE} is '{name}', a zone Python does not know, so naive timestamps cannot be read in it. "
            "Set it to a region ID such as 'UTC' or 'Europe/Berlin', or an offset such as '+09:00'."
        ) from None


def session_time_zone(spark: "SparkSession") -> dt.tzinfo:
    """The session's time zone (``spark.sql.session.timeZone``), as a ``tzinfo``.

    Example:
        >>> session_time_zone(spark)  # doctest: +SKIP
        datetime.timezone.utc
    """
    return parse_time_zone(spark.conf.get(SESSION_TIME_ZONE))


def timestamps_are_wall_times(spark: "SparkSession") -> bool:
    """Whether the session's ``TIMESTAMP`` is ``TIMESTAMP_NTZ`` (wall times, no zone).

    Example:
        >>> timestamps_are_wall_times(spark)  # doctest: +SKIP
        False
    """
    return (spark.conf.get(TIMESTAMP_TYPE, "TIMESTAMP_LTZ") or "").strip().upper() == "TIMESTAMP_NTZ"


def in_zone(value: Any, zone: dt.tzinfo) -> Any:
    """``value`` with each naive ``datetime`` in it (inside plain lists, tuples and mappings
    too) given ``zone``: the same wall time, now an instant. Aware values and the rest are kept.

    Example:
        >>> in_zone([dt.datetime(2024, 1, 2, 9, 30), dt.date(2024, 1, 2), "x"], dt.timezone.utc)
        [datetime.datetime(2024, 1, 2, 9, 30, tzinfo=datetime.timezone.utc), datetime.date(2024, 1, 2), 'x']
    """
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=zone) if value.tzinfo is None else value
    if type(value) in (list, tuple):  # not a Row or a namedtuple: rebuilt, they would lose their names
        converted = [in_zone(v, zone) for v in value]
        return converted if isinstance(value, list) else tuple(converted)
    if isinstance(value, Mapping):
        return {k: in_zone(v, zone) for k, v in value.items()}
    return value


def in_session_zone(spark: "SparkSession", value: Any) -> Any:
    """``value`` (a value, or plain lists, tuples and mappings of them) with its naive
    timestamps read in the session's zone, as :func:`in_zone` does.

    For values bound to a query's parameter markers (``spark.sql(query, args=...)``), such as
    a SQL file's ``-- $name (timestamp)`` arguments: PySpark reads a naive ``datetime``
    argument in the process's zone, Spark's ``CAST`` of the same text in the session's. A
    session whose ``TIMESTAMP`` is ``TIMESTAMP_NTZ`` gets ``value`` as it is (see the module
    docstring); the session's settings are asked only when a naive timestamp is there.

    Example:
        >>> spark.conf.get("spark.sql.session.timeZone")  # doctest: +SKIP
        'UTC'
        >>> in_session_zone(spark, {"since": dt.datetime(2024, 1, 2, 9, 30), "top_n": 5})  # doctest: +SKIP
        {'since': datetime.datetime(2024, 1, 2, 9, 30, tzinfo=datetime.timezone.utc), 'top_n': 5}
    """
    if not _has_naive(value) or timestamps_are_wall_times(spark):
        return value
    return in_zone(value, session_time_zone(spark))


def rows_in_session_zone(spark: "SparkSession", rows: Sequence[Any]) -> list[Any]:
    """``rows`` for ``spark.createDataFrame``, their naive timestamps read in the session's zone.

    Rows are tuples, lists or mappings of Python values. A session whose ``TIMESTAMP`` is
    ``TIMESTAMP_NTZ`` gets them as they are (see the module docstring).

    Example:
        >>> rows = rows_in_session_zone(spark, [(1, dt.datetime(2024, 1, 2, 9, 30))])  # doctest: +SKIP
        >>> spark.createDataFrame(rows, "id INT, at TIMESTAMP")  # doctest: +SKIP
    """
    if not any(_has_naive(row) for row in rows) or timestamps_are_wall_times(spark):
        return list(rows)
    zone = session_time_zone(spark)
    return [in_zone(row, zone) for row in rows]


def pandas_in_session_zone(spark: "SparkSession", frame: "pd.DataFrame") -> "pd.DataFrame":
    """``frame`` with its naive timestamp columns localized to the session's zone.

    PySpark's Arrow path already reads a naive ``datetime64`` column in the session's zone
    (``tz_localize(zone, ambiguous=False)``: the later of a repeated hour); its path without
    Arrow, and Python ``datetime`` objects in an ``object`` column, read them in the process's.
    Localized here the same way, both give the same instants. The frame is copied only when
    a column changes.

    Example:
        >>> frame = pd.DataFrame({"at": pd.to_datetime(["2024-01-02 09:30"])})  # doctest: +SKIP
        >>> str(pandas_in_session_zone(spark, frame)["at"].dtype)  # doctest: +SKIP
        'datetime64[ns, UTC]'
    """
    if sys.modules.get("pandas") is None:
        return frame
    from pandas.api.types import is_datetime64_dtype

    naive = [
        i for i, (_, s) in enumerate(frame.items())
        if is_datetime64_dtype(s.dtype) or (s.dtype == object and s.map(_has_naive).any())
    ]
    # The session's settings are asked only for a frame with naive times (a round trip on Connect).
    if not naive or timestamps_are_wall_times(spark):
        return frame
    zone = session_time_zone(spark)
    frame = frame.copy()
    for i in naive:  # by position: column names may repeat
        series = frame.iloc[:, i]
        if is_datetime64_dtype(series.dtype):
            frame.isetitem(i, series.dt.tz_localize(zone, ambiguous=False))
        else:
            frame.isetitem(i, series.map(lambda v: in_zone(v, zone)))
    return frame


def collected_in_zone(value: Any, data_type: "DataType", zone: dt.tzinfo) -> Any:
    """A value of ``data_type`` as ``collect()`` gave it, its ``TIMESTAMP`` values (inside
    arrays, maps and structs too) as aware times in ``zone``.

    PySpark gives a ``TIMESTAMP`` as the naive wall time of its instant in the process's local
    zone; a ``TIMESTAMP_NTZ`` is a wall time already and is kept.

    Example:
        >>> row = spark.sql("SELECT TIMESTAMP'2024-01-02 09:30:00' AS at").collect()[0]  # doctest: +SKIP
        >>> collected_in_zone(row["at"], TimestampType(), dt.timezone.utc)  # doctest: +SKIP
        datetime.datetime(2024, 1, 2, 9, 30, tzinfo=datetime.timezone.utc)
    """
    from pyspark.sql.types import ArrayType, MapType, StructType, TimestampType

    if value is None:
        return None
    if isinstance(data_type, TimestampType) and isinstance(value, dt.datetime):
        return value.astimezone(zone)  # naive: read as local time, which is what PySpark made it
    if isinstance(data_type, ArrayType) and isinstance(value, (list, tuple)):
        return [collected_in_zone(v, data_type.elementType, zone) for v in value]
    if isinstance(data_type, MapType) and isinstance(value, Mapping):
        return {
            collected_in_zone(k, data_type.keyType, zone): collected_in_zone(v, data_type.valueType, zone)
            for k, v in value.items()
        }
    if isinstance(data_type, StructType):
        fields = value.asDict() if hasattr(value, "asDict") else value
        if isinstance(fields, Mapping):
            types = {f.name: f.dataType for f in data_type.fields}
            return {k: collected_in_zone(v, types[k], zone) if k in types else v for k, v in fields.items()}
    return value


def _has_naive(value: Any) -> bool:
    if isinstance(value, dt.datetime):
        return value.tzinfo is None
    if isinstance(value, (list, tuple)):
        return any(_has_naive(v) for v in value)
    if isinstance(value, Mapping):
        return any(_has_naive(v) for v in value.values())
    return False
