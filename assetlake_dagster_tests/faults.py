"""Fault injection shared by the write tests."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

FAILURE_MESSAGE = "boom on the last row"


def rows_failing_on_the_last(spark: SparkSession, rows: int = 1000, **literals: object) -> DataFrame:
    """``rows`` rows (``id`` 1..rows plus constant columns) whose last row raises in a UDF.

    The failure happens inside the Spark job that writes, after other tasks may already
    have written files: the commit must never happen.
    """

    @F.udf(IntegerType())
    def explode_on_last(value):
        if value == rows:
            raise ValueError(FAILURE_MESSAGE)
        return value

    columns = [explode_on_last(F.col("id").cast("int")).alias("id")]
    columns += [F.lit(value).alias(name) for name, value in literals.items()]
    return spark.range(1, rows + 1).select(*columns)
