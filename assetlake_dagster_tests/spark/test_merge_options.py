"""Layer 4: the merge options against real Spark + Delta: `update=`/`keep=` set only some
columns on a match, `within=` bounds what the merge reads and matches, and the staged scope
the data tests audit is the table the write then commits."""

import json
import os

import pytest
from delta.tables import DeltaTable

from assetlake_dagster.errors import WriteError
from assetlake_dagster.spec import MergeOptions, TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

SCHEMA = "id INT, v STRING, created STRING, day DATE"
MERGE = strategy_for(WriteStrategy.MERGE)


def target(lake_root, run_id, **options):
    return WriteTarget(
        uri=TableUri("s", "t"),
        path=f"{lake_root}/s/t",
        strategy=WriteStrategy.MERGE,
        stamp=CommitStamp(run_id=run_id, asset="s/t"),
        key=("id",),
        merge=MergeOptions(**options),
    )


def rows(spark, path):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).selectExpr("id", "v", "created", "CAST(day AS STRING)").collect())


def frame(spark, data):
    return spark.createDataFrame(data, "id INT, v STRING, created STRING, day STRING").selectExpr(
        "id", "v", "created", "CAST(day AS DATE) AS day"
    )


def write(spark, data, tgt):
    return MERGE.write(spark, frame(spark, data), tgt)


def staged(spark, data, tgt):
    scope, _ = MERGE.staged_scope(spark, frame(spark, data), tgt)
    return sorted(tuple(r) for r in scope.selectExpr("id", "v", "created", "CAST(day AS STRING)").collect())


FIRST = [(1, "a", "c1", "2024-01-01"), (2, "b", "c2", "2024-01-09"), (3, "c", "c3", "2024-01-09")]


def test_keep_sets_the_other_columns_and_a_change_in_a_kept_column_alone_commits_nothing(spark, lake_root):
    write(spark, FIRST, target(lake_root, "r1", keep=("created",)))
    again = [(1, "a", "CHANGED", "2024-01-01"), (2, "B", "new", "2024-01-09"), (4, "d", "c4", "2024-01-10")]
    tgt = target(lake_root, "r2", keep=("created",))
    expected = staged(spark, again, tgt)
    result = write(spark, again, tgt)
    after = rows(spark, tgt.path)
    assert after == [
        (1, "a", "c1", "2024-01-01"),  # only its kept column differed: not touched
        (2, "B", "c2", "2024-01-09"),  # v updated, created kept
        (3, "c", "c3", "2024-01-09"),
        (4, "d", "c4", "2024-01-10"),  # a new key inserts every column
    ]
    assert expected == after
    assert result.operation_metrics["numTargetRowsUpdated"] == "1"
    assert result.operation_metrics["numTargetRowsInserted"] == "1"
    unchanged = write(spark, [(1, "a", "other", "2024-01-01")], target(lake_root, "r3", keep=("created",)))
    assert not unchanged.committed and unchanged.version == result.version


def test_update_sets_only_the_named_columns(spark, lake_root):
    write(spark, FIRST, target(lake_root, "r1", update=("v",)))
    tgt = target(lake_root, "r2", update=("v",))
    again = [(1, "A", "x", "2030-01-01"), (3, "c", "y", "2030-01-01")]
    expected = staged(spark, again, tgt)
    result = write(spark, again, tgt)
    assert rows(spark, tgt.path) == expected == [
        (1, "A", "c1", "2024-01-01"),
        (2, "b", "c2", "2024-01-09"),
        (3, "c", "c3", "2024-01-09"),
    ]
    assert result.operation_metrics["numTargetRowsUpdated"] == "1"


def test_within_reads_and_matches_only_the_bounded_rows(spark, lake_root):
    # Two commits, so the old and the recent days sit in files of their own.
    write(spark, FIRST[:1], target(lake_root, "r1"))
    write(spark, FIRST[1:], target(lake_root, "r2"))
    bound = "day >= DATE'2024-01-05'"
    tgt = target(lake_root, "r3", within=bound)
    again = [(2, "B", "c2", "2024-01-09"), (5, "e", "c5", "2024-01-12")]
    expected = staged(spark, again, tgt)
    (old_file,) = added_files(tgt.path, 0)
    hidden = f"{tgt.path}/{old_file}.hidden"
    os.rename(f"{tgt.path}/{old_file}", hidden)
    try:
        # The old day's file is gone: a merge that read it (the diff or the MERGE) would
        # fail. Data skipping on the bound never opens it.
        result = write(spark, again, tgt)
        with pytest.raises(Exception, match="(?i)does not exist|FileNotFound|FILE_NOT_EXIST"):
            write(spark, [(2, "BB", "c2", "2024-01-09")], target(lake_root, "r4"))  # unbounded: reads it
    finally:
        os.rename(hidden, f"{tgt.path}/{old_file}")
    assert rows(spark, tgt.path) == expected == [
        (1, "a", "c1", "2024-01-01"),
        (2, "B", "c2", "2024-01-09"),
        (3, "c", "c3", "2024-01-09"),
        (5, "e", "c5", "2024-01-12"),
    ]
    assert result.operation_metrics["numTargetRowsUpdated"] == "1"
    assert result.operation_metrics["numTargetFilesRemoved"] == "1"


def added_files(path, version):
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as log:
        return [action["add"]["path"] for action in map(json.loads, log) if "add" in action]


def test_a_row_outside_within_is_refused_and_the_table_stays(spark, lake_root):
    write(spark, FIRST, target(lake_root, "r1"))
    before = DeltaTable.forPath(spark, f"{lake_root}/s/t").history(1).collect()[0].version
    tgt = target(lake_root, "r2", within="day >= DATE'2024-01-05'")
    # Key 1 lives on 2024-01-01, outside the bound: merged, it would be inserted a second time.
    with pytest.raises(WriteError, match=r"rows with key 1 fall outside within=\"day >= DATE'2024-01-05'\""):
        write(spark, [(1, "z", "c1", "2024-01-01"), (2, "B", "c2", "2024-01-09")], tgt)
    assert DeltaTable.forPath(spark, tgt.path).history(1).collect()[0].version == before
    assert rows(spark, tgt.path) == sorted(FIRST)


def keyed(lake_root, run_id, table, cluster_by=()):
    return WriteTarget(
        uri=TableUri("s", table),
        path=f"{lake_root}/s/{table}",
        strategy=WriteStrategy.MERGE,
        stamp=CommitStamp(run_id=run_id, asset=f"s/{table}"),
        key=("id",),
        cluster_by=cluster_by,
    )


def test_a_table_clustered_by_its_key_is_read_only_in_the_slices_key_ranges(spark, lake_root):
    def ids(*ranges):
        return spark.createDataFrame([(i, f"v{i}") for lo, hi in ranges for i in range(lo, hi + 1)], "id BIGINT, v STRING").coalesce(1)

    clustered = keyed(lake_root, "r1", "c", cluster_by=("id",))
    MERGE.write(spark, ids((1, 100)), clustered)
    MERGE.write(spark, ids((1001, 1100)), keyed(lake_root, "r2", "c", cluster_by=("id",)))
    from assetlake_dagster.writes.merge import clustered_key_ranges

    changes = spark.createDataFrame([(1050, "new"), (1051, "new"), (1200, "added")], "id BIGINT, v STRING")
    assert clustered_key_ranges(changes, clustered).predicate() == "(`id` BETWEEN 1050 AND 1051 OR `id` BETWEEN 1200 AND 1200)"
    assert clustered_key_ranges(changes, keyed(lake_root, "r", "c")) is None  # not clustered by its key
    (low_file,) = added_files(clustered.path, 0)  # keys 1..100
    hidden = f"{clustered.path}/{low_file}.hidden"
    os.rename(f"{clustered.path}/{low_file}", hidden)
    try:
        # Keys 1..100's file is gone: only a merge bounded by the slice's key ranges succeeds.
        result = MERGE.write(spark, changes, keyed(lake_root, "r3", "c", cluster_by=("id",)))
        with pytest.raises(Exception, match="(?i)does not exist|FileNotFound|FILE_NOT_EXIST"):
            MERGE.write(spark, changes.selectExpr("id", "'again' AS v"), keyed(lake_root, "r4", "c"))
    finally:
        os.rename(hidden, f"{clustered.path}/{low_file}")
    assert (result.operation_metrics["numTargetRowsUpdated"], result.operation_metrics["numTargetRowsInserted"]) == ("2", "1")
    table = {r.id: r.v for r in spark.read.format("delta").load(clustered.path).collect()}
    assert len(table) == 201 and (table[1], table[1050], table[1100], table[1200]) == ("v1", "new", "v1100", "added")
