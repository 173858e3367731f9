"""The metadata each materialization records: Delta version, metrics, schema, preview."""

import json
from collections.abc import Sequence
from typing import Any

import dagster as dg
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from assetlake_dagster.delta_sql import read
from assetlake_dagster.partitions import PARTITION_COLUMN
from assetlake_dagster.spec import TableUri
from assetlake_dagster.writes import WriteResult
from assetlake_dagster.writes.slices import partition_predicate

PREVIEW_ROWS = 10


def column_schema(schema: StructType) -> dg.TableSchema:
    """Spark schema -> Dagster ``TableSchema`` (``dagster/column_schema``)."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name=field.name,
                type=field.dataType.simpleString(),
                constraints=dg.TableColumnConstraints(nullable=field.nullable),
            )
            for field in schema.fields
        ]
    )


def markdown_preview(df: DataFrame, limit: int = PREVIEW_ROWS) -> str:
    """The first rows as a Markdown table (cells escaped, long values cut)."""
    rows = df.limit(limit).collect()

    def cell(value: Any) -> str:
        text = "NULL" if value is None else str(value)
        text = text.replace("|", "\\|").replace("\n", " ")
        return text if len(text) <= 60 else text[:57] + "..."

    header = "| " + " | ".join(df.columns) + " |"
    rule = "| " + " | ".join("---" for _ in df.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join([header, rule, *body])


def materialization_metadata(
    spark: SparkSession,
    uri: TableUri,
    path: str,
    strategy: str,
    result: WriteResult,
    partitions: Sequence[str] = (),
) -> dict[str, Any]:
    """Everything one managed write records on its Dagster materialization.

    The row count comes from Delta's file statistics (``count()`` on a Delta snapshot is
    answered from the log), so it costs no data scan. For a partitioned table, the row
    count and preview are those of the slice written (``partitions``).
    """
    table = read(spark, path, result.version)
    if partitions:
        table = table.where(partition_predicate(partitions))
    metadata: dict[str, Any] = {
        "dagster/uri": dg.MetadataValue.path(path),
        "dagster/table_name": uri.sql_name,
        "dagster/row_count": dg.MetadataValue.int(table.count()),
        "dagster/column_schema": column_schema(table.schema),
        "assetlake/table": str(uri),
        "assetlake/strategy": strategy,
        "delta/version": dg.MetadataValue.int(result.version) if result.version is not None else None,
        "delta/committed": result.committed,
        "delta/operation": result.operation or "none (nothing changed)",
        "delta/operation_metrics": dg.MetadataValue.json(dict(result.operation_metrics)),
        "assetlake/rows_written": dg.MetadataValue.int(result.rows_written),
        "assetlake/preview": dg.MetadataValue.md(markdown_preview(table)),
    }
    return {k: v for k, v in metadata.items() if v is not None}


def partition_row_counts(
    spark: SparkSession, path: str, result: WriteResult, partitions: Sequence[str]
) -> dict[str, int]:
    """Rows per partition of the slice, as of the version written (0 for empty ones)."""
    table = read(spark, path, result.version).where(partition_predicate(partitions))
    counts = {r[PARTITION_COLUMN]: int(r["count"]) for r in table.groupBy(PARTITION_COLUMN).count().collect()}
    return {key: counts.get(key, 0) for key in partitions}


def json_metadata_value(value: Any) -> Any:
    """Unwrap a metadata value that may arrive raw or as a ``JsonMetadataValue``."""
    value = getattr(value, "value", value)
    return json.loads(value) if isinstance(value, str) else value
