"""Layer 4: ``deletes=delete`` makes a merge's table its rows; a change set deletes its marked keys.

Driven through random runs on both merge paths (one MERGE with deletion vectors, the diff
first without them), plain and clustered by the key, against a Python model: same rows, and a
commit exactly when a row changed. A partitioned slice and ``within=`` bound what is deleted.
"""

import dataclasses
import os
import random

import pytest

from assetlake_dagster.lake.delta_sql import session_conf
from assetlake_dagster.spark.install import DELETION_VECTORS_CONF
from assetlake_dagster.spec import PARTITION_COLUMN, MergeOptions, TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
from assetlake_dagster.writes.merge import DELETED_MARKER

MERGE = strategy_for(WriteStrategy.MERGE)
SCHEMA = "id INT, name STRING, score DOUBLE"
CHANGE_SET_SCHEMA = f"{SCHEMA}, {DELETED_MARKER} BOOLEAN"
PATHS = {"one_pass": "true", "diff_first": "false"}
DELETES = MergeOptions(deletes=True)


def target(lake_root, table, run, **options):
    return WriteTarget(
        uri=TableUri("s", table), path=f"{lake_root}/s/{table}", strategy=WriteStrategy.MERGE,
        stamp=CommitStamp(run_id=run, asset=f"s/{table}", partition=options.pop("partition", None)),
        key=("id",), merge=options.pop("merge", DELETES), **options,
    )


def commits(path):
    return len([f for f in os.listdir(os.path.join(path, "_delta_log")) if f.endswith(".json")])


def table_rows(spark, path, columns=("id", "name", "score")):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())


def random_rows(rng, current, key_space=60):
    """The whole of a run's rows: some of the table's keys (changed or not), some new."""
    rows = []
    for k in rng.sample(range(key_space), rng.randint(15, 40)):
        if k in current and rng.random() < 0.6:
            rows.append((k, *current[k]))
        else:
            rows.append((k, rng.choice([None, "a", "b"]), rng.choice([None, 1.0, float(k)])))
    return rows


@pytest.mark.parametrize("clustered", [False, True], ids=["plain", "clustered"])
def test_random_runs_make_the_table_the_rows_on_both_paths(spark, lake_root, clustered):
    rng = random.Random(61)
    model: dict = {}
    for run in range(5):
        rows = random_rows(rng, model)
        if run == 3:
            rows = [(k, *v) for k, v in model.items()]  # nothing changes
        after = {k: (name, score) for k, name, score in rows}
        for path_name, dvs in PATHS.items():
            with session_conf(spark, {DELETION_VECTORS_CONF: dvs}):
                t = target(lake_root, f"t_{path_name}_{clustered}", f"r{run}", cluster_by=("id",) if clustered else ())
                before = commits(t.path) if os.path.isdir(t.path) else 0
                result = MERGE.write(spark, spark.createDataFrame(rows, SCHEMA), t)
            assert table_rows(spark, t.path) == sorted((k, *v) for k, v in after.items()), (path_name, run)
            changed = after != model
            assert result.committed is changed and commits(t.path) == before + int(changed), (path_name, run)
        model = after


def test_a_change_set_upserts_its_rows_and_deletes_its_marked_keys(spark, lake_root):
    rng = random.Random(7)
    start = {k: (rng.choice(["a", "b"]), float(k)) for k in range(50)}
    model = dict(start)
    for path_name, dvs in PATHS.items():
        with session_conf(spark, {DELETION_VECTORS_CONF: dvs}):
            MERGE.write(spark, spark.createDataFrame([(k, *v) for k, v in start.items()], SCHEMA),
                        target(lake_root, f"cs_{path_name}", "r0"))
    for run in range(1, 5):
        keys = rng.sample(range(70), 20)
        deleted = set(keys[:6]) if run != 3 else set()
        upserts = [(k, *model[k]) if k in model and rng.random() < 0.5 else (k, rng.choice(["a", "c"]), None) for k in keys[6:]]
        if run == 3:
            upserts = [(k, *model[k]) for k in keys[6:] if k in model]  # unchanged rows, no deletes
        change_set = [(*row, False) for row in upserts] + [(k, None, None, True) for k in deleted]
        after = {k: v for k, v in model.items() if k not in deleted}
        after.update({k: (name, score) for k, name, score in upserts})
        for path_name, dvs in PATHS.items():
            t = target(lake_root, f"cs_{path_name}", f"r{run}")
            before = commits(t.path)
            with session_conf(spark, {DELETION_VECTORS_CONF: dvs}):
                result = MERGE.write(spark, spark.createDataFrame(change_set, CHANGE_SET_SCHEMA), t)
            # Keys the change set does not name stay, whatever the option says.
            assert table_rows(spark, t.path) == sorted((k, *v) for k, v in after.items()), (path_name, run)
            assert result.committed is (after != model) and commits(t.path) == before + int(after != model)
            assert DELETED_MARKER not in spark.read.format("delta").load(t.path).columns
        model = after


def test_the_slice_and_within_bound_what_is_deleted(spark, lake_root):
    with session_conf(spark, {DELETION_VECTORS_CONF: "true"}):
        for run, (partition, batch) in enumerate([("p1", [(1, "a", 1.0), (2, "b", 2.0)]),
                                                  ("p2", [(1, "z", 9.0), (5, "y", 1.0)]),
                                                  ("p1", [(2, "b", 2.0)])]):
            t = target(lake_root, "parts", f"r{run}", partitions=(partition,), partition=partition)
            df = spark.createDataFrame([(*r, partition) for r in batch], f"{SCHEMA}, {PARTITION_COLUMN} STRING")
            MERGE.write(spark, df, t)
        # p1's key 1 is gone; p2's rows were outside the slice.
        assert table_rows(spark, t.path, ("id", "name", PARTITION_COLUMN)) == [(1, "z", "p2"), (2, "b", "p1"), (5, "y", "p2")]
    within = MergeOptions(within="score >= 2", deletes=True)
    for path_name, dvs in PATHS.items():
        with session_conf(spark, {DELETION_VECTORS_CONF: dvs}):
            first = target(lake_root, f"within_{path_name}", "w0", merge=MergeOptions())
            MERGE.write(spark, spark.createDataFrame([(1, "a", 1.0), (2, "b", 2.0), (3, "c", 3.0)], SCHEMA), first)
            bounded = target(lake_root, f"within_{path_name}", "w1", merge=within)
            MERGE.write(spark, spark.createDataFrame([(3, "C", 3.0)], SCHEMA), bounded)
        # 2 was within the bound and absent: deleted; 1 is outside it: kept.
        assert table_rows(spark, first.path) == [(1, "a", 1.0), (3, "C", 3.0)], path_name


def test_the_staged_scope_is_the_table_after_the_write(spark, lake_root):
    t = target(lake_root, "scope", "r0", merge=MergeOptions(keep=("name",), deletes=True))
    MERGE.write(spark, spark.createDataFrame([(1, "a", 1.0), (2, "b", 2.0), (3, "c", 3.0)], SCHEMA), t)
    whole, text = MERGE.staged_scope(spark, spark.createDataFrame([(2, "B", 5.0), (4, "d", 4.0)], SCHEMA), t)
    assert text == "staged table"
    assert sorted(tuple(r) for r in whole.select("id", "name", "score").collect()) == [(2, "b", 5.0), (4, "d", 4.0)]
    change_set = spark.createDataFrame([(2, "B", 5.0, False), (1, None, None, True)], CHANGE_SET_SCHEMA)
    partial, _ = MERGE.staged_scope(spark, change_set, t)
    assert sorted(tuple(r) for r in partial.select("id", "name", "score").collect()) == [(2, "b", 5.0), (3, "c", 3.0)]
    # Without deletes=delete the absent keys stay in the scope, as in the table.
    kept, _ = MERGE.staged_scope(
        spark, spark.createDataFrame([(4, "d", 4.0)], SCHEMA), dataclasses.replace(t, merge=MergeOptions())
    )
    assert [r["id"] for r in kept.orderBy("id").collect()] == [1, 2, 3, 4]
