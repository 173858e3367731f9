"""Replace: the slice becomes exactly what the SELECT returned.

A whole table is overwritten (its schema may change); a Python asset's replace of the rows the
table holds already commits nothing (:mod:`~assetlake_dagster.writes.content`). A partitioned table has only its
slice replaced, with Delta's ``replaceWhere`` on ``_partition``: one atomic commit that
leaves other partitions' files untouched; Delta rejects any row outside the predicate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.spec import PARTITION_COLUMN, WriteStrategy
from assetlake_dagster.writes.base import (
    WritePlan,
    WriteStrategyBase,
    check_columns,
    check_rows_in_slice,
    check_schema_compatible,
    delta_schema,
)
from assetlake_dagster.spark.session import persist_rows
from assetlake_dagster.writes.commit import WriteResult, WriteTarget, first_write_cleanup, no_commit, result_from_history
from assetlake_dagster.writes.content import content_fingerprint, latest_content
from assetlake_dagster.writes.create import OPTIMIZE_WRITE_CONF, create_table, needs_create_statement
from assetlake_dagster.lake.versions import current_version
from assetlake_dagster.writes.slices import OPTIMIZED_WRITE, partition_predicate

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, SparkSession


class ReplaceWrite(WriteStrategyBase):
    """Overwrite the table, or only the slice's partitions, in one commit.

    Its data tests see exactly the new rows (the base class's scopes).
    """

    strategy = WriteStrategy.REPLACE

    def plan(self, target: WriteTarget, columns: Optional[Sequence[str]] = None) -> WritePlan:
        if target.partitioned:
            predicate = partition_predicate(target.partitions)
            return WritePlan(
                operation=(
                    "Delta WRITE (mode=Overwrite, replaceWhere on _partition, partitionBy _partition): "
                    "one commit; other partitions untouched"
                ),
                statement=(
                    "df.write.format('delta').mode('overwrite').partitionBy('_partition')"
                    f".option('replaceWhere', \"{predicate}\").option('optimizeWrite', 'true')"
                    f".save('{target.path}')"
                ),
                predicate=predicate,
            )
        return WritePlan(
            operation="Delta WRITE (mode=Overwrite, overwriteSchema=true): one commit",
            statement=(
                "df.write.format('delta').mode('overwrite').option('overwriteSchema', 'true')"
                f".save('{target.path}')"
            ),
        )

    def write(self, spark: SparkSession, df: DataFrame, target: WriteTarget) -> WriteResult:
        # A failed first write leaves no folder behind (Delta writes files before committing).
        with first_write_cleanup(spark, target.path):
            return self._write(spark, df, target)

    def _write(self, spark: SparkSession, df: DataFrame, target: WriteTarget) -> WriteResult:
        if target.partitioned:
            return self._replace_slice(spark, df, target)
        check_columns(self, target, df.columns)
        if not target.compare_content:
            return self._overwrite(spark, df, target)
        staged = persist_rows(df)  # fingerprinted, then written: the rows are computed once
        try:
            fingerprint = content_fingerprint(staged)
            if fingerprint is not None:
                latest = latest_content(target.path)
                if latest is not None and latest[1] == fingerprint:
                    return no_commit(current_version(spark, target.path))
                target = dataclasses.replace(target, stamp=dataclasses.replace(target.stamp, content=fingerprint))
            return self._overwrite(spark, staged, target)
        finally:
            staged.unpersist()

    def _overwrite(self, spark: SparkSession, df: DataFrame, target: WriteTarget) -> WriteResult:
        writer = (
            df.write.format("delta")
            .mode("overwrite")
            .option("overwriteSchema", "true")
            .option("userMetadata", target.stamp.user_metadata())
        )
        clustered = bool(target.cluster_by)  # an overwrite would drop the clustering (writes/create.py)
        if clustered or (needs_create_statement(target) and delta_schema(spark, target.path) is None):
            create_table(spark, df, target, replace=clustered, otherwise=lambda: writer.save(target.path))
        else:
            writer.save(target.path)
        return result_from_history(spark, target, committed=True, rows_key=("numOutputRows",))

    def _replace_slice(self, spark: SparkSession, df: DataFrame, target: WriteTarget) -> WriteResult:
        check_columns(self, target, df.columns)
        existing = delta_schema(spark, target.path)
        # replaceWhere cannot change the schema of the other partitions: only additive
        # columns (mergeSchema) are allowed, a dropped column is an error.
        new_columns = check_schema_compatible(self, target, df.schema, existing) if existing is not None else []
        writer = (
            df.write.format("delta")
            .mode("overwrite")
            .partitionBy(PARTITION_COLUMN)
            .option("replaceWhere", partition_predicate(target.partitions))
            .option(OPTIMIZED_WRITE, "true")
            .option("userMetadata", target.stamp.user_metadata())
        )
        if new_columns:
            writer = writer.option("mergeSchema", "true")
        before = current_version(spark, target.path) if existing is not None else None
        if existing is None and needs_create_statement(target):
            # What replaceWhere enforces on a write: no row outside the slice.
            check_rows_in_slice(self, df, target)
            create_table(
                spark, df, target, partitioned=True, settings={OPTIMIZE_WRITE_CONF: "true"},
                otherwise=lambda: writer.save(target.path),
            )
        else:
            writer.save(target.path)
        # An empty slice over a partition with no rows changes nothing: Delta commits nothing.
        return result_from_history(spark, target, committed=True, rows_key=("numOutputRows",), before=before)
