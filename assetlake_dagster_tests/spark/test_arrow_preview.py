"""The preview read with PyArrow from the checksum's files renders what Spark's renders.

Each case writes a real Delta table and compares the preview the IO manager records (PyArrow,
no Spark job) with Spark's own ``orderBy().limit().collect()`` of the same slice, cell for
cell: every type, nulls, NaN, timestamps far from now in a time zone that is not UTC, both
of Spark's timestamp encodings, slices of a partitioned table, a column added after the
first files, and the cases PyArrow must leave to Spark.
"""

import os
import time

import pytest

from assetlake_dagster.lake.arrow_preview import preview_rows
from assetlake_dagster.lake.delta_sql import read
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.run.materialization_metadata import (
    PREVIEW_ROWS,
    markdown_preview,
    preview_order,
    slice_preview,
    slice_table,
    version_files_here,
)
from assetlake_dagster.spec import PARTITION_COLUMN

# Every type a table may hold, nulls in every column, values at the edges of each.
EVERY_TYPE = """
SELECT * FROM VALUES
  (3, CAST(1 AS TINYINT), CAST(-2 AS SMALLINT), 3000000000L, CAST(0.1 AS FLOAT), 2.5D,
   CAST('12.30' AS DECIMAL(10,2)), 'a|b\nc', true, DATE'2024-02-29', TIMESTAMP'2024-03-10 02:30:00.123456',
   TIMESTAMP_NTZ'2024-01-01 00:00:00', X'00ff', array(1, NULL), map('k', 1), named_struct('a', 1, 'b', 'x')),
  (1, NULL, NULL, NULL, NULL, double('NaN'), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (2, CAST(-128 AS TINYINT), CAST(32767 AS SMALLINT), -9223372036854775808L, CAST(-0.0 AS FLOAT), -1e300D,
   CAST('-99999999.99' AS DECIMAL(10,2)), repeat('é', 50), false, DATE'0001-01-01', TIMESTAMP'9999-12-31 23:59:59.999999',
   TIMESTAMP_NTZ'1900-01-01 00:00:00.000001', X'', array(), map(), named_struct('a', NULL, 'b', NULL)),
  (4, CAST(0 AS TINYINT), CAST(0 AS SMALLINT), 0L, CAST('Infinity' AS FLOAT), double('-Infinity'),
   CAST('0.00' AS DECIMAL(10,2)), '', NULL, DATE'1970-01-01', TIMESTAMP'1960-06-01 12:00:00',
   NULL, NULL, NULL, map('a', NULL, 'b', 2), NULL)
AS t(id, tiny, small, big, f, d, dec, s, flag, day, ts, ntz, bin, arr, m, st)
"""


def local_time_zone(zone):
    """Python's local time zone set to ``zone`` while the test runs."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.fixture
def new_york():
    """Python's local time zone west of UTC: both previews turn instants into local time."""
    yield from local_time_zone("America/New_York")


@pytest.fixture
def tokyo():
    """East of UTC: the last instant of year 9999 is in year 10000 there."""
    yield from local_time_zone("Asia/Tokyo")


def spark_jobs(spark):
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(None) or [-1])


def both_previews(spark, lake_root, path, version, key=(), partitions=()):
    """The IO manager's preview (asserted to be PyArrow's, with no Spark job) and Spark's."""
    table = slice_table(spark, path, version, partitions)
    files, file_rows = version_files_here(spark, Lake(lake_root), path, version)
    before = spark_jobs(spark)
    schema = table.schema
    rows = preview_rows(files, path, file_rows, schema, preview_order(schema, key), PREVIEW_ROWS, partitions)
    recorded = slice_preview(table, key, partitions, files, path, file_rows)
    assert rows is not None, "PyArrow read this slice"
    assert spark_jobs(spark) == before, "and ran no Spark job"
    return recorded, markdown_preview(table, key=key)


@pytest.mark.parametrize("encoding", ["INT96", "TIMESTAMP_MICROS"])
def test_every_type_renders_as_spark_renders_it(spark, lake_root, new_york, encoding):
    path = f"{lake_root}/s/every_type"
    spark.conf.set("spark.sql.parquet.outputTimestampType", encoding)
    try:
        spark.sql(EVERY_TYPE).repartition(2).write.format("delta").save(path)
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    for key in [("s",), ("ts",), ("flag", "day"), ()]:
        ours, sparks = both_previews(spark, lake_root, path, 0, key)
        assert ours == sparks, key
    # Without a key the order is the first columns' (id, tiny, small), ascending.
    assert [line.split(" | ")[0] for line in ours.splitlines()[2:]] == ["| 1", "| 2", "| 3", "| 4"]
    assert "| nan |" in ours and "| 9999-12-31 18:59:59.999999 |" in ours  # New York's time


def test_slices_of_a_partitioned_table_with_a_column_added_later(spark, lake_root):
    path = f"{lake_root}/s/sliced"
    days = ["2024-01-01", "2024-01-02", "2024-01-03"]
    first = spark.sql(
        "SELECT id, concat('n', id) AS name, element_at(array('2024-01-01', '2024-01-02'), CAST(id % 2 + 1 AS INT))"
        f" AS {PARTITION_COLUMN} FROM range(30)"
    )
    first.write.format("delta").partitionBy(PARTITION_COLUMN).save(path)
    later = spark.sql(f"SELECT id + 100 AS id, 'm' AS name, id * 1.5D AS score, '{days[2]}' AS {PARTITION_COLUMN} FROM range(5)")
    later.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    # Delta leaves the file list out of a schema change's checksum: the next commit has it.
    spark.sql(f"SELECT 200L AS id, 'z' AS name, 0.5D AS score, '{days[0]}' AS {PARTITION_COLUMN}").write.format(
        "delta"
    ).mode("append").save(path)
    for partitions in [(), (days[0],), (days[1], days[2]), ("2024-12-31",)]:
        for key in [(), ("name",)]:
            ours, sparks = both_previews(spark, lake_root, path, 2, key, partitions)
            assert ours == sparks, (partitions, key)
    ours, _ = both_previews(spark, lake_root, path, 2, ("id",), (days[1], days[2]))
    # A batch reads day by day, then by key; the older files' rows have no score.
    assert [line.split(" | ")[0] for line in ours.splitlines()[2:5]] == ["| 1", "| 3", "| 5"]
    assert ours.splitlines()[2] == f"| 1 | n1 | {days[1]} | NULL |"


def test_what_plain_parquet_cannot_say_is_left_to_spark(spark, lake_root):
    spark.conf.set("spark.databricks.delta.properties.defaults.enableDeletionVectors", "true")
    try:
        deleted = f"{lake_root}/s/deleted"
        spark.sql("SELECT id, id * 2 AS twice FROM range(20)").coalesce(1).write.format("delta").save(deleted)
        spark.sql(f"DELETE FROM delta.`{deleted}` WHERE id < 5")
    finally:
        spark.conf.unset("spark.databricks.delta.properties.defaults.enableDeletionVectors")
    mapped = f"{lake_root}/s/mapped"
    spark.sql(
        f"CREATE TABLE delta.`{mapped}` (id BIGINT, name STRING) USING DELTA"
        " TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES (2, 'b'), (1, 'a')")
    spark.sql(f"ALTER TABLE delta.`{mapped}` RENAME COLUMN name TO label")
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES (3, 'c')")
    nan = f"{lake_root}/s/nan"
    spark.sql("SELECT * FROM VALUES (double('NaN'), 1), (1.0D, 2) AS t(x, y)").write.format("delta").save(nan)
    for path, version in [(deleted, 1), (mapped, 3), (nan, 0)]:
        table = read(spark, path, version)
        files, file_rows = version_files_here(spark, Lake(lake_root), path, version)
        assert file_rows is not None, path
        assert preview_rows(files, path, file_rows, table.schema, preview_order(table.schema), PREVIEW_ROWS) is None
        # Spark previews them instead: the deleted rows gone, the renamed column read, NaN last.
        assert slice_preview(table, (), (), files, path, file_rows) == markdown_preview(table)
    assert markdown_preview(read(spark, deleted, 1)).splitlines()[2:4] == ["| 5 | 10 |", "| 6 | 12 |"]
    assert markdown_preview(read(spark, mapped, 3)).splitlines()[2:] == ["| 1 | a |", "| 2 | b |", "| 3 | c |"]
    assert markdown_preview(read(spark, nan, 0)).splitlines()[2:] == ["| 1.0 | 2 |", "| nan | 1 |"]


def test_a_timestamp_past_year_9999_in_local_time_is_previewed_not_a_failed_run(spark, lake_root, tokyo):
    """Python's datetime ends at year 9999: PySpark's collect raised for this cell (ValueError),
    failing the run after its commit. Spark renders the slice's timestamps as text instead."""
    path = f"{lake_root}/s/far"
    far = "SELECT * FROM VALUES (2, TIMESTAMP'9999-12-31 23:59:59'), (1, TIMESTAMP'2024-01-01 00:00:00') AS t(id, valid_to)"
    spark.sql(far).write.format("delta").save(path)
    table = read(spark, path, 0)
    files, file_rows = version_files_here(spark, Lake(lake_root), path, 0)
    assert preview_rows(files, path, file_rows, table.schema, ["id"], PREVIEW_ROWS) is None
    preview = slice_preview(table, ("id",), (), files, path, file_rows)
    assert preview == markdown_preview(table, key=("id",))
    # In the session's time zone (UTC, assetlake's default), as Spark casts them to text.
    assert preview.splitlines()[2:] == ["| 1 | 2024-01-01 00:00:00 |", "| 2 | 9999-12-31 23:59:59 |"]


def test_a_far_timestamp_inside_a_struct_or_an_array_is_previewed_too(spark, lake_root, tokyo):
    """The same year-10000 local time nested in a struct and an array: the text fallback must
    reach a column whose type holds a timestamp anywhere, not only a timestamp column."""
    path = f"{lake_root}/s/far_nested"
    far = (
        "SELECT id, named_struct('until', ts) AS span, array(ts) AS times FROM VALUES "
        "(2, TIMESTAMP'9999-12-31 23:59:59'), (1, TIMESTAMP'2024-01-01 00:00:00') AS t(id, ts)"
    )
    spark.sql(far).write.format("delta").save(path)
    table = read(spark, path, 0)
    files, file_rows = version_files_here(spark, Lake(lake_root), path, 0)
    preview = slice_preview(table, ("id",), (), files, path, file_rows)
    assert preview == markdown_preview(table, key=("id",))
    assert preview.splitlines()[2:] == [
        "| 1 | {2024-01-01 00:00:00} | [2024-01-01 00:00:00] |",
        "| 2 | {9999-12-31 23:59:59} | [9999-12-31 23:59:59] |",
    ]
