"""Layer 4: a merge into a table with deletion vectors is one MERGE; both paths agree.

With deletion vectors the merge is one MERGE of every staged row whose matched clause carries
the change condition (Delta commits nothing when no row differs); without them, the changed
rows are found first and merged. Both are driven here through many random runs of inserts,
updates (NULLs included) and unchanged rows, with `update=`, `keep=`, a partitioned table and
a table clustered by its key, against the table a Python model of the merge expects, and
against each other: same rows, and a commit exactly when a row changed.
"""

import dataclasses
import json
import os
import random

import pytest

from assetlake_dagster.errors import KeyViolationError
from assetlake_dagster.lake.delta_sql import session_conf
from assetlake_dagster.spark.install import DELETION_VECTORS_CONF
from assetlake_dagster.spec import PARTITION_COLUMN, MergeOptions, TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
from assetlake_dagster.writes.merge import one_pass

MERGE = strategy_for(WriteStrategy.MERGE)
SCHEMA = "id INT, name STRING, score DOUBLE"
PATHS = {"one_pass": "true", "diff_first": "false"}


def target(lake_root, table, run, **options):
    return WriteTarget(
        uri=TableUri("s", table), path=f"{lake_root}/s/{table}", strategy=WriteStrategy.MERGE,
        stamp=CommitStamp(run_id=run, asset=f"s/{table}", partition=options.get("partition")),
        key=("id",), **{k: v for k, v in options.items() if k != "partition"},
    )


def commits(path):
    return len([f for f in os.listdir(os.path.join(path, "_delta_log")) if f.endswith(".json")])


def table_rows(spark, path, columns=("id", "name", "score")):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())


def random_batch(rng, current, size=40, key_space=120):
    """Rows to merge: some keys of the table (changed or not), some new; NULLs in values."""
    keys = rng.sample(range(key_space), size)
    batch = []
    for k in keys:
        if k in current and rng.random() < 0.5:
            batch.append((k, *current[k]))  # unchanged
        else:
            batch.append((k, rng.choice([None, "a", "b", "c"]), rng.choice([None, 1.0, 2.5, float(k)])))
    return batch


def expected_after(current, batch, update=None, keep=None):
    """The Python model of a merge: upsert on id, `update=` sets only those columns, `keep=`
    keeps those of a matched row."""
    after = dict(current)
    names = ("name", "score")
    for k, name, score in batch:
        new = dict(zip(names, (name, score)))
        if k in after:
            old = dict(zip(names, after[k]))
            for column in names:
                if (update and column not in update) or (keep and column in keep):
                    new[column] = old[column]
        after[k] = (new["name"], new["score"])
    return after


@pytest.mark.parametrize("options", [{}, {"update": ("score",)}, {"keep": ("name",)}], ids=["all", "update", "keep"])
def test_random_runs_give_the_modelled_table_on_both_paths_and_commit_only_a_change(spark, lake_root, options):
    rng = random.Random(17)
    merge_options = MergeOptions(tuple(options.get("update", ())), tuple(options.get("keep", ())))
    model: dict = {}
    for run in range(8):
        batch = random_batch(rng, model)
        if run == 5:
            batch = [(k, *model[k]) for k in list(model)[:30]]  # nothing changes
        after = expected_after(model, batch, **options)
        changed = after != model
        for path_name, dvs in PATHS.items():
            with session_conf(spark, {DELETION_VECTORS_CONF: dvs}):
                t = target(lake_root, f"t_{path_name}", f"r{run}", merge=merge_options)
                before = commits(t.path) if os.path.isdir(t.path) else 0
                result = MERGE.write(spark, spark.createDataFrame(batch, SCHEMA), t)
            assert one_pass(t.path) is (dvs == "true")
            assert table_rows(spark, t.path) == sorted((k, *v) for k, v in after.items()), (path_name, run)
            assert result.committed is changed and commits(t.path) == before + int(changed), (path_name, run)
        model = after


def test_merging_the_rows_the_last_merge_merged_reads_no_table(spark, lake_root):
    batch = [(i, f"n{i}", float(i)) for i in range(50)]
    tracker = spark.sparkContext.statusTracker()

    def jobs_of(call):
        before = max(tracker.getJobIdsForGroup(None) or [-1])
        value = call()
        return value, max(tracker.getJobIdsForGroup(None) or [-1]) - before

    with session_conf(spark, {DELETION_VECTORS_CONF: "true"}):
        first = target(lake_root, "again", "r0")
        MERGE.write(spark, spark.createDataFrame(batch[:20], SCHEMA), first)  # creates the table
        result, merged_jobs = jobs_of(
            lambda: MERGE.write(spark, spark.createDataFrame(batch, SCHEMA), target(lake_root, "again", "r1"))
        )
    assert result.committed
    log = os.path.join(first.path, "_delta_log")
    stamp = json.loads(json.loads(open(os.path.join(log, f"{result.version:020d}.json")).readline())["commitInfo"]["userMetadata"])
    assert len(stamp["assetlake"]["source"]) == 32  # the merged rows' fingerprint
    again, shortcut_jobs = jobs_of(
        lambda: MERGE.write(spark, spark.createDataFrame(list(reversed(batch)), SCHEMA), target(lake_root, "again", "r2"))
    )
    assert not again.committed and again.version == result.version
    # Only the staged rows' one aggregation ran (its stages): no MERGE, no read of the table.
    assert shortcut_jobs <= 4 < merged_jobs, (shortcut_jobs, merged_jobs)
    # Other options are another merge: it runs (and finds nothing to change).
    other = dataclasses.replace(target(lake_root, "again", "r3"), merge=MergeOptions(update=("score",)))
    assert not MERGE.write(spark, spark.createDataFrame(batch, SCHEMA), other).committed


def test_one_pass_checks_keys_before_writing(spark, lake_root):
    with session_conf(spark, {DELETION_VECTORS_CONF: "true"}):
        t = target(lake_root, "keys", "r0")
        MERGE.write(spark, spark.createDataFrame([(1, "a", 1.0)], SCHEMA), t)
        for bad in ([(2, "x", 1.0), (2, "y", 2.0)], [(None, "x", 1.0)]):
            with pytest.raises(KeyViolationError):
                MERGE.write(spark, spark.createDataFrame(bad, SCHEMA), target(lake_root, "keys", "r1"))
    assert commits(t.path) == 1


def test_a_partitioned_and_a_clustered_table_take_the_one_pass_merge_too(spark, lake_root):
    with session_conf(spark, {DELETION_VECTORS_CONF: "true"}):
        # Partitioned: each slice merged on its own, the other untouched.
        for run, (partition, batch) in enumerate([("p1", [(1, "a", 1.0), (2, "b", 2.0)]),
                                                  ("p2", [(1, "z", 9.0)]),
                                                  ("p1", [(1, "a", 1.0), (2, "B", 2.0), (3, "c", None)])]):
            t = target(lake_root, "parts", f"r{run}", partitions=(partition,), partition=partition)
            df = spark.createDataFrame([(*r, partition) for r in batch], f"{SCHEMA}, {PARTITION_COLUMN} STRING")
            MERGE.write(spark, df, t)
        assert table_rows(spark, t.path, ("id", "name", PARTITION_COLUMN)) == [
            (1, "a", "p1"), (1, "z", "p2"), (2, "B", "p1"), (3, "c", "p1"),
        ]
        # Clustered by its key: the MERGE is bounded by the rows' key ranges.
        clustered = dataclasses.replace(target(lake_root, "clustered", "c0"), cluster_by=("id",))
        MERGE.write(spark, spark.createDataFrame([(i, "v", 0.0) for i in range(100)], SCHEMA), clustered)
        changed = [(5, "w", 0.0), (6, "v", 0.0), (90, "w", 1.0), (200, "new", None)]
        result = MERGE.write(spark, spark.createDataFrame(changed, SCHEMA), dataclasses.replace(clustered, stamp=CommitStamp("c1", "s/clustered")))
        assert result.operation_metrics["numTargetRowsUpdated"] == "2" and result.operation_metrics["numTargetRowsInserted"] == "1"
        assert table_rows(spark, clustered.path)[5:7] == [(5, "w", 0.0), (6, "v", 0.0)]
