"""Commit stamps round-trip byte for byte (RELIABILITY.md rules 13 and 17).

Spark substitutes ``${...}`` in session conf values, and a MERGE is stamped through the
session conf ``spark.databricks.delta.commitInfo.userMetadata``: a partition key such as
``${env:HOME}`` came back expanded in the commit's ``userMetadata``, the commit was not
found by its stamp, and a run whose data was published was reported failed. Every
strategy, both ways of stamping (writer option and session conf), odd keys.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assetlake_dagster.defs.partitions import with_partition_key
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
from assetlake_dagster.writes.commit import STAMP_TAG, find_stamped_commit
from assetlake_dagster.writes.slices import describe_slice

SCHEMA = "id INT, name STRING"
#: Keys Spark would expand (or half-expand) if they reached a conf value as text.
PAYLOADS = [
    "${env:HOME}",
    "${spark.app.name}",
    "${system:user.name}",
    "${sparkconf:spark.app.name}",
    "$${x}",
    "a$b",
    "\\u0024",  # the six characters backslash, u, 0, 0, 2, 4
    "\\u0024{env:HOME}",
    "${",
    "$",
    'q"uo\\te ${env:PATH}',
]
IDS = ["env", "conf", "system", "sparkconf", "double-dollar", "a-dollar-b", "escape-text", "escape-then-env",
       "open", "dollar", "quote-backslash"]
#: Through Spark, the kinds of payload (the escaping itself is pure: every payload is checked
#: in test_user_metadata_has_no_dollar_and_parses_back): a substituted env, conf and system
#: reference, an escaped dollar, and the escape's own text followed by a reference.
SPARK_PAYLOADS = [PAYLOADS[i] for i in (0, 1, 4, 7)]
SPARK_IDS = [IDS[i] for i in (0, 1, 4, 7)]


def decoded(entry):
    return json.loads(entry["userMetadata"])[STAMP_TAG]


def assert_found(spark, tgt, result, key):
    """The write's commit is found by its stamp, and its stamp decodes to the original."""
    entry = find_stamped_commit(spark, tgt.path, tgt.stamp)
    assert entry is not None, "the commit is not found by its stamp"
    assert result.committed and result.version == entry["version"]
    stamp = decoded(entry)
    assert stamp == {
        "run_id": tgt.stamp.run_id,
        "root_run_id": tgt.stamp.root_run_id,
        "asset": tgt.stamp.asset,
        "partition": key,
    }
    return entry


def assert_never_substitutable(spark, path):
    """No stamp text Spark could substitute is ever handed to it, by either way of stamping."""
    metadata = [r.userMetadata for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()]
    assert metadata and all("${" not in m for m in metadata)


def partitioned(lake_root, strategy, run_id, key, key_columns=()):
    return WriteTarget(
        uri=TableUri("s", "t"),
        path=f"{lake_root}/s/t",
        strategy=strategy,
        stamp=CommitStamp(run_id=run_id, asset="s/t", partition=describe_slice([key])),
        key=key_columns,
        partitions=(key,),
    )


def whole(lake_root, strategy, run_id, stamp_partition, key_columns=()):
    """A whole-table write whose stamp carries the payload (history is whole-table only)."""
    return WriteTarget(
        uri=TableUri("s", "t"),
        path=f"{lake_root}/s/t",
        strategy=strategy,
        stamp=CommitStamp(run_id=run_id, asset="s/t", partition=stamp_partition),
        key=key_columns,
    )


def rows(spark, data, key=None):
    df = spark.createDataFrame(data, SCHEMA)
    return df if key is None else with_partition_key(spark, df, key)


def test_user_metadata_has_no_dollar_and_parses_back():
    for key in PAYLOADS:
        stamp = CommitStamp(run_id=f"r{key}", asset="s/t", partition=key, idempotency_id=f"root{key}")
        text = stamp.user_metadata()
        assert "$" not in text
        assert json.loads(text)[STAMP_TAG] == {
            "run_id": f"r{key}", "root_run_id": f"root{key}", "asset": "s/t", "partition": key
        }
        assert stamp.matches(text)
        # Other keys never match (the escape does not collapse distinct keys).
        assert all(not CommitStamp(f"r{key}", "s/t", other, f"root{key}").matches(text) for other in PAYLOADS if other != key)


@pytest.mark.parametrize("key", SPARK_PAYLOADS, ids=SPARK_IDS)
def test_merge_partition_key_round_trips(spark, lake_root, key):
    strategy = strategy_for(WriteStrategy.MERGE)
    first = partitioned(lake_root, WriteStrategy.MERGE, "r1", key, ("id",))
    assert_found(spark, first, strategy.write(spark, rows(spark, [(1, "a")], key), first), key)
    # The second run changes a row: a MERGE, stamped through the session conf.
    second = partitioned(lake_root, WriteStrategy.MERGE, "r2", key, ("id",))
    result = strategy.write(spark, rows(spark, [(1, "b"), (2, "c")], key), second)
    assert result.operation == "MERGE"
    assert_found(spark, second, result, key)
    assert_never_substitutable(spark, second.path)


@pytest.mark.parametrize("key", [PAYLOADS[0], PAYLOADS[2]], ids=[IDS[0], IDS[2]])
def test_history_stamp_round_trips(spark, lake_root, key):
    strategy = strategy_for(WriteStrategy.HISTORY)
    first = whole(lake_root, WriteStrategy.HISTORY, f"r1{key}", key, ("id",))
    assert_found(spark, first, strategy.write(spark, rows(spark, [(1, "a")]), first), key)
    second = whole(lake_root, WriteStrategy.HISTORY, f"r2{key}", key, ("id",))
    result = strategy.write(spark, rows(spark, [(1, "b")]), second)
    assert result.operation == "MERGE"
    assert_found(spark, second, result, key)
    assert_never_substitutable(spark, second.path)


@pytest.mark.parametrize("strategy", [WriteStrategy.REPLACE, WriteStrategy.APPEND])
@pytest.mark.parametrize("key", [PAYLOADS[0], PAYLOADS[4]], ids=[IDS[0], IDS[4]])
def test_replace_and_append_partition_key_round_trips(spark, lake_root, strategy, key):
    for n in (1, 2):
        tgt = partitioned(lake_root, strategy, f"r{n}", key)
        assert_found(spark, tgt, strategy_for(strategy).write(spark, rows(spark, [(n, "x")], key), tgt), key)
    assert_never_substitutable(spark, tgt.path)


def test_whole_table_merge_with_payload_run_id(spark, lake_root):
    """Run ids are Dagster's, but nothing in a stamp may be expanded."""
    strategy = strategy_for(WriteStrategy.MERGE)
    strategy.write(spark, rows(spark, [(1, "a")]), whole(lake_root, WriteStrategy.MERGE, "r1", None, ("id",)))
    tgt = whole(lake_root, WriteStrategy.MERGE, "${env:HOME}-${spark.app.name}", None, ("id",))
    assert_found(spark, tgt, strategy.write(spark, rows(spark, [(1, "b")]), tgt), None)
    assert_never_substitutable(spark, tgt.path)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.text(alphabet="${}:\\u0024envHOME\"' ", min_size=1, max_size=12))
def test_any_dollar_text_round_trips_through_a_merge(spark, tmp_path_factory, key):
    lake_root = str(tmp_path_factory.mktemp("lake"))
    strategy = strategy_for(WriteStrategy.MERGE)
    strategy.write(spark, rows(spark, [(1, "a")], key), partitioned(lake_root, WriteStrategy.MERGE, "r1", key, ("id",)))
    tgt = partitioned(lake_root, WriteStrategy.MERGE, "r2", key, ("id",))
    assert_found(spark, tgt, strategy.write(spark, rows(spark, [(1, "b")], key), tgt), key)
    assert_never_substitutable(spark, tgt.path)


def test_the_log_files_and_describe_history_give_the_same_commit_and_version(spark, lake_root, monkeypatch):
    """A local table's stamped commit and version are read from its log files (no Spark job);
    the DESCRIBE HISTORY path (object stores, remote servers) must find the very same."""
    from assetlake_dagster.lake import versions
    from assetlake_dagster.writes import commit

    path = f"{lake_root}/s/both_ways"
    stamps = [CommitStamp(run_id=f"run{i}", asset="s/both_ways") for i in range(3)]
    for i, stamp in enumerate(stamps):
        target = WriteTarget(uri=TableUri("s", "both_ways"), path=path, strategy=WriteStrategy.MERGE,
                             stamp=stamp, key=("id",))
        strategy_for(WriteStrategy.MERGE).write(spark, spark.createDataFrame([(1, f"v{i}"), (i + 2, "x")], SCHEMA), target)
    missing = f"{lake_root}/s/never_written"
    assert versions.reads_log_here(path)
    from_log = ([find_stamped_commit(spark, path, s) for s in stamps], versions.current_version(spark, path),
                versions.current_version(spark, missing), find_stamped_commit(spark, missing, stamps[0]))
    for module in (commit, versions):
        monkeypatch.setattr(module, "reads_log_here", lambda path: False)
    from_sql = ([find_stamped_commit(spark, path, s) for s in stamps], versions.current_version(spark, path),
                versions.current_version(spark, missing), find_stamped_commit(spark, missing, stamps[0]))
    assert from_log == from_sql
    assert [e["version"] for e in from_log[0]] == [0, 1, 2] and from_log[1] == 2
    assert [e["operation"] for e in from_log[0]] == ["WRITE", "MERGE", "MERGE"]
    assert from_log[0][2]["operationMetrics"]["numTargetRowsUpdated"] == "1"
    assert from_log[2] is None and from_log[3] is None


def test_an_auto_compaction_after_a_merge_is_not_taken_for_the_merge(spark, lake_root):
    # Delta's auto compaction commits an OPTIMIZE right after the MERGE, in the same session
    # settings, so it carries the MERGE's stamp too. The write's result is the MERGE's commit.
    path = f"{lake_root}/s/t"
    for first in range(0, 40, 10):  # four small files, ids in tens
        spark.createDataFrame([(i, "a") for i in range(first, first + 10)], SCHEMA).coalesce(1).write.format(
            "delta").mode("append").save(path)
    # On after the first write: this JVM has not compacted the table yet, so the MERGE's
    # commit is followed by one (as in a fresh engine's first run of the day).
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true')")
    tgt = whole(lake_root, WriteStrategy.MERGE, "run-ac", None, key_columns=("id",))
    spark.conf.set("spark.databricks.delta.autoCompact.minNumFiles", "1")
    try:
        result = strategy_for(WriteStrategy.MERGE).write(spark, rows(spark, [(i, "b") for i in range(5)]), tgt)
    finally:
        spark.conf.unset("spark.databricks.delta.autoCompact.minNumFiles")
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    operations = {r.version: r.operation for r in history}
    assert "OPTIMIZE" in operations.values(), operations  # the compaction did run after the MERGE
    assert (result.operation, operations[result.version]) == ("MERGE", "MERGE")
    assert result.rows_written == 5
