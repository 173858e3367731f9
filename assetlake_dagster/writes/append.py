"""Append: insert-only, for immutable event logs (to the slice's partitions, if partitioned).

A retry of the same run must not add the rows twice: the write carries Delta's
``txnAppId``/``txnVersion`` pair, and Delta skips a transaction it has already applied.
That is right only for retries; a new run gets a new app id and appends again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.spec import PARTITION_COLUMN, WriteStrategy
from assetlake_dagster.writes.slices import OPTIMIZED_WRITE
from assetlake_dagster.writes.base import (
    WritePlan,
    WriteStrategyBase,
    check_columns,
    check_rows_in_slice,
    check_schema_compatible,
    delta_schema,
    slice_rows,
    staged_scope_text,
)
from assetlake_dagster.writes.commit import WriteResult, WriteTarget, first_write_cleanup, no_commit, result_from_history
from assetlake_dagster.lake.versions import current_version
from assetlake_dagster.writes.create import (
    OPTIMIZE_WRITE_CONF,
    TXN_APP_ID_CONF,
    TXN_VERSION_CONF,
    create_table,
    needs_create_statement,
)

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, SparkSession


#: Each app id is used for one logical append, so its single version is a constant.
TXN_VERSION = 1


class AppendWrite(WriteStrategyBase):
    """Append the rows in one commit, at most once per run and slice."""

    strategy = WriteStrategy.APPEND

    def plan(self, target: WriteTarget, columns: Optional[Sequence[str]] = None) -> WritePlan:
        return WritePlan(
            operation="Delta WRITE (mode=Append, txnAppId per run and slice): one commit",
            statement=(
                f"df.write.format('delta').mode('append').option('txnAppId', "
                f"'{target.stamp.txn_app_id}').option('txnVersion', {TXN_VERSION})"
                f".save('{target.path}')"
            ),
        )

    def write(self, spark: SparkSession, df: DataFrame, target: WriteTarget) -> WriteResult:
        # A failed first write leaves no folder behind (Delta writes files before committing).
        with first_write_cleanup(spark, target.path):
            return self._write(spark, df, target)

    def _write(self, spark: SparkSession, df: DataFrame, target: WriteTarget) -> WriteResult:
        check_columns(self, target, df.columns)
        if target.partitioned:
            check_rows_in_slice(self, df, target)
        existing = delta_schema(spark, target.path)
        new_columns = (
            check_schema_compatible(self, target, df.schema, existing) if existing is not None else []
        )
        before = current_version(spark, target.path)
        if before is not None and df.isEmpty():
            return no_commit(before)  # Delta would commit a version that adds no rows
        writer = (
            df.write.format("delta")
            .mode("append")
            .option("txnAppId", target.stamp.txn_app_id)
            .option("txnVersion", TXN_VERSION)
            .option("userMetadata", target.stamp.user_metadata())
        )
        if new_columns:
            writer = writer.option("mergeSchema", "true")
        if target.partitioned:
            writer = writer.partitionBy(PARTITION_COLUMN).option(OPTIMIZED_WRITE, "true")
        if existing is None and needs_create_statement(target):
            settings = {TXN_APP_ID_CONF: target.stamp.txn_app_id, TXN_VERSION_CONF: str(TXN_VERSION)}
            if target.partitioned:
                settings[OPTIMIZE_WRITE_CONF] = "true"
            create_table(
                spark, df, target, partitioned=target.partitioned, settings=settings,
                otherwise=lambda: writer.save(target.path),
            )
        else:
            writer.save(target.path)
        result = result_from_history(spark, target, committed=True, rows_key=("numOutputRows",))
        # Delta skipped the write if this app id was applied before: the stamped commit
        # found is then the earlier attempt's, not newer than what we saw.
        if before is not None and result.version is not None and result.version <= before:
            return replace(result, committed=False)
        return result

    def staged_scope(self, spark: SparkSession, rows: DataFrame, target: WriteTarget) -> tuple[DataFrame, str]:
        """The current rows (of the slice) plus ``rows``."""
        current = slice_rows(spark, target)
        if current is None:
            return super().staged_scope(spark, rows, target)
        return current.unionByName(rows, allowMissingColumns=True), staged_scope_text(target)
