"""Fault injection shared by the write tests."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

FAILURE_MESSAGE = "boom on the last row"


def rows_failing_on_the_last(spark: SparkSession, rows: int = 1000, **literals: object) -> DataFrame:
    """``rows`` rows (``id`` 1..rows plus constant columns) whose last row raises.

    The failure happens inside the Spark job that writes, after other tasks may already
    have written files: the commit must never happen. Spark's ``raise_error``, evaluated
    row by row in the JVM (a Python UDF would fork Python workers for the same).
    """
    failing = F.when(F.col("id") == rows, F.raise_error(F.lit(FAILURE_MESSAGE))).otherwise(F.col("id"))
    columns = [failing.cast("int").alias("id")]
    columns += [F.lit(value).alias(name) for name, value in literals.items()]
    return spark.range(1, rows + 1).select(*columns)
