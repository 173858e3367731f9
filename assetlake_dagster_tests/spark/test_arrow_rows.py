"""The suite's in-process ``createDataFrame`` shortcut (assetlake_dagster_tests.arrow_rows)
builds the same DataFrame as PySpark's own path, and leaves everything else to it."""

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import SparkSession

from assetlake_dagster_tests import arrow_rows

SCHEMA = "i INT, l BIGINT, s STRING, d DOUBLE, b BOOLEAN, day DATE, f FLOAT, t TINYINT"
ROWS = [
    (1, 2**40, "ann", 1.5, True, dt.date(2024, 1, 31), 0.25, 7),
    (None, None, None, None, None, None, None, None),
    (-3, -1, "", float("nan"), False, dt.date(1970, 1, 1), -0.0, -128),
    [4, 0, "zoë ✓", -2.0, True, dt.date(2999, 12, 31), 3.0, 127],
]


def pyspark_path(spark, rows, schema):
    return SparkSession.createDataFrame.__wrapped__(spark, rows, schema)


def test_simple_rows_go_through_arrow_and_come_out_the_same(spark):
    through_arrow = arrow_rows._through_arrow(spark, ROWS, SCHEMA)
    assert through_arrow is not None
    expected = pyspark_path(spark, ROWS, SCHEMA)
    assert through_arrow.schema == expected.schema
    assert [tuple(map(str, r)) for r in through_arrow.collect()] == [tuple(map(str, r)) for r in expected.collect()]
    assert [tuple(map(str, r)) for r in spark.createDataFrame(ROWS, SCHEMA).collect()] == [
        tuple(map(str, r)) for r in expected.collect()
    ]


@pytest.mark.parametrize(
    "rows, schema",
    [
        ([(True,)], "i INT"),  # PySpark rejects a bool for an integer
        ([(1,)], "d DOUBLE"),  # and an int for a double
        ([(dt.datetime(2024, 1, 1),)], "day DATE"),
        ([(dt.datetime(2024, 1, 1),)], "ts TIMESTAMP"),
        ([(Decimal("1.5"),)], "x DECIMAL(4,1)"),
        ([([1, 2],)], "a ARRAY<INT>"),
        ([{"i": 1}], "i INT"),
        ([(1, 2)], "i INT"),
        ([(1,)], ["i"]),
        ([("\ud800",)], "s STRING"),  # a lone surrogate: Arrow cannot encode it
        ([(2**31,)], "i INT"),
    ],
)
def test_anything_else_takes_pysparks_own_path(spark, rows, schema):
    assert arrow_rows._through_arrow(spark, rows, schema) is None


def test_pysparks_own_errors_are_kept(spark):
    with pytest.raises(Exception, match="IntegerType"):
        spark.createDataFrame([(True,)], "i INT").collect()
