"""Replace: the slice becomes exactly what the SELECT returned (whole-table overwrite)."""

from collections.abc import Sequence
from typing import Optional

from pyspark.sql import DataFrame, SparkSession

from assetlake_dagster.spec import WriteStrategy
from assetlake_dagster.writes.base import WritePlan, WriteStrategyBase, check_columns
from assetlake_dagster.writes.commit import WriteResult, WriteTarget, result_from_history


class ReplaceWrite(WriteStrategyBase):
    """Overwrite the table in one commit; the schema may change between runs."""

    strategy = WriteStrategy.REPLACE

    def plan(self, target: WriteTarget, columns: Optional[Sequence[str]] = None) -> WritePlan:
        return WritePlan(
            operation="Delta WRITE (mode=Overwrite, overwriteSchema=true): one commit",
            statement=(
                "df.write.format('delta').mode('overwrite').option('overwriteSchema', 'true')"
                f".save('{target.path}')"
            ),
        )

    def write(self, spark: SparkSession, df: DataFrame, target: WriteTarget) -> WriteResult:
        check_columns(self, target, df.columns)
        (
            df.write.format("delta")
            .mode("overwrite")
            .option("overwriteSchema", "true")
            .option("userMetadata", target.stamp.user_metadata())
            .save(target.path)
        )
        return result_from_history(spark, target, committed=True, rows_key=("numOutputRows",))
