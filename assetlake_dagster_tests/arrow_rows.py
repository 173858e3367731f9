"""The in-process session's ``createDataFrame`` of a list of simple rows, through Arrow.

A classic SparkSession turns a Python list into a DataFrame through a Python worker
(``pyspark.daemon`` forks one per task; Spark stops it after a minute idle): about 0.25
CPU-s per task, plus the fork. The spark and dagster layers build their input rows that way
hundreds of times, and at 29bd67e the suite spent 228 CPU-s in such workers
(``docs/ci-time.md``). A ``pyarrow.Table`` goes to the JVM without one. Measured on an
in-process session, twelve warm writes of 50 rows: 17.8 s of wall and 25 JVM CPU-s from lists,
13.0 s and 22.5 CPU-s from Arrow tables.

Only what both paths turn into the same rows goes through Arrow: a list of tuples or lists,
an explicit schema of nullable integral, floating, string, boolean or date columns, and values
of exactly the Python types PySpark's own schema check accepts for them (``None`` too).
Anything else (timestamps, decimals, nested types, ``Row`` or dict rows, a value PySpark
would reject) takes PySpark's own path, unchanged, errors included. Spark Connect sessions
are untouched (their client sends Arrow already).
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any, Optional

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
)

#: The Python type of a non-null value that each Spark type takes through Arrow (exactly
#: that type: PySpark's check rejects a bool for an integer column, an int for a double).
_PYTHON_TYPE = {
    ByteType: int,
    ShortType: int,
    IntegerType: int,
    LongType: int,
    FloatType: float,
    DoubleType: float,
    StringType: str,
    BooleanType: bool,
    DateType: dt.date,
}


def install(monkeypatch) -> None:
    """Route the classic sessions' ``createDataFrame`` of simple rows through Arrow."""
    original = SparkSession.createDataFrame

    @functools.wraps(original)
    def create_data_frame(self, data, schema=None, *args, **kwargs):
        if not args and not kwargs:
            frame = _through_arrow(self, data, schema)
            if frame is not None:
                return frame
        return original(self, data, schema, *args, **kwargs)

    monkeypatch.setattr(SparkSession, "createDataFrame", create_data_frame)


def _through_arrow(spark: SparkSession, data: Any, schema: Any) -> Optional[Any]:
    """The DataFrame built from an Arrow table, or ``None`` when ``data`` does not qualify."""
    if not isinstance(data, list) or not data or schema is None:
        return None
    struct = _struct(schema)
    if struct is None:
        return None
    width = len(struct.fields)
    python_types = []
    for field in struct.fields:
        python_type = _PYTHON_TYPE.get(type(field.dataType))
        if python_type is None or not field.nullable:
            return None
        python_types.append(python_type)
    for row in data:
        if type(row) not in (tuple, list) or len(row) != width:
            return None
        for value, python_type in zip(row, python_types):
            if value is not None and type(value) is not python_type:
                return None
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(struct)
    try:
        columns = [pa.array(list(column), type=field.type) for column, field in zip(zip(*data), arrow_schema)]
        table = pa.Table.from_arrays(columns, schema=arrow_schema)
    except (pa.ArrowException, TypeError, ValueError, UnicodeError):  # lone surrogates, overflow
        return None
    return spark.createDataFrame(table, struct)


@functools.lru_cache(maxsize=256)
def _parsed(ddl: str) -> Optional[StructType]:
    from pyspark.sql.types import _parse_datatype_string

    parsed = _parse_datatype_string(ddl)
    return parsed if isinstance(parsed, StructType) else None


def _struct(schema: Any) -> Optional[StructType]:
    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, str):
        return _parsed(schema)
    return None
