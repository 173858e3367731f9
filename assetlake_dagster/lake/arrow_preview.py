"""A small version's preview rows read with PyArrow from its checksum's file list, no Spark.

The preview (:func:`~assetlake_dagster.run.materialization_metadata.markdown_preview`) is the first rows
of the slice just written, in a stable order. Asked of Spark it makes Delta rebuild the
version's state (three Spark jobs) and then scans and sorts the slice: about a tenth of what
a warm run of a small table costs (docs/performance.md). Delta's
checksum of the version already lists every data file (:mod:`~assetlake_dagster.lake.checksum`),
so for a small slice of plain Parquet files this module reads those files with PyArrow in
the run's own process, sorts them as Spark's ``orderBy`` does (nulls first) and turns the
first rows into PySpark ``Row`` objects with PySpark's own Arrow conversion, the one a Spark
Connect ``collect`` uses: the preview renders the same either way
(``spark/test_arrow_preview.py`` checks every type). Rows that tie on every ordering column
(no key, equal leading columns) come in the files' order here; Spark leaves their order open.

It answers ``None``, and Spark previews, whenever it cannot be exactly right: a file with a
deletion vector, a table with column mapping or another reader feature, a slice larger than
:data:`MAX_PREVIEW_BYTES`, a partition column that is not a string, an absolute file path
(a shallow clone), a NaN in an ordering column (Spark orders NaN last, Arrow with the
nulls), or a type or file PyArrow cannot read.

Example:
    >>> rows = preview_rows(files, "/lake/s/t", file_rows, df.schema, ["id"], 10)  # doctest: +SKIP
    >>> rows[0]  # doctest: +SKIP
    Row(id=1, name='a')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional
from urllib.parse import unquote, urlsplit

from assetlake_dagster.lake.checksum import FileRows, slice_files
from assetlake_dagster.lake.files import LakeFiles
from assetlake_dagster.spec.names import PARTITION_COLUMN

if TYPE_CHECKING:  # PyArrow and PySpark load when a preview is made
    import pyarrow as pa
    from pyspark.sql import Row
    from pyspark.sql.types import StructField, StructType

#: A slice whose files hold more bytes than this is previewed by Spark: PyArrow reads the
#: whole slice into this process to sort it.
MAX_PREVIEW_BYTES = 16 * 1024 * 1024


class _CannotPreview(Exception):
    """This slice needs Spark's reader (see the module docstring)."""


def preview_rows(
    files: LakeFiles,
    table_path: str,
    file_rows: Sequence[FileRows],
    schema: StructType,
    order: Sequence[str],
    limit: int,
    partitions: Sequence[str] = (),
    partition_column: str = PARTITION_COLUMN,
) -> Optional[list[Row]]:
    """The first ``limit`` rows of the slice ordered by ``order`` (ascending, nulls first),
    read from the version's files, or ``None`` when Spark must read them.

    Args:
        files: the lake's files, as this process reads them.
        table_path: the table's path (its files' paths are relative to it).
        file_rows: the version's data files, from its checksum.
        schema: the table's schema as of the version (Spark's), in column order.
        order: the columns to order by (:func:`~assetlake_dagster.run.materialization_metadata.preview_order`).
        limit: how many rows.
        partitions: the slice's values of ``partition_column``; empty: the whole table.
        partition_column: the column the slice is taken on.
    """
    if partitions:
        file_rows = slice_files(file_rows, partition_column, partitions)
        if file_rows is None:
            return None  # not a partition column of every file: a filter on data (Spark's)
    if not all(f.plain and f.path for f in file_rows) or sum(f.size for f in file_rows) > MAX_PREVIEW_BYTES:
        return None
    import pyarrow as pa

    try:
        table = _read_slice(files, table_path, file_rows, schema)
        return _first_rows(table, schema, order, limit)
    # ArithmeticError: a timestamp whose local time falls past year 9999 (Spark shows it as text).
    except (_CannotPreview, pa.ArrowException, OSError, ValueError, TypeError, ArithmeticError):
        return None


def _read_slice(files: LakeFiles, table_path: str, file_rows: Sequence[FileRows], schema: StructType) -> pa.Table:
    """Every row of ``file_rows`` in ``schema``'s columns and Arrow types (PySpark's)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    target = to_arrow_schema(schema)
    tables = [_read_file(files, table_path, f, schema, target) for f in file_rows]
    return pa.concat_tables(tables) if tables else target.empty_table()


def _read_file(files: LakeFiles, table_path: str, file: FileRows, schema: StructType, target: pa.Schema) -> pa.Table:
    import pyarrow as pa

    if urlsplit(file.path).scheme or file.path.startswith("/"):
        raise _CannotPreview("an absolute file path")
    data = files.parquet_file(files.join(table_path, unquote(file.path))).read()
    by_name = {name.lower(): i for i, name in enumerate(data.column_names)}
    columns = []
    for field, arrow_field in zip(schema.fields, target):
        if field.name in file.partition_values:
            columns.append(_partition_values(field, arrow_field, file.partition_values[field.name], data.num_rows))
        elif field.name.lower() in by_name:
            columns.append(data.column(by_name[field.name.lower()]).cast(arrow_field.type))
        else:  # a column added after this file was written: null in its rows, as Delta reads it
            columns.append(pa.nulls(data.num_rows, arrow_field.type))
    return pa.Table.from_arrays(columns, schema=target)


def _partition_values(field: StructField, arrow_field: pa.Field, value: Optional[str], rows: int) -> pa.Array:
    import pyarrow as pa
    from pyspark.sql.types import StringType

    if not isinstance(field.dataType, StringType):
        raise _CannotPreview("a partition column that is not a string")
    return pa.array([value] * rows, arrow_field.type)


def _first_rows(table: pa.Table, schema: StructType, order: Sequence[str], limit: int) -> list[Row]:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.conversion import ArrowTableToRowsConversion

    for name in order:
        column = table.column(name)
        if pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py():
            raise _CannotPreview("a NaN in an ordering column")
    if order:
        indices = pc.sort_indices(table, **_ascending_nulls_first(order))
        table = table.take(indices[:limit])
    else:
        table = table.slice(0, limit)
    return ArrowTableToRowsConversion.convert(table, schema)


def _ascending_nulls_first(order: Sequence[str]) -> dict:
    """``sort_indices`` options: each column ascending, nulls first (Spark's ``ASC``). PyArrow
    25 places nulls per key and deprecates the one placement for all keys."""
    import pyarrow as pa

    if int(pa.__version__.split(".")[0]) >= 25:
        return {"sort_keys": [(name, "ascending", "at_start") for name in order]}
    return {"sort_keys": [(name, "ascending") for name in order], "null_placement": "at_start"}
