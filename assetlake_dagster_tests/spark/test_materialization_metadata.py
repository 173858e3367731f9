"""Materialization metadata without full-table actions: exact values for every strategy.

The row count comes from the commit when the commit states it (replace, first write), else
from the version's checksum file (what the IO manager reads first), else from Delta's log
statistics or a grouped count of the slice. Each case checks the recorded row count and
schema against literal values and against a full scan of the version, and the checksum's
counts against the same scan, so a shortcut that takes the wrong number (rows inserted, rows
written, the whole table for a slice, a deleted row...) fails here.
"""

import json
import pathlib
from collections import Counter

import pytest

from assetlake_dagster.lake import checksum
from assetlake_dagster.lake.delta_sql import read
from assetlake_dagster.lake.files import LocalFiles
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.run.materialization_metadata import (
    PREVIEW_ROWS,
    committed_row_count,
    markdown_preview,
    materialization_metadata,
    partition_row_counts,
    slice_row_count,
    slice_table,
    table_row_count,
    version_files_here,
)
from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteResult, WriteTarget, strategy_for
from assetlake_dagster.writes.slices import describe_slice, partition_predicate

SCHEMA = "id INT, name STRING, score DOUBLE"
PARTITIONED_SCHEMA = SCHEMA + f", {PARTITION_COLUMN} STRING"
COLUMNS = [("id", "int"), ("name", "string"), ("score", "double")]
PARTITIONED_COLUMNS = [*COLUMNS, (PARTITION_COLUMN, "string")]
HISTORY_COLUMNS = [*COLUMNS, ("valid_from", "timestamp"), ("valid_to", "timestamp"), ("is_current", "boolean")]
P1, P2, P3 = "2024-01-01", "2024-01-02", "2024-01-03"


def write(spark, lake_root, strategy, rows, run_id, key=(), partitions=(), schema=None, idempotency_id=""):
    kind = WriteStrategy(strategy)
    target = WriteTarget(
        uri=TableUri("s", "t"),
        path=f"{lake_root}/s/t",
        strategy=kind,
        stamp=CommitStamp(
            run_id=run_id, asset="s/t", partition=describe_slice(partitions), idempotency_id=idempotency_id
        ),
        key=tuple(key),
        partitions=tuple(partitions),
    )
    schema = schema or (PARTITIONED_SCHEMA if partitions else SCHEMA)
    return strategy_for(kind).write(spark, spark.createDataFrame(rows, schema), target)


def metadata(spark, lake_root, strategy, result, partitions=(), checksum_files=True):
    """What the IO manager records: the output's metadata and a batch's per-partition counts,
    with the version's checksum read as the IO manager reads it (``checksum_files``), or
    with every count and the preview left to Spark."""
    path = f"{lake_root}/s/t"
    files, file_rows = version_files_here(spark, Lake(lake_root), path, result.version) if checksum_files else (None, None)
    counts = partition_row_counts(spark, path, result, partitions, file_rows) if len(partitions) > 1 else None
    md = materialization_metadata(
        spark, TableUri("s", "t"), path, strategy, result, partitions, partition_counts=counts,
        file_rows=file_rows, files=files,
    )
    return md, counts


def scanned(spark, lake_root, version, partitions=()):
    """The slice as of ``version``, by collecting its rows (no statistics involved)."""
    table = read(spark, f"{lake_root}/s/t", version)
    if partitions:
        table = table.where(partition_predicate(partitions))
    return table.collect(), table.schema


def check(spark, lake_root, strategy, result, expected_rows, columns, partitions=(), per_partition=None):
    md, counts = metadata(spark, lake_root, strategy, result, partitions)
    rows, schema = scanned(spark, lake_root, result.version, partitions)
    if partitions:
        # Dagster's conventions: the slice's rows per partition, the table's as the row count.
        assert md["dagster/partition_row_count"].value == expected_rows == len(rows)
        assert md["dagster/row_count"].value == read(spark, f"{lake_root}/s/t", result.version).count()
    else:
        assert "dagster/partition_row_count" not in md
        assert md["dagster/row_count"].value == expected_rows == len(rows)
    recorded = md["dagster/column_schema"].columns
    assert [(c.name, c.type) for c in recorded] == columns
    assert [(c.name, c.type, c.constraints.nullable) for c in recorded] == [
        (f.name, f.dataType.simpleString(), f.nullable) for f in schema.fields
    ]
    assert md["delta/version"].value == result.version
    assert md["delta/operation_metrics"].value == dict(result.operation_metrics)
    preview = md["assetlake/preview"].value.splitlines()
    assert preview[0] == "| " + " | ".join(name for name, _ in columns) + " |"
    assert len(preview) == 2 + min(expected_rows, PREVIEW_ROWS)
    assert preview == markdown_preview(slice_table(spark, f"{lake_root}/s/t", result.version, partitions)).splitlines()
    if per_partition is not None:
        assert counts == per_partition
        assert counts == {p: Counter(r[PARTITION_COLUMN] for r in rows)[p] for p in partitions}
    check_checksum(spark, lake_root, result.version, rows, partitions)
    # Spark's counts and preview, as when this process cannot read the lake's files, agree.
    by_spark, spark_counts = metadata(spark, lake_root, strategy, result, partitions, checksum_files=False)
    for name in ("dagster/row_count", "dagster/partition_row_count", "assetlake/preview"):
        assert (name in by_spark and by_spark[name].value) == (name in md and md[name].value), name
    assert spark_counts == counts
    return md


def check_checksum(spark, lake_root, version, rows, partitions):
    """Where the version's checksum lists its files, its counts equal a full scan of the
    version. (Delta leaves the list out after a schema change: Spark counts then.)"""
    files = checksum.version_file_rows(LocalFiles(), f"{lake_root}/s/t", version)
    if files is None:
        return
    assert checksum.rows_in(files) == read(spark, f"{lake_root}/s/t", version).count()
    column = PARTITION_COLUMN if partitions else None
    assert checksum.rows_in(files, column, partitions) == len(rows)
    if partitions:
        by_partition = Counter(r[PARTITION_COLUMN] for r in rows)
        assert checksum.rows_by_partition(files, PARTITION_COLUMN, partitions) == {p: by_partition[p] for p in partitions}


ROWS3 = [(1, "ann", None), (2, "bob", 1.5), (3, "cy", 2.0)]


def test_replace_counts_the_rows_written(spark, lake_root):
    first = write(spark, lake_root, "replace", ROWS3, "r1")
    check(spark, lake_root, "replace", first, 3, COLUMNS)
    second = write(spark, lake_root, "replace", ROWS3[:2], "r2")
    assert (second.version, second.operation) == (1, "WRITE")
    check(spark, lake_root, "replace", second, 2, COLUMNS)
    reshaped = write(spark, lake_root, "replace", [(1, "x")], "r3", schema="id INT, other STRING")
    check(spark, lake_root, "replace", reshaped, 1, [("id", "int"), ("other", "string")])
    empty = write(spark, lake_root, "replace", [], "r4")
    check(spark, lake_root, "replace", empty, 0, COLUMNS)


def test_merge_counts_the_whole_table_not_the_rows_merged(spark, lake_root):
    created = write(spark, lake_root, "merge", ROWS3, "m1", key=["id"])
    check(spark, lake_root, "merge", created, 3, COLUMNS)
    # One update, one insert: 2 rows written, 1 inserted, 4 in the table.
    merged = write(spark, lake_root, "merge", [(2, "bob", 9.0), (4, "di", None)], "m2", key=["id"])
    assert (merged.version, merged.operation, merged.rows_written) == (1, "MERGE", 2)
    md = check(spark, lake_root, "merge", merged, 4, COLUMNS)
    # The diff summary comes from the commit's own metrics.
    assert md["assetlake/row_changes"].value == {"inserted": 1, "updated": 1, "deleted": 0}
    unchanged = write(spark, lake_root, "merge", [(2, "bob", 9.0)], "m3", key=["id"])
    assert (unchanged.committed, unchanged.version, unchanged.operation) == (False, 1, None)
    md = check(spark, lake_root, "merge", unchanged, 4, COLUMNS)
    assert md["delta/operation"] == "none (nothing changed)" and "assetlake/row_changes" not in md


def test_append_counts_the_whole_table_and_a_rerun_its_own_version(spark, lake_root):
    first = write(spark, lake_root, "append", ROWS3[:2], "a1")
    check(spark, lake_root, "append", first, 2, COLUMNS)
    second = write(spark, lake_root, "append", ROWS3, "a2")
    assert (second.version, second.operation_metrics["numOutputRows"]) == (1, "3")
    check(spark, lake_root, "append", second, 5, COLUMNS)
    # A retry of a run whose append committed: no commit; the counts are as of that commit.
    rerun = write(spark, lake_root, "append", ROWS3, "a2-retry", idempotency_id="a2")
    assert (rerun.committed, rerun.version) == (False, 1)
    check(spark, lake_root, "append", rerun, 5, COLUMNS)
    third = write(spark, lake_root, "append", ROWS3[:1], "a3")
    check(spark, lake_root, "append", third, 6, COLUMNS)
    first_rerun = write(spark, lake_root, "append", ROWS3[:2], "a1-retry", idempotency_id="a1")
    assert (first_rerun.committed, first_rerun.version, first_rerun.operation) == (False, 0, "WRITE")
    check(spark, lake_root, "append", first_rerun, 2, COLUMNS)


def test_history_counts_every_version_row(spark, lake_root):
    created = write(spark, lake_root, "history", ROWS3[:2], "h1", key=["id"])
    check(spark, lake_root, "history", created, 2, HISTORY_COLUMNS)
    # bob changes (closed + reopened), cy is new: 2 + 1 + 1 rows.
    changed = write(spark, lake_root, "history", [(1, "ann", None), (2, "bob", 7.0), (3, "cy", 2.0)], "h2", key=["id"])
    assert changed.operation == "MERGE"
    md = check(spark, lake_root, "history", changed, 4, HISTORY_COLUMNS)
    assert md["assetlake/row_changes"].value == {"versions_opened": 2, "versions_closed": 1}
    same = write(spark, lake_root, "history", [(1, "ann", None), (2, "bob", 7.0), (3, "cy", 2.0)], "h3", key=["id"])
    assert not same.committed
    check(spark, lake_root, "history", same, 4, HISTORY_COLUMNS)


def rows_in(partition, ids, name="x"):
    return [(i, f"{name}{i}", float(i), partition) for i in ids]


def test_replace_of_a_slice_counts_the_slice(spark, lake_root):
    batch = write(spark, lake_root, "replace", rows_in(P1, [1, 2]) + rows_in(P2, [3, 4, 5]), "r1", partitions=[P1, P2])
    check(spark, lake_root, "replace", batch, 5, PARTITIONED_COLUMNS, [P1, P2], {P1: 2, P2: 3})
    one = write(spark, lake_root, "replace", rows_in(P2, [6]), "r2", partitions=[P2])
    # The slice's 1 row, and the table's 3 (P1's 2 are kept).
    assert check(spark, lake_root, "replace", one, 1, PARTITIONED_COLUMNS, [P2])["dagster/row_count"].value == 3
    # P3 is part of the batch but gets no rows.
    sparse = write(spark, lake_root, "replace", rows_in(P1, [7, 8, 9, 10]), "r3", partitions=[P1, P3])
    check(spark, lake_root, "replace", sparse, 4, PARTITIONED_COLUMNS, [P1, P3], {P1: 4, P3: 0})
    other = write(spark, lake_root, "replace", rows_in(P3, range(20, 32)), "r4", partitions=[P3])
    md = check(spark, lake_root, "replace", other, 12, PARTITIONED_COLUMNS, [P3])
    assert (md["dagster/partition_row_count"].value, md["dagster/row_count"].value) == (12, 4 + 1 + 12)


def test_merge_of_a_slice_counts_the_slice(spark, lake_root):
    created = write(
        spark, lake_root, "merge", rows_in(P1, [1, 2]) + rows_in(P2, [3, 4, 5]), "m1", key=["id"], partitions=[P1, P2]
    )
    check(spark, lake_root, "merge", created, 5, PARTITIONED_COLUMNS, [P1, P2], {P1: 2, P2: 3})
    merged = write(spark, lake_root, "merge", rows_in(P1, [2, 6], name="y"), "m2", key=["id"], partitions=[P1])
    assert (merged.operation, merged.rows_written) == ("MERGE", 2)
    check(spark, lake_root, "merge", merged, 3, PARTITIONED_COLUMNS, [P1])
    unchanged = write(spark, lake_root, "merge", rows_in(P1, [2, 6], name="y"), "m3", key=["id"], partitions=[P1])
    assert (unchanged.committed, unchanged.version) == (False, 1)
    check(spark, lake_root, "merge", unchanged, 3, PARTITIONED_COLUMNS, [P1])
    batch = write(
        spark, lake_root, "merge", rows_in(P2, [3], name="z") + rows_in(P3, [7]), "m4", key=["id"], partitions=[P2, P3]
    )
    check(spark, lake_root, "merge", batch, 4, PARTITIONED_COLUMNS, [P2, P3], {P2: 3, P3: 1})
    same_batch = write(
        spark, lake_root, "merge", rows_in(P2, [3], name="z") + rows_in(P3, [7]), "m5", key=["id"], partitions=[P2, P3]
    )
    assert not same_batch.committed
    check(spark, lake_root, "merge", same_batch, 4, PARTITIONED_COLUMNS, [P2, P3], {P2: 3, P3: 1})


def test_append_to_a_slice_counts_the_slice(spark, lake_root):
    first = write(spark, lake_root, "append", rows_in(P1, [1, 2]), "a1", partitions=[P1])
    check(spark, lake_root, "append", first, 2, PARTITIONED_COLUMNS, [P1])
    second = write(spark, lake_root, "append", rows_in(P1, [3]), "a2", partitions=[P1])
    check(spark, lake_root, "append", second, 3, PARTITIONED_COLUMNS, [P1])
    rerun = write(spark, lake_root, "append", rows_in(P1, [3]), "a2-retry", partitions=[P1], idempotency_id="a2")
    assert (rerun.committed, rerun.version) == (False, 1)
    check(spark, lake_root, "append", rerun, 3, PARTITIONED_COLUMNS, [P1])
    batch = write(spark, lake_root, "append", rows_in(P1, [4]) + rows_in(P2, [5, 6]), "a3", partitions=[P1, P2])
    check(spark, lake_root, "append", batch, 6, PARTITIONED_COLUMNS, [P1, P2], {P1: 4, P2: 2})
    batch_rerun = write(
        spark, lake_root, "append", rows_in(P1, [4]) + rows_in(P2, [5, 6]), "a3-retry", partitions=[P1, P2], idempotency_id="a3"
    )
    assert not batch_rerun.committed
    check(spark, lake_root, "append", batch_rerun, 6, PARTITIONED_COLUMNS, [P1, P2], {P1: 4, P2: 2})


def test_manual_tables_are_counted_from_the_log(spark, lake_root):
    path = f"{lake_root}/s/t"
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, name STRING, score DOUBLE) USING DELTA")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', 1.0), (2, 'b', NULL)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 'c', 3.0)")
    result = WriteResult(committed=True, version=2, operation="manual")
    check(spark, lake_root, "manual", result, 3, COLUMNS)
    older = WriteResult(committed=True, version=1, operation="manual")
    check(spark, lake_root, "manual", older, 2, COLUMNS)


@pytest.mark.parametrize(
    "strategy, result, expected",
    [
        ("replace", WriteResult(True, 5, "WRITE", {"numOutputRows": "7"}), 7),
        ("append", WriteResult(True, 0, "WRITE", {"numOutputRows": "7"}), 7),
        ("merge", WriteResult(True, 0, "WRITE", {"numOutputRows": "7"}), 7),
        ("append", WriteResult(False, 0, "WRITE", {"numOutputRows": "7"}), 7),
        # Appends and merges keep rows they did not write.
        ("append", WriteResult(True, 5, "WRITE", {"numOutputRows": "7"}), None),
        ("merge", WriteResult(True, 5, "MERGE", {"numOutputRows": "7", "numTargetRowsInserted": "7"}), None),
        ("history", WriteResult(True, 5, "MERGE", {"numOutputRows": "7"}), None),
        ("merge", WriteResult(False, 5, None), None),
        ("manual", WriteResult(True, 0, "manual"), None),
        # No metrics (spark.databricks.delta.history.metricsEnabled=false): count instead.
        ("replace", WriteResult(True, 5, "WRITE", {}), None),
    ],
)
def test_only_commits_that_state_the_count_are_trusted(strategy, result, expected):
    assert committed_row_count(strategy, result) == expected


def test_a_whole_table_count_reads_no_data_file(spark, lake_root, capsys):
    write(spark, lake_root, "append", ROWS3, "a1")
    write(spark, lake_root, "append", ROWS3, "a2")
    slice_table(spark, f"{lake_root}/s/t", 1).groupBy().count().explain()
    plan = capsys.readouterr().out
    # Delta answers COUNT(*) of a version from the numRecords statistics in its log.
    assert "LocalTableScan" in plan and "FileScan" not in plan


def test_the_preview_shows_the_batch_just_written_in_order_with_every_column(spark, lake_root):
    wide = ", ".join(f"c{i} STRING" for i in range(12))
    schema = f"id INT, {wide}, {PARTITION_COLUMN} STRING"
    long_text = "x" * 41 + "|tail"

    def rows(ids, partition):
        return [(i, *(long_text if c == 0 else f"v{c}" for c in range(12)), partition) for i in ids]

    write(spark, lake_root, "replace", rows([1, 2], P1), "p1", partitions=[P1], schema=schema)
    # A batch of two partitions, rows in no particular order.
    batch = write(spark, lake_root, "replace", rows([9, 3], P3) + rows([7, 5], P2), "b1", partitions=[P2, P3], schema=schema)
    md, _ = metadata(spark, lake_root, "replace", batch, [P2, P3])
    preview = md["assetlake/preview"].value.splitlines()
    assert preview[0] == "| id | " + " | ".join(f"c{i}" for i in range(12)) + f" | {PARTITION_COLUMN} |"
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in preview[2:]]
    # Only the run's partitions, by partition then id; every column; long cells cut to 40 chars.
    assert [(r[0], r[-1]) for r in cells] == [("5", P2), ("7", P2), ("3", P3), ("9", P3)]
    assert all(len(r) == 14 for r in cells)
    assert cells[0][1] == "x" * 39 + "…"


def test_the_preview_is_ordered_by_the_key(spark):
    df = spark.createDataFrame([(2, "b"), (1, "c"), (3, "a")], "id INT, name STRING")
    assert [line.split(" | ")[0] for line in markdown_preview(df, key=["name"]).splitlines()[2:]] == ["| 3", "| 2", "| 1"]
    assert [line.split(" | ")[0] for line in markdown_preview(df).splitlines()[2:]] == ["| 1", "| 2", "| 3"]


def test_deleted_rows_are_not_counted_from_the_checksum(spark, lake_root):
    """With deletion vectors a MERGE marks replaced rows deleted in place: the checksum's
    files still state their written ``numRecords``, and each deletion vector's cardinality
    must come off."""
    spark.conf.set("spark.databricks.delta.properties.defaults.enableDeletionVectors", "true")
    try:
        created = write(spark, lake_root, "merge", [(i, f"n{i}", 1.0) for i in range(1, 9)], "d1", key=["id"])
        merged = write(spark, lake_root, "merge", [(2, "two", 2.0), (9, "nine", 9.0)], "d2", key=["id"])
    finally:
        spark.conf.unset("spark.databricks.delta.properties.defaults.enableDeletionVectors")
    check(spark, lake_root, "merge", created, 8, COLUMNS)
    spark.sql(f"DELETE FROM delta.`{lake_root}/s/t` WHERE id IN (3, 4)")
    crc = json.loads((pathlib.Path(lake_root) / "s/t/_delta_log" / f"{merged.version + 1:020d}.crc").read_text())
    assert any(add.get("deletionVector") for add in crc["allFiles"]), "the DELETE wrote a deletion vector"
    check(spark, lake_root, "merge", merged, 9, COLUMNS)
    deleted = WriteResult(committed=True, version=merged.version + 1, operation="manual")
    assert checksum.version_file_rows(LocalFiles(), f"{lake_root}/s/t", deleted.version) is not None
    check(spark, lake_root, "manual", deleted, 7, COLUMNS)


def test_the_io_managers_counts_after_a_merge_run_no_spark_job(spark, lake_root):
    write(spark, lake_root, "merge", ROWS3, "m1", key=["id"])
    merged = write(spark, lake_root, "merge", [(4, "di", None)], "m2", key=["id"])
    path, tracker = f"{lake_root}/s/t", spark.sparkContext.statusTracker()

    def jobs_run(count):
        before = max(tracker.getJobIdsForGroup(None) or [-1])
        value = count()
        return value, max(tracker.getJobIdsForGroup(None) or [-1]) - before

    _, files = version_files_here(spark, Lake(lake_root), path, merged.version)
    assert jobs_run(lambda: slice_row_count(spark, path, "merge", merged, file_rows=files)) == (4, 0)
    assert jobs_run(lambda: table_row_count(spark, path, "merge", merged, file_rows=files)) == (4, 0)
    # Without the checksum, Delta rebuilds the version's state with Spark jobs to count.
    rows, jobs = jobs_run(lambda: slice_row_count(spark, path, "merge", merged))
    assert rows == 4 and jobs > 0
