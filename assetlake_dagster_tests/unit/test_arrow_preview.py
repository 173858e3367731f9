"""When PyArrow previews a slice itself, and when it leaves it to Spark (no Spark here).

Parity with Spark's preview on real Delta tables is ``spark/test_arrow_preview.py``; these
build the files with PyArrow and check the order and every reason to answer ``None``.
"""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from assetlake_dagster.lake import arrow_preview
from assetlake_dagster.lake.arrow_preview import preview_rows
from assetlake_dagster.lake.checksum import FileRows
from assetlake_dagster.lake.files import LocalFiles

SCHEMA = StructType(
    [StructField("id", LongType()), StructField("score", DoubleType()), StructField("_partition", StringType())]
)


def parquet(table_path, name, **columns):
    """A data file under ``table_path`` holding ``columns``; its ``FileRows`` as a checksum lists it."""
    table = pa.table(columns)
    (table_path / name).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, table_path / name)
    size = (table_path / name).stat().st_size
    partition = name.split("/")[0].split("=", 1)[1] if "=" in name else None
    return FileRows({"_partition": partition}, table.num_rows, name.replace(" ", "%20"), size, plain=True)


def preview(table_path, file_rows, order=("id",), partitions=(), schema=SCHEMA):
    return preview_rows(LocalFiles(), str(table_path), file_rows, schema, list(order), 3, partitions)


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t"
    files = [
        parquet(path, "_partition=d1/a.parquet", id=pa.array([5, None, 2], pa.int64()), score=[0.5, 1.5, None]),
        # A space in a partition value: the log names the file URL-encoded.
        parquet(path, "_partition=d 2/b.parquet", id=pa.array([4, 1], pa.int64()), score=[2.5, 3.5]),
    ]
    return path, files


def test_the_slice_is_ordered_nulls_first_and_cut_to_the_limit(table):
    path, files = table
    assert [tuple(r) for r in preview(path, files)] == [(None, 1.5, "d1"), (1, 3.5, "d 2"), (2, None, "d1")]
    assert [r.id for r in preview(path, files, partitions=["d1"])] == [None, 2, 5]
    assert [r.id for r in preview(path, files, order=("_partition", "id"))] == [1, 4, None]
    assert preview(path, files, partitions=["d9"]) == []


def test_a_column_missing_from_a_file_reads_as_nulls(tmp_path):
    path = tmp_path / "t"
    files = [parquet(path, "_partition=d1/old.parquet", id=pa.array([1], pa.int32()))]
    # The old file's INT is widened to the schema's BIGINT; its missing score is NULL.
    assert [tuple(r) for r in preview(path, files)] == [(1, None, "d1")]


def test_what_plain_parquet_cannot_say_is_left_to_spark(table, tmp_path, monkeypatch):
    path, files = table
    dv = FileRows(files[0].partition_values, 2, files[0].path, files[0].size, plain=False)
    assert preview(path, [dv, files[1]]) is None, "a deletion vector or a reader feature"
    absolute = FileRows(files[0].partition_values, 3, f"file://{path}/{files[0].path}", files[0].size, plain=True)
    assert preview(path, [absolute]) is None, "an absolute path (a shallow clone)"
    gone = FileRows({"_partition": "d1"}, 3, "_partition=d1/gone.parquet", 10, plain=True)
    assert preview(path, [gone]) is None, "a file that cannot be read"
    assert preview(path, files, order=("score",)) is not None
    nan = parquet(path, "_partition=d1/nan.parquet", id=pa.array([7], pa.int64()), score=[float("nan")])
    assert preview(path, [*files, nan], order=("score",)) is None, "Spark orders NaN last, Arrow with the nulls"
    typed = StructType([StructField("id", LongType()), StructField("_partition", IntegerType())])
    assert preview(path, files, schema=typed) is None, "a partition column that is not a string"
    clustered = FileRows({}, 3, files[0].path, files[0].size, plain=True)
    assert preview(path, [clustered], partitions=["d1"]) is None, "the slice's column is not a partition column"
    monkeypatch.setattr(arrow_preview, "MAX_PREVIEW_BYTES", files[0].size)
    assert preview(path, files[:1]) is not None
    assert preview(path, files) is None, "a slice too large to read into this process"
