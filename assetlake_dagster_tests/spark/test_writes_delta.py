"""Layer 4: every strategy against real Spark + Delta tables on disk.

Each write runs twice; failures must leave the table at its prior version.
"""

import json
import os

import pytest
from delta.tables import DeltaTable

from assetlake_dagster.errors import KeyViolationError, WriteError
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
from assetlake_dagster_tests.faults import FAILURE_MESSAGE, rows_failing_on_the_last

SCHEMA = "id INT, name STRING, score DOUBLE"


def target(lake_root, strategy, run_id, key=(), table="t", idempotency_id=""):
    return WriteTarget(
        uri=TableUri("s", table),
        path=f"{lake_root}/s/{table}",
        strategy=strategy,
        stamp=CommitStamp(run_id=run_id, asset=f"s/{table}", idempotency_id=idempotency_id),
        key=key,
    )


def write(spark, rows, tgt, schema=SCHEMA):
    return strategy_for(tgt.strategy).write(spark, spark.createDataFrame(rows, schema), tgt)


def versions(spark, path):
    return [r.version for r in DeltaTable.forPath(spark, path).history().select("version").collect()]


def rows(spark, path):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


ROWS = [(1, "ann", None), (2, "bob", 1.5)]


def test_replace_twice_same_rows_one_commit_each(spark, lake_root):
    t1 = target(lake_root, WriteStrategy.REPLACE, "run1")
    first = write(spark, ROWS, t1)
    second = write(spark, ROWS, target(lake_root, WriteStrategy.REPLACE, "run2"))
    assert (first.version, second.version) == (0, 1)
    assert first.committed and second.committed
    assert rows(spark, t1.path) == sorted(ROWS)
    assert second.operation == "WRITE" and second.operation_metrics["numOutputRows"] == "2"


def test_replace_may_change_the_schema(spark, lake_root):
    t = target(lake_root, WriteStrategy.REPLACE, "run1")
    write(spark, ROWS, t)
    write(spark, [(1, "x")], target(lake_root, WriteStrategy.REPLACE, "run2"), "id INT, other STRING")
    assert spark.read.format("delta").load(t.path).columns == ["id", "other"]


def test_merge_twice_no_second_commit(spark, lake_root):
    t = target(lake_root, WriteStrategy.MERGE, "run1", key=("id",))
    first = write(spark, ROWS, t)
    second = write(spark, ROWS, target(lake_root, WriteStrategy.MERGE, "run2", key=("id",)))
    assert first.committed and first.version == 0
    assert not second.committed and second.version == 0
    assert versions(spark, t.path) == [0]


def test_merge_updates_only_changed_rows_null_safely(spark, lake_root):
    key = ("id",)
    t = target(lake_root, WriteStrategy.MERGE, "run1", key=key)
    write(spark, [(1, "ann", None), (2, "bob", 1.5), (3, "cy", None), (4, "di", 2.0)], t)
    # 1: NULL -> NULL (no change), 2: value -> NULL, 3: NULL -> value, 4: unchanged, 5: new.
    result = write(
        spark,
        [(1, "ann", None), (2, "bob", None), (3, "cy", 7.0), (4, "di", 2.0), (5, "ed", 1.0)],
        target(lake_root, WriteStrategy.MERGE, "run2", key=key),
    )
    assert result.committed and result.version == 1 and result.operation == "MERGE"
    assert result.operation_metrics["numTargetRowsUpdated"] == "2"
    assert result.operation_metrics["numTargetRowsInserted"] == "1"
    assert result.rows_written == 3
    assert rows(spark, t.path) == [
        (1, "ann", None), (2, "bob", None), (3, "cy", 7.0), (4, "di", 2.0), (5, "ed", 1.0)
    ]


def test_merge_keeps_rows_absent_from_the_slice(spark, lake_root):
    key = ("id",)
    t = target(lake_root, WriteStrategy.MERGE, "run1", key=key)
    write(spark, ROWS, t)
    write(spark, [(3, "cy", 3.0)], target(lake_root, WriteStrategy.MERGE, "run2", key=key))
    assert [r[0] for r in rows(spark, t.path)] == [1, 2, 3]


@pytest.mark.parametrize(
    "bad_rows, message",
    [
        pytest.param(
            [(1, "a", None), (1, "b", None), (2, "c", None)],
            r"duplicate keys, e\.g\. \(id=1\) x2\. Each key \(id\) must appear once",
            id="duplicate",
        ),
        pytest.param(
            [(None, "a", None), (2, "c", None)], r"NULL keys, e\.g\. \(id=None\) x1", id="null"
        ),
        # The check rides on the diff, which drops rows equal to the table's: a duplicated
        # key must still fail when its rows change nothing, or when one of them does.
        pytest.param(
            [ROWS[0], ROWS[0], ROWS[1]], r"duplicate keys, e\.g\. \(id=1\) x2", id="duplicate-unchanged"
        ),
        pytest.param(
            [ROWS[1], (2, "bo", 1.5), (3, "cy", None)], r"duplicate keys, e\.g\. \(id=2\) x2",
            id="duplicate-one-unchanged",
        ),
        pytest.param(
            [(None, "a", None), (None, "b", None), ROWS[0]], r"NULL keys, e\.g\. \(id=None\) x2",
            id="null-twice",
        ),
    ],
)
def test_merge_rejects_bad_keys_before_writing(spark, lake_root, bad_rows, message):
    key = ("id",)
    t = target(lake_root, WriteStrategy.MERGE, "run1", key=key)
    write(spark, ROWS, t)
    with pytest.raises(KeyViolationError, match=message) as info:
        write(spark, bad_rows, target(lake_root, WriteStrategy.MERGE, "run2", key=key))
    assert info.value.allow_retries is False
    assert "asset s/t (delta://s/t, strategy merge)" in str(info.value)
    assert versions(spark, t.path) == [0]
    assert rows(spark, t.path) == sorted(ROWS)


def test_merge_rejects_bad_keys_on_first_run_without_creating_a_table(spark, lake_root):
    t = target(lake_root, WriteStrategy.MERGE, "run1", key=("id",))
    with pytest.raises(KeyViolationError):
        write(spark, [(1, "a", None), (1, "b", None)], t)
    assert not DeltaTable.isDeltaTable(spark, t.path)


def test_merge_rejects_dropped_columns(spark, lake_root):
    key = ("id",)
    t = target(lake_root, WriteStrategy.MERGE, "run1", key=key)
    write(spark, ROWS, t)
    with pytest.raises(WriteError, match=r"the rows lack the table's columns \['score'\]"):
        write(spark, [(1, "a")], target(lake_root, WriteStrategy.MERGE, "run2", key=key), "id INT, name STRING")
    assert versions(spark, t.path) == [0]


def test_merge_adds_new_columns(spark, lake_root):
    key = ("id",)
    t = target(lake_root, WriteStrategy.MERGE, "run1", key=key)
    write(spark, ROWS, t)
    write(
        spark,
        [(1, "ann", None, "x")],
        target(lake_root, WriteStrategy.MERGE, "run2", key=key),
        SCHEMA + ", extra STRING",
    )
    assert rows(spark, t.path) == [(1, "ann", None, "x"), (2, "bob", 1.5, None)]


def test_append_retry_of_the_same_run_does_not_duplicate(spark, lake_root):
    t = target(lake_root, WriteStrategy.APPEND, "run1")
    first = write(spark, ROWS, t)
    retry = write(spark, ROWS, t)  # a step retry: same run id
    assert first.committed and not retry.committed
    assert retry.version == first.version == 0
    # A re-execution from failure carries the original run as its idempotency id.
    resumed = write(spark, ROWS, target(lake_root, WriteStrategy.APPEND, "run1b", idempotency_id="run1"))
    assert not resumed.committed
    assert len(rows(spark, t.path)) == 2
    # A new run appends again, by design.
    again = write(spark, ROWS, target(lake_root, WriteStrategy.APPEND, "run2"))
    assert again.committed and again.version == 1
    assert len(rows(spark, t.path)) == 4


def test_append_rejects_dropped_columns(spark, lake_root):
    t = target(lake_root, WriteStrategy.APPEND, "run1")
    write(spark, ROWS, t)
    with pytest.raises(WriteError, match="lack the table's columns"):
        write(spark, [(1,)], target(lake_root, WriteStrategy.APPEND, "run2"), "id INT")
    assert versions(spark, t.path) == [0]


@pytest.mark.parametrize(
    "strategy, key",
    [
        pytest.param(WriteStrategy.REPLACE, (), id="replace"),
        pytest.param(WriteStrategy.MERGE, ("id",), id="merge"),
        pytest.param(WriteStrategy.APPEND, (), id="append"),
    ],
)
def test_failure_mid_write_leaves_prior_version(spark, lake_root, strategy, key):
    t = target(lake_root, strategy, "run1", key=key)
    write(spark, ROWS, t)

    many = rows_failing_on_the_last(spark, name="n", score=1.0)
    with pytest.raises(Exception, match=FAILURE_MESSAGE):
        strategy_for(strategy).write(spark, many, target(lake_root, strategy, "run2", key=key))
    assert versions(spark, t.path) == [0]
    assert rows(spark, t.path) == sorted(ROWS)


@pytest.mark.parametrize("strategy", [WriteStrategy.REPLACE, WriteStrategy.APPEND, WriteStrategy.MERGE])
def test_reserved_and_bad_column_names_are_rejected(spark, lake_root, strategy):
    key = ("id",) if strategy is WriteStrategy.MERGE else ()
    t = target(lake_root, strategy, "run1", key=key)
    with pytest.raises(WriteError, match=r"columns \['valid_from'\] are reserved"):
        write(spark, [(1, None)], t, "id INT, valid_from TIMESTAMP")
    with pytest.raises(WriteError, match="not plain identifiers"):
        strategy_for(strategy).write(spark, spark.sql("SELECT 1 AS id, 1 + 1"), t)
    assert not DeltaTable.isDeltaTable(spark, t.path)


def test_commits_are_stamped_and_readable_by_another_delta_reader(spark, lake_root):
    import deltalake

    t = target(lake_root, WriteStrategy.MERGE, "run-42", key=("id",))
    write(spark, ROWS, t)
    history = DeltaTable.forPath(spark, t.path).history().collect()
    assert json.loads(history[0]["userMetadata"]) == {
        "assetlake": {"run_id": "run-42", "root_run_id": "run-42", "asset": "s/t", "partition": None}
    }
    other = deltalake.DeltaTable(t.path)
    assert other.version() == 0
    table = other.to_pyarrow_table()
    assert sorted(zip(*(table.column(c).to_pylist() for c in ["id", "name", "score"]))) == sorted(ROWS)


def test_pandas_frames_with_chunked_arrow_strings_are_written_with_their_nulls(spark, lake_root):
    """pandas 3 `concat` leaves Arrow strings in several chunks, which PySpark 4.0 rejected."""
    import pandas as pd

    from assetlake_dagster.run.asset_io import to_spark

    part = pd.DataFrame({"id": [1, 2], "name": ["ann", None]})
    frame = pd.concat([part, part.iloc[[0]]], ignore_index=True)
    t = target(lake_root, WriteStrategy.REPLACE, "run1")
    strategy_for(WriteStrategy.REPLACE).write(spark, to_spark(spark, frame), t)
    assert rows(spark, t.path) == [(1, "ann"), (1, "ann"), (2, None)]


@pytest.mark.parametrize(
    "strategy, partitions",
    [
        pytest.param(WriteStrategy.REPLACE, (), id="replace"),
        pytest.param(WriteStrategy.REPLACE, ("a",), id="replace-partition"),
        pytest.param(WriteStrategy.APPEND, (), id="append"),
    ],
)
def test_a_failed_first_write_leaves_no_table_behind(spark, lake_root, strategy, partitions):
    """A SELECT that fails at runtime (ANSI division by zero) while creating the table:
    Delta had written data files and an empty ``_delta_log`` (``_staged_commits``), which
    Spark reads as "no table" but the delta-rs reader cannot open. Nothing must remain."""
    import deltalake
    from deltalake.exceptions import TableNotFoundError

    from assetlake_dagster.defs.partitions import with_partition_key

    t = WriteTarget(
        uri=TableUri("s", "t"),
        path=f"{lake_root}/s/t",
        strategy=strategy,
        stamp=CommitStamp(run_id="run1", asset="s/t", partition=partitions[0] if partitions else None),
        partitions=partitions,
    )
    failing = spark.sql("SELECT CAST(id AS INT) AS id, CAST(10 DIV (id - 5) AS INT) AS v FROM range(10)")
    if partitions:
        failing = with_partition_key(spark, failing, partitions[0])
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):
        strategy_for(strategy).write(spark, failing, t)
    assert not os.path.exists(t.path)
    assert not DeltaTable.isDeltaTable(spark, t.path)
    with pytest.raises(TableNotFoundError):
        deltalake.DeltaTable(t.path)
    # The next run creates the table as if the failed one never happened.
    good = spark.sql("SELECT CAST(id AS INT) AS id, 1 AS v FROM range(3)")
    if partitions:
        good = with_partition_key(spark, good, partitions[0])
    assert strategy_for(strategy).write(spark, good, t).version == 0
    assert deltalake.DeltaTable(t.path).version() == 0



def test_with_deletion_vectors_a_merge_rewrites_only_the_changed_rows(spark, lake_root):
    """B7's premise: with ``SparkDeltaResource(deletion_vectors=True)`` (Delta's session default)
    a new merge table has deletion vectors, and a MERGE into it copies no unchanged row."""
    key = ("id",)
    t = target(lake_root, WriteStrategy.MERGE, "run1", key=key)
    many = [(i, f"n{i}", float(i)) for i in range(200)]
    conf = SparkDeltaResource(lake_root=lake_root, deletion_vectors=True).effective_spark_conf()
    for name, value in conf.items():
        spark.conf.set(name, value)
    try:
        write(spark, many, t)
    finally:
        for name in conf:
            spark.conf.unset(name)
    properties = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{t.path}`").collect()}
    assert properties.get("delta.enableDeletionVectors") == "true"
    changed = [(i, f"n{i}", float(i) + (0.5 if i == 7 else 0)) for i in range(200)]
    result = write(spark, changed, target(lake_root, WriteStrategy.MERGE, "run2", key=key))
    metrics = result.operation_metrics
    assert metrics["numTargetRowsUpdated"] == "1"
    assert metrics["numTargetRowsCopied"] == "0"  # without deletion vectors: the file's other 199 rows
    assert int(metrics["numTargetDeletionVectorsAdded"]) >= 1
    assert rows(spark, t.path) == sorted(changed)
