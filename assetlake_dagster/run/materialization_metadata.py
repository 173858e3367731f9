"""The metadata each materialization records: Delta version, metrics, schema, preview.

Building it costs no full-table Spark action after the write:

- the row count of the slice comes from the commit when the commit states it exactly (a
  replace's ``numOutputRows``, or any WRITE that created the table); otherwise from the
  version's checksum file when this process can read the lake (its file list with each
  file's ``numRecords``: :mod:`assetlake_dagster.lake.checksum`, no Spark job); otherwise
  from one ``COUNT(*)`` that Delta answers from the log's file statistics for a whole
  table (no data file is read), or from the batch's one grouped per-partition count, or,
  for one partition, a count that reads only that partition's files (Parquet footers, no
  column);
  a partitioned write records it as ``dagster/partition_row_count`` and the whole table's
  (the first commit's count, else the checksum's, else a ``COUNT(*)`` from the log's
  statistics) as ``dagster/row_count``, Dagster's conventions;
- the schema is the Delta table's, as of the version, from the log (no Spark job);
- the preview is the first rows of the slice in a stable order (the key, else the first
  columns): read with PyArrow from the files the version's checksum lists, in this
  process, when the slice is small plain Parquet (:mod:`assetlake_dagster.lake.arrow_preview`,
  no Spark job); otherwise a top-10 of the slice by Spark (one scan of the slice's files,
  never of other partitions).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

import dagster as dg

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.arrow_preview import preview_rows
from assetlake_dagster.lake.checksum import FileRows, rows_by_partition, rows_in, version_file_rows
from assetlake_dagster.lake.delta_sql import read
from assetlake_dagster.lake.files import LakeFiles
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.run.schema_history import ColumnShape, next_schema_version
from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import WriteResult
from assetlake_dagster.writes.create import CREATE_OPERATION, REPLACE_OPERATION
from assetlake_dagster.spark.session import driver_on_this_machine
from assetlake_dagster.writes.slices import partition_predicate

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, Row, SparkSession
    from pyspark.sql.types import DataType, StructType


PREVIEW_ROWS = 10
#: A preview cell longer than this is cut (with an ellipsis); every column is shown.
PREVIEW_CELL_CHARS = 40
#: Without a key, the preview is ordered by this many leading (orderable) columns.
PREVIEW_ORDER_COLUMNS = 3
#: The operations of a commit that states the rows it wrote: a DataFrame writer's, and one
#: made by ``CREATE [OR REPLACE] TABLE … AS SELECT`` (writes/create.py); their metric.
WRITE_OPERATIONS = frozenset({"WRITE", CREATE_OPERATION, REPLACE_OPERATION})
OUTPUT_ROWS_METRIC = "numOutputRows"
#: The schema history of a table on its materializations (run/schema_history.py).
SCHEMA_VERSION_KEY = "assetlake/schema_version"
SCHEMA_DIFF_KEY = "assetlake/schema_diff"
#: A merge's or history write's rows by kind, from its commit's metrics (``assetlake diff`` shows them).
ROW_CHANGES_KEY = "assetlake/row_changes"


def column_schema(schema: StructType, descriptions: Optional[Mapping[str, str]] = None) -> dg.TableSchema:
    """Spark schema -> Dagster ``TableSchema`` (``dagster/column_schema``).

    A column's description comes from ``descriptions`` (matched case-insensitively, as
    Spark matches names), else from the column's Delta comment.

    Example:
        >>> from pyspark.sql.types import StructType, StructField, IntegerType
        >>> table = column_schema(StructType([StructField("id", IntegerType(), False)]), {"ID": "The key"})
        >>> table.columns[0].type, table.columns[0].description, table.columns[0].constraints.nullable
        ('int', 'The key', False)
    """
    described = {name.lower(): text for name, text in (descriptions or {}).items()}
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name=field.name,
                type=field.dataType.simpleString(),
                description=described.get(field.name.lower()) or _comment(field.metadata),
                constraints=dg.TableColumnConstraints(nullable=field.nullable),
            )
            for field in schema.fields
        ]
    )


def _comment(field_metadata: Mapping[str, Any]) -> Optional[str]:
    """A column's Delta comment (``COMMENT 'text'``), if it is a non-empty string."""
    comment = field_metadata.get("comment")
    return comment if isinstance(comment, str) and comment else None


def preview_order(schema: StructType, key: Sequence[str] = ()) -> list[str]:
    """The columns a preview is ordered by: ``_partition`` (a batch reads day by day), then
    the key, or else the first few columns Spark can order (not maps, arrays or structs).

    Example:
        >>> from pyspark.sql.types import IntegerType, MapType, StringType, StructField, StructType
        >>> tags = MapType(StringType(), IntegerType())
        >>> fields = [StructField("id", IntegerType()), StructField("tags", tags), StructField("name", StringType())]
        >>> preview_order(StructType(fields))
        ['id', 'name']
    """
    from pyspark.sql.types import AtomicType

    fields = {f.name: f for f in schema.fields}
    order = [PARTITION_COLUMN] if PARTITION_COLUMN in fields else []
    if key:
        return order + [c for c in key if c in fields]
    orderable = [n for n, f in fields.items() if n != PARTITION_COLUMN and isinstance(f.dataType, AtomicType)]
    return order + orderable[:PREVIEW_ORDER_COLUMNS]


def preview_cell(value: Any, width: int = PREVIEW_CELL_CHARS) -> str:
    """One Markdown table cell: ``NULL``, pipes escaped, one line, at most ``width`` chars.

    Example:
        >>> preview_cell(None), preview_cell("x" * 50, width=10)
        ('NULL', 'xxxxxxxxx…')
    """
    text = "NULL" if value is None else str(value)
    text = " ".join(text.splitlines())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text.replace("|", "\\|")


def markdown_preview(df: DataFrame, limit: int = PREVIEW_ROWS, key: Sequence[str] = ()) -> str:
    """The first ``limit`` rows of ``df`` in a stable order (:func:`preview_order`), as a
    Markdown table of every column, each cell cut to :data:`PREVIEW_CELL_CHARS`."""
    order = preview_order(df.schema, key)
    first = (df.orderBy(*order) if order else df).limit(limit)
    try:
        rows = first.collect()
    except (ValueError, OverflowError):
        # A timestamp whose local time falls outside years 1-9999 has no Python datetime
        # (PySpark's collect raises): Spark renders the timestamps as text instead.
        rows = _timestamps_as_text(first).collect()
    return markdown_table(df.columns, rows)


def _timestamps_as_text(df: DataFrame) -> DataFrame:
    """``df`` with every column that holds a timestamp, at any depth, cast to Spark's text."""
    columns = [
        df[f.name].cast("string").alias(f.name) if _holds_timestamp(f.dataType) else df[f.name]
        for f in df.schema.fields
    ]
    return df.select(*columns)


def _holds_timestamp(data_type: DataType) -> bool:
    """Whether ``data_type`` is a timestamp or a struct, array or map with one inside."""
    from pyspark.sql.types import ArrayType, MapType, StructType, TimestampNTZType, TimestampType

    if isinstance(data_type, (TimestampType, TimestampNTZType)):
        return True
    if isinstance(data_type, StructType):
        return any(_holds_timestamp(f.dataType) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return _holds_timestamp(data_type.elementType)
    if isinstance(data_type, MapType):
        return _holds_timestamp(data_type.keyType) or _holds_timestamp(data_type.valueType)
    return False


def markdown_table(columns: Sequence[str], rows: Sequence[Row]) -> str:
    """``rows`` under a header of ``columns``, as a Markdown table (:func:`preview_cell`).

    Example:
        >>> print(markdown_table(["id", "note"], [(1, "a|b"), (2, None)]))
        | id | note |
        | --- | --- |
        | 1 | a\\|b |
        | 2 | NULL |
    """
    header = "| " + " | ".join(columns) + " |"
    rule = "| " + " | ".join("---" for _ in columns) + " |"
    body = ["| " + " | ".join(preview_cell(v) for v in row) + " |" for row in rows]
    return "\n".join([header, rule, *body])


def slice_preview(
    table: DataFrame,
    key: Sequence[str] = (),
    partitions: Sequence[str] = (),
    files: Optional[LakeFiles] = None,
    path: str = "",
    file_rows: Optional[Sequence[FileRows]] = None,
    limit: int = PREVIEW_ROWS,
) -> str:
    """The slice's preview (:func:`markdown_preview`): from the version's files with PyArrow
    when this process reads them (``files``) and the checksum lists them (``file_rows``),
    and they allow it (:func:`~assetlake_dagster.lake.arrow_preview.preview_rows`); else
    from ``table`` (the slice, lazily) by Spark. Both render the same rows alike.
    """
    if files is not None and file_rows is not None:
        schema = table.schema
        order = preview_order(schema, key)
        rows = preview_rows(files, path, file_rows, schema, order, limit, partitions)
        if rows is not None:
            return markdown_table(schema.names, rows)
    return markdown_preview(table, limit, key)


def slice_table(
    spark: SparkSession, path: str, version: Optional[int], partitions: Sequence[str] = ()
) -> DataFrame:
    """The slice as of ``version``: the whole table, or the ``partitions``' rows.

    Lazy: resolving it (and its ``schema``) reads the Delta log only, no Spark job.
    """
    table = read(spark, path, version)
    return table.where(partition_predicate(partitions)) if partitions else table


def committed_row_count(strategy: str, result: WriteResult) -> Optional[int]:
    """The slice's row count as of ``result.version`` when its commit states it exactly.

    That is when the commit is a ``WRITE`` (DataFrame writer) whose slice holds exactly the
    rows it wrote (``numOutputRows``):

    - ``replace``: it overwrote the whole table, or replaced the slice's partitions
      (``replaceWhere`` on ``_partition`` removes every row of the slice it does not write);
    - any strategy's first commit (version 0): the table held nothing before, and a
      partitioned write's rows all lie inside its slice.

    ``None`` otherwise: a MERGE or an append to an existing table also keeps rows it did
    not write, and ``manual`` and no-op results name no such commit.

    Example:
        >>> committed_row_count("replace", WriteResult(True, 4, "WRITE", {"numOutputRows": "7"}))
        7
        >>> committed_row_count("append", WriteResult(True, 4, "WRITE", {"numOutputRows": "7"})) is None
        True
    """
    if result.operation not in WRITE_OPERATIONS or result.version is None:
        return None
    rows = result.operation_metrics.get(OUTPUT_ROWS_METRIC)
    if rows is None or not str(rows).isdigit():
        return None
    if strategy == WriteStrategy.REPLACE.value or result.version == 0:
        return int(rows)
    return None


def committed_table_row_count(strategy: str, result: WriteResult) -> Optional[int]:
    """The whole table's row count as of ``result.version`` when its commit states it: a
    first commit's (:func:`committed_row_count`), the table having held nothing before.

    Example:
        >>> committed_table_row_count("append", WriteResult(True, 0, "WRITE", {"numOutputRows": "7"}))
        7
        >>> committed_table_row_count("replace", WriteResult(True, 4, "WRITE", {"numOutputRows": "7"})) is None
        True
    """
    return committed_row_count(strategy, result) if result.version == 0 else None


def slice_row_count(
    spark: SparkSession,
    path: str,
    strategy: str,
    result: WriteResult,
    partitions: Sequence[str] = (),
    partition_counts: Optional[Mapping[str, int]] = None,
    file_rows: Optional[Sequence[FileRows]] = None,
) -> int:
    """Rows in the slice as of ``result.version``, without scanning the table's data.

    In order: the commit's own count (:func:`committed_row_count`); the sum of a batch's
    ``partition_counts`` (:func:`partition_row_counts`); the version's ``file_rows`` from
    its checksum (:func:`~assetlake_dagster.lake.checksum.version_file_rows`); a
    whole-table ``COUNT(*)``, which Delta answers from the ``numRecords`` statistics in the
    log (its plan is a ``LocalTableScan``; it reads no data file); for one partition, a
    count that reads only the footers of that partition's files.
    """
    exact = committed_row_count(strategy, result)
    if exact is not None:
        return exact
    if partition_counts is not None and partitions and set(partition_counts) == set(partitions):
        return sum(int(c) for c in partition_counts.values())
    if file_rows is not None:
        rows = rows_in(file_rows, PARTITION_COLUMN if partitions else None, partitions)
        if rows is not None:
            return rows
    return slice_table(spark, path, result.version, partitions).count()


def table_row_count(
    spark: SparkSession,
    path: str,
    strategy: str,
    result: WriteResult,
    file_rows: Optional[Sequence[FileRows]] = None,
) -> int:
    """Rows in the whole table as of ``result.version``, without scanning its data.

    A first commit's own count (the table held nothing before it), else the sum of the
    version's ``file_rows`` (its checksum), else a ``COUNT(*)`` that Delta answers from the
    log's ``numRecords`` statistics.
    """
    exact = committed_table_row_count(strategy, result)
    if exact is not None:
        return exact
    total = rows_in(file_rows) if file_rows is not None else None
    if total is not None:
        return total
    return read(spark, path, result.version).count()


def _row_counts(
    spark: SparkSession,
    path: str,
    strategy: str,
    result: WriteResult,
    partitions: Sequence[str],
    partition_counts: Optional[Mapping[str, int]],
    file_rows: Optional[Sequence[FileRows]],
) -> dict[str, Any]:
    """Dagster's conventions: ``dagster/row_count`` is the table's; a partitioned write
    also records its slice's rows as ``dagster/partition_row_count`` (a batch's
    materializations then get their own partition's, see the IO manager)."""
    rows = slice_row_count(spark, path, strategy, result, partitions, partition_counts, file_rows)
    if not partitions:
        return {"dagster/row_count": dg.MetadataValue.int(rows)}
    return {
        "dagster/partition_row_count": dg.MetadataValue.int(rows),
        "dagster/row_count": dg.MetadataValue.int(table_row_count(spark, path, strategy, result, file_rows)),
    }


def materialization_metadata(
    spark: SparkSession,
    uri: TableUri,
    path: str,
    strategy: str,
    result: WriteResult,
    partitions: Sequence[str] = (),
    partition_counts: Optional[Mapping[str, int]] = None,
    key: Sequence[str] = (),
    descriptions: Optional[Mapping[str, str]] = None,
    file_rows: Optional[Sequence[FileRows]] = None,
    files: Optional[LakeFiles] = None,
) -> dict[str, Any]:
    """Everything one managed write records on its Dagster materialization.

    For a partitioned table, ``dagster/partition_row_count`` and the preview are those of
    the slice written (``partitions``), ``dagster/row_count`` the whole table's; the preview is ordered by ``key`` (merge, history), else by the
    first columns. ``partition_counts``: a batch's rows per partition as of the version,
    when already counted (:func:`partition_row_counts`), so that the slice is not counted
    again. ``descriptions``: column descriptions for ``dagster/column_schema``.
    ``file_rows``: the version's data files and rows from its checksum, when this process
    read it (:func:`~assetlake_dagster.lake.checksum.version_file_rows`), and ``files``
    the lake's files as this process reads them (:func:`version_files_here`): with both, the
    preview is read without Spark when it can be. See the module docstring for what each
    value costs.
    """
    table = slice_table(spark, path, result.version, partitions)
    metadata: dict[str, Any] = {
        "dagster/uri": dg.MetadataValue.path(path),
        "dagster/table_name": uri.qualified_name,
        **_row_counts(spark, path, strategy, result, partitions, partition_counts, file_rows),
        "dagster/column_schema": column_schema(table.schema, descriptions),
        "assetlake/table": str(uri),
        "assetlake/strategy": strategy,
        "delta/version": dg.MetadataValue.int(result.version) if result.version is not None else None,
        "delta/committed": result.committed,
        "delta/operation": result.operation or "none (nothing changed)",
        "delta/operation_metrics": dg.MetadataValue.json(dict(result.operation_metrics)),
        "assetlake/rows_written": dg.MetadataValue.int(result.rows_written),
        ROW_CHANGES_KEY: _row_changes(strategy, result),
        "assetlake/preview": dg.MetadataValue.md(slice_preview(table, key, partitions, files, path, file_rows)),
    }
    return {k: v for k, v in metadata.items() if v is not None}


def _row_changes(strategy: str, result: WriteResult) -> Optional[dg.MetadataValue]:
    from assetlake_dagster.lake.row_diff import row_changes

    changes = row_changes(strategy, result.operation_metrics) if result.committed else None
    return dg.MetadataValue.json(changes) if changes is not None else None


def schema_version_metadata(
    instance: Optional[dg.DagsterInstance], asset_key: dg.AssetKey, schema: dg.TableSchema
) -> dict[str, Any]:
    """``assetlake/schema_version`` (and ``assetlake/schema_diff`` when it moved on) for a
    materialization of ``asset_key`` with ``schema``, numbered after the asset's previous
    materialization in ``instance`` (see :mod:`assetlake_dagster.run.schema_history`)."""
    previous_version, previous = None, None
    event = instance.get_latest_materialization_event(asset_key) if instance is not None else None
    if event is not None and event.asset_materialization is not None:
        recorded = event.asset_materialization.metadata
        version, columns = recorded.get(SCHEMA_VERSION_KEY), recorded.get("dagster/column_schema")
        if version is not None and columns is not None:
            previous_version, previous = int(version.value), _shapes(columns.value)
    version, diff = next_schema_version(previous_version, previous, _shapes(schema))
    metadata: dict[str, Any] = {SCHEMA_VERSION_KEY: dg.MetadataValue.int(version)}
    if diff:
        metadata[SCHEMA_DIFF_KEY] = dg.MetadataValue.md("\n".join(f"- {line}" for line in diff))
    return metadata


def _shapes(schema: dg.TableSchema) -> list[ColumnShape]:
    return [
        ColumnShape(c.name, c.type, c.constraints.nullable if c.constraints is not None else True)
        for c in schema.columns
    ]


def partition_row_counts(
    spark: SparkSession,
    path: str,
    result: WriteResult,
    partitions: Sequence[str],
    file_rows: Optional[Sequence[FileRows]] = None,
) -> dict[str, int]:
    """Rows per partition of the slice, as of the version written (0 for empty ones).

    From the version's ``file_rows`` (its checksum) when given, else one grouped query
    that reads only the slice's files, and of them only the footers (``_partition`` is a
    partition column, so no column is read).
    """
    if file_rows is not None:
        counts = rows_by_partition(file_rows, PARTITION_COLUMN, partitions)
        if counts is not None:
            return counts
    table = slice_table(spark, path, result.version, partitions)
    counts = {r[PARTITION_COLUMN]: int(r["count"]) for r in table.groupBy(PARTITION_COLUMN).count().collect()}
    return {key: counts.get(key, 0) for key in partitions}


def json_metadata_value(value: Any) -> Any:
    """Unwrap a metadata value that may arrive raw or as a ``JsonMetadataValue``."""
    value = getattr(value, "value", value)
    return json.loads(value) if isinstance(value, str) else value


def version_files_here(
    session: SparkSession, lake: Lake, path: str, version: Optional[int]
) -> tuple[Optional[LakeFiles], Optional[list[FileRows]]]:
    """The lake's files and the version's data files (with their rows, from its checksum),
    read by this process (no Spark job), when it reads the same files as the driver: an
    object-store lake, or a local one with the driver on this machine. ``(None, None)``
    otherwise, and ``(files, None)`` when the checksum cannot answer: the counts and the
    preview then come from Spark (see :mod:`assetlake_dagster.lake.checksum`).

    Example:
        >>> files, file_rows = version_files_here(spark, Lake("/data/lake"), "/data/lake/s/t", 3)  # doctest: +SKIP
        >>> sum(f.rows for f in file_rows)  # doctest: +SKIP
        42
    """
    if not lake.is_url and not driver_on_this_machine(session):
        return None, None
    try:
        files = lake.files
    except ConfigError:  # a store PyArrow cannot reach from here: Spark reads
        return None, None
    return files, version_file_rows(files, path, version) if version is not None else None
