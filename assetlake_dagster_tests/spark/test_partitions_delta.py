"""Layer 4: partitioned writes against real Spark + Delta tables on disk.

Each strategy x partition: one commit per slice (a whole backfill batch included), other
partitions' files untouched, keys bound byte for byte, failures and conflicts leaving
the table at its prior version.
"""

import threading

import pytest
# Not exported by `dagster`: the substrings Dagster rejects in partition keys (generated keys avoid them).
from dagster._core.definitions.partitions.utils.base import INVALID_PARTITION_SUBSTRINGS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assetlake_dagster.errors import KeyViolationError, WriteError
from assetlake_dagster.defs.partitions import with_partition_key
from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteResult, WriteTarget, strategy_for
from assetlake_dagster.writes.retry import MAX_ATTEMPTS, is_write_conflict, write_with_retries
from assetlake_dagster.writes.slices import describe_slice
from assetlake_dagster_tests.helpers import files_by_partition
from assetlake_dagster_tests.faults import FAILURE_MESSAGE, rows_failing_on_the_last

SCHEMA = "id INT, name STRING"
PAYLOADS = ["x' OR '1'='1", "a\\' OR 1=1 --", "'; DROP TABLE t; --"]


def target(lake_root, strategy, run_id, partitions, key=(), table="t"):
    return WriteTarget(
        uri=TableUri("s", table),
        path=f"{lake_root}/s/{table}",
        strategy=strategy,
        stamp=CommitStamp(run_id=run_id, asset=f"s/{table}", partition=describe_slice(partitions)),
        key=key,
        partitions=tuple(partitions),
    )


def slice_rows(spark, rows_by_key):
    """One DataFrame with each key's rows tagged with their `_partition` (as the SQL runner does)."""
    parts = [with_partition_key(spark, spark.createDataFrame(rows, SCHEMA), key) for key, rows in rows_by_key.items()]
    df = parts[0]
    for part in parts[1:]:
        df = df.unionByName(part)
    return df


def write(spark, tgt, rows_by_key):
    return strategy_for(tgt.strategy).write(spark, slice_rows(spark, rows_by_key), tgt)


def table(spark, path):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(PARTITION_COLUMN, "id", "name").collect())




def versions(spark, path):
    return [r.version for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version").collect()]


def test_replace_a_batch_is_one_commit_and_a_partition_rerun_leaves_others_untouched(spark, lake_root):
    batch = target(lake_root, WriteStrategy.REPLACE, "r1", ["a", "b", "c"])
    result = write(spark, batch, {"a": [(1, "a1")], "b": [(2, "b1"), (3, "b2")], "c": [(4, "c1")]})
    assert (result.version, result.committed) == (0, True)
    before = files_by_partition(spark, batch.path)
    # Partition a again (A, B, A): same rows, a new commit, b and c keep their files.
    rerun = write(spark, target(lake_root, WriteStrategy.REPLACE, "r2", ["a"]), {"a": [(1, "a1")]})
    assert rerun.version == 1
    after = files_by_partition(spark, batch.path)
    assert after["b"] == before["b"] and after["c"] == before["c"] and after["a"] != before["a"]
    assert table(spark, batch.path) == [("a", 1, "a1"), ("b", 2, "b1"), ("b", 3, "b2"), ("c", 4, "c1")]
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{batch.path}`").first()
    assert detail.partitionColumns == [PARTITION_COLUMN]


def test_replace_with_no_rows_empties_only_its_partition(spark, lake_root):
    write(spark, target(lake_root, WriteStrategy.REPLACE, "r1", ["a", "b"]), {"a": [(1, "x")], "b": [(2, "y")]})
    empty = spark.createDataFrame([], SCHEMA)
    tgt = target(lake_root, WriteStrategy.REPLACE, "r2", ["a"])
    strategy_for(WriteStrategy.REPLACE).write(spark, with_partition_key(spark, empty, "a"), tgt)
    assert table(spark, tgt.path) == [("b", 2, "y")]


@pytest.mark.parametrize("strategy", [WriteStrategy.REPLACE, WriteStrategy.MERGE, WriteStrategy.APPEND])
def test_an_empty_result_for_a_partition_that_never_had_rows_writes_nothing(spark, lake_root, strategy):
    # A day without data: the slice holds no rows and gets none, so there is nothing to
    # commit. (It failed with "the commit ... is not in the last 100 versions".)
    key = ("id",) if strategy is WriteStrategy.MERGE else ()
    first = target(lake_root, strategy, "r1", ["b"], key=key)
    write(spark, first, {"b": [(2, "y")]})
    empty = with_partition_key(spark, spark.createDataFrame([], SCHEMA), "a")
    result = strategy_for(strategy).write(spark, empty, target(lake_root, strategy, "r2", ["a"], key=key))
    assert (result.committed, result.rows_written, result.version) == (False, 0, 0)
    assert versions(spark, first.path) == [0]
    assert table(spark, first.path) == [("b", 2, "y")]


@pytest.mark.parametrize("strategy", [WriteStrategy.REPLACE, WriteStrategy.APPEND])
def test_an_empty_whole_table_append_or_first_replace(spark, lake_root, strategy):
    # An empty append commits nothing; replacing a whole table with no rows empties it (one commit).
    tgt = target(lake_root, strategy, "r1", [])
    strategy_for(strategy).write(spark, spark.createDataFrame([(1, "x")], SCHEMA), tgt)
    empty = spark.createDataFrame([], SCHEMA)
    result = strategy_for(strategy).write(spark, empty, target(lake_root, strategy, "r2", []))
    if strategy is WriteStrategy.APPEND:
        assert (result.committed, result.rows_written, versions(spark, tgt.path)) == (False, 0, [0])
        assert spark.read.format("delta").load(tgt.path).count() == 1
    else:
        assert (result.committed, result.rows_written, versions(spark, tgt.path)) == (True, 0, [1, 0])
        assert spark.read.format("delta").load(tgt.path).count() == 0


@pytest.mark.parametrize("strategy", [WriteStrategy.REPLACE, WriteStrategy.MERGE, WriteStrategy.APPEND])
def test_rows_outside_the_slice_are_rejected_and_nothing_is_written(spark, lake_root, strategy):
    key = ("id",) if strategy is WriteStrategy.MERGE else ()
    first = target(lake_root, strategy, "r1", ["a", "b"], key=key)
    write(spark, first, {"a": [(1, "x")], "b": [(2, "y")]})
    wrong = target(lake_root, strategy, "r2", ["a"], key=key)
    with pytest.raises(Exception) as caught:
        write(spark, wrong, {"a": [(3, "z")], "b": [(4, "w")]})
    assert "b" in str(caught.value)
    assert versions(spark, first.path) == [0]
    assert table(spark, first.path) == [("a", 1, "x"), ("b", 2, "y")]


@pytest.mark.parametrize("strategy", [WriteStrategy.REPLACE, WriteStrategy.MERGE, WriteStrategy.APPEND])
def test_a_failure_mid_write_leaves_the_prior_version(spark, lake_root, strategy):
    key = ("id",) if strategy is WriteStrategy.MERGE else ()
    first = target(lake_root, strategy, "r1", ["a", "b"], key=key)
    write(spark, first, {"a": [(1, "x")], "b": [(2, "y")]})
    failing = with_partition_key(spark, rows_failing_on_the_last(spark, 500, name="n"), "a")
    with pytest.raises(Exception, match=FAILURE_MESSAGE):
        strategy_for(strategy).write(spark, failing, target(lake_root, strategy, "r2", ["a"], key=key))
    assert versions(spark, first.path) == [0]
    assert table(spark, first.path) == [("a", 1, "x"), ("b", 2, "y")]


def test_merge_upserts_within_its_partition_only(spark, lake_root):
    t1 = target(lake_root, WriteStrategy.MERGE, "r1", ["a", "b"], key=("id",))
    write(spark, t1, {"a": [(1, "x"), (2, "y")], "b": [(1, "other")]})
    # The same key in partition a changes; partition b's row with id 1 is not touched.
    result = write(spark, target(lake_root, WriteStrategy.MERGE, "r2", ["a"], key=("id",)), {"a": [(1, "x2"), (3, "z")]})
    assert result.operation == "MERGE"
    assert table(spark, t1.path) == [("a", 1, "x2"), ("a", 2, "y"), ("a", 3, "z"), ("b", 1, "other")]
    # The MERGE condition bounds the target to partition a (Delta folds the hex literal).
    predicate = spark.sql(f"DESCRIBE HISTORY delta.`{t1.path}`").first().operationParameters["predicate"]
    assert "AND (_partition#" in predicate and predicate.endswith(" = a))\"]")
    # Unchanged rows: no commit at all.
    again = write(spark, target(lake_root, WriteStrategy.MERGE, "r3", ["a"], key=("id",)), {"a": [(1, "x2")]})
    assert not again.committed and versions(spark, t1.path) == [1, 0]


def test_merge_rejects_duplicate_keys_within_a_partition(spark, lake_root):
    tgt = target(lake_root, WriteStrategy.MERGE, "r1", ["a", "b"], key=("id",))
    # The same id in two partitions is fine; twice in one partition is not.
    write(spark, tgt, {"a": [(1, "x")], "b": [(1, "y")]})
    with pytest.raises(KeyViolationError, match="duplicate keys"):
        write(spark, target(lake_root, WriteStrategy.MERGE, "r2", ["a"], key=("id",)), {"a": [(2, "x"), (2, "y")]})
    assert versions(spark, tgt.path) == [0]


def test_append_to_a_partition_is_not_repeated_by_a_retry_of_the_same_run(spark, lake_root):
    tgt = target(lake_root, WriteStrategy.APPEND, "r1", ["a"])
    first = write(spark, tgt, {"a": [(1, "x")]})
    retry = write(spark, tgt, {"a": [(1, "x")]})
    assert first.committed and not retry.committed
    write(spark, target(lake_root, WriteStrategy.APPEND, "r2", ["b"]), {"b": [(2, "y")]})
    assert table(spark, tgt.path) == [("a", 1, "x"), ("b", 2, "y")]


def test_a_partitioned_write_needs_the_partition_column(spark, lake_root):
    tgt = target(lake_root, WriteStrategy.REPLACE, "r1", ["a"])
    with pytest.raises(WriteError, match="needs the _partition column"):
        strategy_for(WriteStrategy.REPLACE).write(spark, spark.createDataFrame([(1, "x")], SCHEMA), tgt)


# -- security: keys are bound, never spliced -----------------------------------------------


@pytest.mark.parametrize("payload", PAYLOADS)
def test_injection_payloads_touch_only_their_own_partition(spark, lake_root, payload):
    tgt = target(lake_root, WriteStrategy.REPLACE, "r1", ["safe", payload])
    write(spark, tgt, {"safe": [(1, "keep")], payload: [(2, "p1")]})
    write(spark, target(lake_root, WriteStrategy.REPLACE, "r2", [payload]), {payload: [(3, "p2")]})
    assert table(spark, tgt.path) == sorted([("safe", 1, "keep"), (payload, 3, "p2")])


def _dagster_allows(key):
    # Dagster rejects these in every partition key (ranges and unprintable characters), so
    # no run can carry them; NUL would also be an invalid directory name.
    return key != "safe" and not any(bad in key for bad in INVALID_PARTITION_SUBSTRINGS)


#: Text keys Dagster allows, several per example: the writes are what cost (seconds each),
#: so each example's two writes test up to four keys side by side in one table.
ANY_KEYS = st.lists(st.text(min_size=1, max_size=12).filter(_dagster_allows), min_size=1, max_size=4, unique=True)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=ANY_KEYS)
def test_any_text_key_round_trips_byte_for_byte(spark, tmp_path_factory, keys):
    lake_root = str(tmp_path_factory.mktemp("lake"))
    tgt = target(lake_root, WriteStrategy.REPLACE, "r1", ["safe", *keys])
    write(spark, tgt, {"safe": [(1, "keep")], **{key: [(2, "v1")] for key in keys}})
    # The first key again, alone: only its partition changes.
    write(spark, target(lake_root, WriteStrategy.REPLACE, "r2", keys[:1]), {keys[0]: [(3, "v2")]})
    expected = [("safe", 1, "keep"), (keys[0], 3, "v2"), *((key, 2, "v1") for key in keys[1:])]
    assert table(spark, tgt.path) == sorted(expected)
    # Each key also binds unchanged into SQL as :partition.
    for key in keys:
        assert spark.sql("SELECT :partition AS k", args={"partition": key}).first().k == key


# -- concurrency: threads in one JVM (Delta's local log store is exclusive only there) -----


def replace_in_threads(spark, lake_root, writes):
    """Run each (run id, partition, rows) replace in its own thread; return the errors."""
    errors = []

    def worker(run, key, rows):
        try:
            tgt = target(lake_root, WriteStrategy.REPLACE, run, [key])
            write_with_retries(strategy_for(tgt.strategy), spark, slice_rows(spark, {key: rows}), tgt)
        except Exception as exc:  # noqa: BLE001 - returned and asserted by the caller
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=w) for w in writes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_concurrent_writes_to_disjoint_partitions_all_land(spark, lake_root):
    write(spark, target(lake_root, WriteStrategy.REPLACE, "r0", ["seed"]), {"seed": [(0, "s")]})
    keys = [f"k{i}" for i in range(6)]
    assert replace_in_threads(spark, lake_root, [(f"run-{k}", k, [(1, k)]) for k in keys]) == []
    assert table(spark, f"{lake_root}/s/t") == sorted([("seed", 0, "s")] + [(k, 1, k) for k in keys])
    assert len(versions(spark, f"{lake_root}/s/t")) == 1 + len(keys)


def test_concurrent_replaces_of_the_same_partition_all_land_one_after_another(spark, lake_root):
    seed = target(lake_root, WriteStrategy.REPLACE, "r0", ["a", "b"])
    write(spark, seed, {"a": [(0, "s")], "b": [(9, "other")]})
    workers = (1, 2, 3)
    assert replace_in_threads(spark, lake_root, [(f"run-{i}", "a", [(i, f"v{i}")]) for i in workers]) == []
    # Each replace committed once (a loser retried on the new state), and partition a holds
    # exactly one writer's rows, never a mix; b is untouched.
    assert len(versions(spark, seed.path)) == 1 + len(workers)
    rows = table(spark, seed.path)
    assert rows[-1] == ("b", 9, "other") and len(rows) == 2 and rows[0] in [("a", i, f"v{i}") for i in workers]


class _Conflicting:
    """A strategy whose first ``failures`` writes lose a race, as Delta reports it."""

    strategy = WriteStrategy.REPLACE

    def __init__(self, failures):
        self.failures, self.calls = failures, 0

    def write(self, spark, df, target):
        self.calls += 1
        if self.calls <= self.failures:
            raise RuntimeError("[DELTA_CONCURRENT_APPEND] Files were added to partition [_partition=a] by a concurrent update.")
        return WriteResult(committed=True, version=7)


def test_a_conflict_is_retried_a_bounded_number_of_times():
    recovered = _Conflicting(failures=2)
    assert write_with_retries(recovered, None, None, target("/l", WriteStrategy.REPLACE, "r", ["a"])).version == 7
    assert recovered.calls == 3
    hopeless = _Conflicting(failures=99)
    with pytest.raises(RuntimeError, match="DELTA_CONCURRENT_APPEND"):
        write_with_retries(hopeless, None, None, target("/l", WriteStrategy.REPLACE, "r", ["a"]))
    assert hopeless.calls == MAX_ATTEMPTS
    assert not is_write_conflict(ValueError("boom on the last row"))


def test_a_batch_reruns_plain_temp_views_once_per_partition(spark):
    """`CREATE TEMP VIEW` (without OR REPLACE) runs once per partition of a batch, and again
    when the same process runs the file again: each time it replaces the view, and each
    partition reads its own key through it (a payload key included)."""
    from assetlake_dagster.defs.partitions import PartitionSlice
    from assetlake_dagster.project.load import parse_file
    from assetlake_dagster.run.sql_runner import run_sql_slices

    text = (
        "-- materialize delta://s/keyed\n"
        "-- partitioned static a,b,x' OR '1'='1\n\n"
        "CREATE TEMP VIEW picked AS SELECT {partition} AS k;\n"
        "CREATE TEMP VIEW doubled AS SELECT concat(k, k) AS kk FROM picked;\n"
        "SELECT k, kk FROM picked CROSS JOIN doubled\n"
    )
    spec, problems = parse_file("keyed.sql", text)
    assert spec is not None, problems
    keys = ["a", "b", PAYLOADS[0]]
    for _ in range(2):  # the second time, the views already exist in the session
        rows = run_sql_slices(spark, spec, {}, [PartitionSlice(k) for k in keys]).collect()
        assert sorted(tuple(r) for r in rows) == sorted((k, k + k, k) for k in keys)
