"""SCD2 history against real Spark + Delta: numbered loads, regressions, a state machine.

Run timestamps are injected (``run_timestamp=``) so expected histories are exact.
Timestamps are read back as ``unix_micros`` so no time zone is involved.
"""

import datetime as dt
import os
import tempfile

import pytest
from delta.tables import DeltaTable
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from assetlake_dagster.errors import KeyViolationError, WriteError
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget
from assetlake_dagster.writes.history import HistoryWrite, to_micros
from assetlake_dagster_tests.faults import FAILURE_MESSAGE, rows_failing_on_the_last

SCHEMA = "id INT, name STRING, tier STRING"
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def ts(n):
    """The n-th run timestamp: T0 + n hours (+ 1 µs, to exercise microseconds)."""
    return T0 + dt.timedelta(hours=n, microseconds=1)


def us(n):
    return to_micros(ts(n))


def target(path, run_id="run", key=("id",), track=(), close=False):
    return WriteTarget(
        uri=TableUri("s", "dim"),
        path=path,
        strategy=WriteStrategy.HISTORY,
        stamp=CommitStamp(run_id=run_id, asset="s/dim"),
        key=key,
        track=track,
        close_deletes=close,
    )


def load(spark, path, rows, n, schema=SCHEMA, **kwargs):
    tgt = target(path, run_id=f"run{n}", **kwargs)
    df = spark.createDataFrame(rows, schema)
    return HistoryWrite().write(spark, df, tgt, run_timestamp=ts(n))


def history(spark, path, columns=("id", "name", "tier")):
    cols = ", ".join(columns)
    query = (
        f"SELECT {cols}, unix_micros(valid_from), unix_micros(valid_to), is_current "
        f"FROM delta.`{path}`"
    )
    return sorted((tuple(r) for r in spark.sql(query).collect()), key=repr)


def versions(spark, path):
    return [r.version for r in DeltaTable.forPath(spark, path).history().select("version").collect()]


@pytest.fixture
def path(lake_root):
    return os.path.join(lake_root, "s", "dim")


def expect(*rows):
    return sorted(rows, key=repr)


# -- numbered loads -----------------------------------------------------------------------

LOAD_1 = [(1, "ann", "gold"), (2, "bob", "silver"), (3, "cy", "bronze")]
LOAD_2 = [(1, "ann", "platinum"), (3, "cy", "bronze"), (4, "di", "gold")]  # 1 changes, 2 gone, 4 new
LOAD_3 = LOAD_2 + [(2, "bob", "silver")]  # 2 reappears


def test_numbered_loads_soft_delete(spark, path):
    # load 1: initial
    first = load(spark, path, LOAD_1, 1)
    assert first.committed and first.version == 0 and first.operation == "WRITE"
    assert history(spark, path) == expect(
        (1, "ann", "gold", us(1), None, True),
        (2, "bob", "silver", us(1), None, True),
        (3, "cy", "bronze", us(1), None, True),
    )
    # load 2: change + delete + add; the absent key stays current (soft delete)
    second = load(spark, path, LOAD_2, 2)
    assert second.committed and second.version == 1 and second.operation == "MERGE"
    after_2 = expect(
        (1, "ann", "gold", us(1), us(2), False),
        (1, "ann", "platinum", us(2), None, True),
        (2, "bob", "silver", us(1), None, True),
        (3, "cy", "bronze", us(1), None, True),
        (4, "di", "gold", us(2), None, True),
    )
    assert history(spark, path) == after_2
    assert second.operation_metrics["numTargetRowsInserted"] == "2"
    assert second.operation_metrics["numTargetRowsUpdated"] == "1"
    # load 3: the soft-deleted key "reappears" unchanged: nothing to do
    third = load(spark, path, LOAD_3, 3)
    assert not third.committed and third.version == 1
    # load 4: rerun unchanged: no new version
    fourth = load(spark, path, LOAD_3, 4)
    assert not fourth.committed and fourth.version == 1
    assert history(spark, path) == after_2
    assert versions(spark, path) == [1, 0]


def test_numbered_loads_close_deletes(spark, path):
    load(spark, path, LOAD_1, 1, close=True)
    # load 2: change + delete + add; the absent key is closed
    second = load(spark, path, LOAD_2, 2, close=True)
    assert second.committed and second.version == 1
    assert history(spark, path) == expect(
        (1, "ann", "gold", us(1), us(2), False),
        (1, "ann", "platinum", us(2), None, True),
        (2, "bob", "silver", us(1), us(2), False),
        (3, "cy", "bronze", us(1), None, True),
        (4, "di", "gold", us(2), None, True),
    )
    # load 3: the closed key reappears: a fresh version after a gap
    third = load(spark, path, LOAD_3, 3, close=True)
    assert third.committed and third.version == 2
    after_3 = expect(
        (1, "ann", "gold", us(1), us(2), False),
        (1, "ann", "platinum", us(2), None, True),
        (2, "bob", "silver", us(1), us(2), False),
        (2, "bob", "silver", us(3), None, True),
        (3, "cy", "bronze", us(1), None, True),
        (4, "di", "gold", us(2), None, True),
    )
    assert history(spark, path) == after_3
    # load 4: rerun unchanged: no new version
    fourth = load(spark, path, LOAD_3, 4, close=True)
    assert not fourth.committed and fourth.version == 2
    assert history(spark, path) == after_3
    assert versions(spark, path) == [2, 1, 0]


def test_commit_is_stamped(spark, path):
    load(spark, path, LOAD_1, 1)
    load(spark, path, LOAD_2, 2)
    metadata = [r.userMetadata for r in DeltaTable.forPath(spark, path).history().collect()]
    assert [CommitStamp("run2", "s/dim").matches(metadata[0]), CommitStamp("run1", "s/dim").matches(metadata[1])] == [
        True,
        True,
    ]


# -- RELIABILITY.md's SCD2 table ------------------------------------------------------------


@pytest.mark.parametrize(
    "rows, message",
    [
        pytest.param(
            [(1, "a", "x"), (1, "b", "y"), (2, "c", "z")],
            "duplicate keys, e.g. (id=1) x2. Each key (id) must appear once and be non-NULL",
            id="duplicate-key",
        ),
        pytest.param(
            [(None, "a", "x"), (2, "c", "z")],
            "NULL keys, e.g. (id=None) x1. Each key (id) must appear once and be non-NULL",
            id="null-key",
        ),
        # The key check rides on the diff: a duplicated key whose rows change nothing (both
        # equal the current version) must fail too, not vanish from the diff.
        pytest.param(
            [(1, "ann", "gold"), (1, "ann", "gold"), (2, "bob", "silver"), (3, "cy", "bronze")],
            "duplicate keys, e.g. (id=1) x2. Each key (id) must appear once and be non-NULL",
            id="duplicate-unchanged-key",
        ),
    ],
)
def test_bad_keys_fail_before_writing(spark, path, rows, message):
    load(spark, path, LOAD_1, 1)
    with pytest.raises(KeyViolationError) as err:
        load(spark, path, rows, 2)
    assert message in str(err.value)
    assert versions(spark, path) == [0]


def test_bad_keys_fail_on_the_first_run_too(spark, path):
    with pytest.raises(KeyViolationError):
        load(spark, path, [(1, "a", "x"), (1, "b", "y")], 1)
    assert not os.path.exists(os.path.join(path, "_delta_log"))


def test_null_to_value_is_a_change_null_to_null_is_not(spark, path):
    load(spark, path, [(1, None, "x"), (2, "b", "x"), (3, None, "x")], 1)
    result = load(spark, path, [(1, "a", "x"), (2, None, "x"), (3, None, "x")], 2)
    assert result.committed
    assert history(spark, path) == expect(
        (1, None, "x", us(1), us(2), False),
        (1, "a", "x", us(2), None, True),
        (2, "b", "x", us(1), us(2), False),
        (2, None, "x", us(2), None, True),
        (3, None, "x", us(1), None, True),
    )


def test_a_b_a_gives_three_versions(spark, path):
    for n, tier in enumerate(["A", "B", "A"], start=1):
        assert load(spark, path, [(1, "ann", tier)], n).committed
    assert history(spark, path) == expect(
        (1, "ann", "A", us(1), us(2), False),
        (1, "ann", "B", us(2), us(3), False),
        (1, "ann", "A", us(3), None, True),
    )


def test_untracked_only_change_writes_nothing(spark, path):
    load(spark, path, [(1, "ann", "gold")], 1, track=("tier",))
    result = load(spark, path, [(1, "ANN", "gold")], 2, track=("tier",))
    assert not result.committed and versions(spark, path) == [0]
    # The current row keeps the first-seen untracked value: it is not updated either.
    assert history(spark, path) == [(1, "ann", "gold", us(1), None, True)]
    # A tracked change then carries the snapshot's untracked value into the new version.
    load(spark, path, [(1, "ANN", "silver")], 3, track=("tier",))
    assert history(spark, path) == expect(
        (1, "ann", "gold", us(1), us(3), False),
        (1, "ANN", "silver", us(3), None, True),
    )


def test_same_timestamp_twice_is_an_error(spark, path):
    load(spark, path, LOAD_1, 1)
    with pytest.raises(WriteError, match="non-monotonic run timestamp") as err:
        load(spark, path, LOAD_2, 1)
    assert "is not later than 2024-01-01T01:00:00.000001+00:00" in str(err.value)
    with pytest.raises(WriteError, match="non-monotonic run timestamp"):
        load(spark, path, LOAD_2, 0)
    assert versions(spark, path) == [0]


def test_timestamp_must_pass_closing_timestamps_too(spark, path):
    load(spark, path, LOAD_1, 1, close=True)
    load(spark, path, LOAD_2, 5, close=True)
    with pytest.raises(WriteError, match="non-monotonic run timestamp"):
        load(spark, path, LOAD_3, 4, close=True)


def test_schema_change_after_first_run_fails_with_diff(spark, path):
    load(spark, path, LOAD_1, 1)
    with pytest.raises(WriteError) as err:
        load(spark, path, [(1, "ann", 3)], 2, schema="id INT, name STRING, score BIGINT")
    message = str(err.value)
    assert "added: score bigint; removed: tier string" in message
    assert f"drop the table folder {path} (its history is lost)" in message
    with pytest.raises(WriteError, match=r"retyped: id int -> bigint"):
        load(spark, path, [(1, "ann", "gold")], 3, schema="id BIGINT, name STRING, tier STRING")
    assert versions(spark, path) == [0]


def test_map_columns_cannot_be_tracked(spark, path):
    schema = "id INT, name STRING, attrs MAP<STRING, STRING>"
    rows = [(1, "ann", {"k": "v"})]
    with pytest.raises(WriteError, match=r"tracked columns \['attrs'\] contain MAP values"):
        load(spark, path, rows, 1, schema=schema)
    with pytest.raises(WriteError, match="contain MAP values"):
        load(spark, path, rows, 1, schema=schema, track=("attrs",))
    # Untracked, a MAP column is carried along.
    assert load(spark, path, rows, 1, schema=schema, track=("name",)).committed
    changed = load(spark, path, [(1, "bob", {"k": "w"})], 2, schema=schema, track=("name",))
    assert changed.committed
    assert spark.sql(f"SELECT attrs['k'] FROM delta.`{path}` WHERE is_current").first()[0] == "w"


def test_reserved_columns_are_rejected(spark, path):
    with pytest.raises(WriteError, match="reserved"):
        load(spark, path, [(1, True)], 1, schema="id INT, IS_CURRENT BOOLEAN")


def test_composite_key(spark, path):
    schema = "region STRING, id INT, name STRING"
    load(spark, path, [("eu", 1, "a"), ("us", 1, "b")], 1, schema=schema, key=("region", "id"))
    load(spark, path, [("eu", 1, "a"), ("us", 1, "c")], 2, schema=schema, key=("region", "id"))
    assert history(spark, path, ("region", "id", "name")) == expect(
        ("eu", 1, "a", us(1), None, True),
        ("us", 1, "b", us(1), us(2), False),
        ("us", 1, "c", us(2), None, True),
    )


def test_default_clock_is_utc_now(spark, path):
    tgt = target(path)
    before = dt.datetime.now(dt.timezone.utc)
    HistoryWrite().write(spark, spark.createDataFrame(LOAD_1, SCHEMA), tgt)
    stored = spark.sql(f"SELECT DISTINCT unix_micros(valid_from) FROM delta.`{path}`").collect()
    assert len(stored) == 1 and to_micros(before) <= stored[0][0] <= to_micros(dt.datetime.now(dt.timezone.utc))


def test_failure_mid_write_leaves_prior_version(spark, path):
    load(spark, path, LOAD_1, 1)
    before = history(spark, path)
    many = rows_failing_on_the_last(spark, name="n", tier="t")
    with pytest.raises(Exception, match=FAILURE_MESSAGE):
        HistoryWrite().write(spark, many, target(path, run_id="run2"), run_timestamp=ts(2))
    assert versions(spark, path) == [0]
    assert history(spark, path) == before


def test_concurrent_runs_never_leave_two_current_rows(spark, path):
    import threading

    load(spark, path, LOAD_1, 1)
    outcomes = []

    def run(n, tier):
        # One session per run, as two Dagster runs have: the commit stamp of a SQL MERGE is a
        # session setting, so two writers must not share one session.
        session = spark.newSession()
        try:
            load(session, path, [(1, "ann", tier), (2, "bob", "silver"), (3, "cy", "bronze")], n)
            outcomes.append("ok")
        except Exception as exc:  # the loser of a Delta conflict
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=run, args=(n, tier)) for n, tier in ((2, "x"), (3, "y"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert "ok" in outcomes
    current = spark.sql(f"SELECT id, count(*) FROM delta.`{path}` WHERE is_current GROUP BY id").collect()
    assert sorted(tuple(r) for r in current) == [(1, 1), (2, 1), (3, 1)]
    assert len(versions(spark, path)) == 1 + outcomes.count("ok")


# -- Hypothesis state machine against a pure-Python reference model --------------------------
#
# Why lanes: SCD2 is strictly per key. A key's versions depend only on that key's row in each
# run's snapshot (and the run timestamp), never on other keys, so one table can carry LANES
# independent histories side by side: lane i owns keys i*LANE_STRIDE + 1..4, each step moves
# every lane by one operation of its own, and ONE MERGE of the combined snapshot (the lanes'
# keys are disjoint) tests LANES histories at once. The writes are what cost (seconds of
# Spark/Delta work each), so a dozen writes now test more histories than ~40 single-history
# writes did. The reference model and the invariants work unchanged over the combined keys.
# Only whether a run commits is a whole-table fact: ``rerun`` and ``quiet_run`` check that
# runs changing nothing tracked, in any lane, commit nothing.

LANES = 12
LANE_STRIDE = 10
KEYS = st.sampled_from([1, 2, 3, 4])  # a lane's own keys; lane i stores key k as i*LANE_STRIDE + k
VALUES = st.sampled_from([None, "a", "b"])
SNAPSHOTS = st.dictionaries(KEYS, st.tuples(VALUES, VALUES), max_size=4)
#: One lane's move in a step: the operations a single-history machine would take.
LANE_OPS = st.one_of(
    st.tuples(st.just("load"), SNAPSHOTS),  # load a new snapshot
    st.tuples(st.just("rerun")),  # the lane's last snapshot again
    st.tuples(st.just("drop"), st.sets(KEYS, max_size=2)),  # the last snapshot without some keys
    st.tuples(st.just("set"), KEYS, st.tuples(VALUES, VALUES)),  # a key reappears or changes
)
#: A different value for every untracked ``u``.
OTHER_VALUE = {None: "a", "a": "b", "b": None}


def lane_snapshot(last, op):
    """A lane's next snapshot ({key: (v, u)} on its own keys 1..4) after ``op``."""
    kind, *args = op
    if kind == "load":
        return args[0]
    if kind == "rerun":
        return last
    if kind == "drop":
        return {k: vu for k, vu in last.items() if k not in args[0]}
    key, values = args
    return {**last, key: values}


class ReferenceModel:
    """SCD2 as the seed and DESIGN §3 define it; ``v`` is tracked, ``u`` is not."""

    def __init__(self, close_deletes):
        self.close_deletes = close_deletes
        self.rows = []  # [id, v, u, valid_from, valid_to, is_current]

    def apply(self, snapshot, now):
        """Apply one run; whether it changed anything (i.e. must commit)."""
        current = {r[0]: r for r in self.rows if r[5]}
        changed = False
        for key, (v, u) in snapshot.items():
            row = current.get(key)
            if row is not None and row[1] == v:  # NULL-safe: None == None
                continue
            if row is not None:
                row[4], row[5] = now, False
            self.rows.append([key, v, u, now, None, True])
            changed = True
        if self.close_deletes:
            for key, row in current.items():
                if key not in snapshot:
                    row[4], row[5] = now, False
                    changed = True
        return changed

    def table(self):
        return sorted((tuple(r) for r in self.rows), key=repr)


class HistoryMachine(RuleBasedStateMachine):
    """Runs of one history table, each checked against :class:`ReferenceModel`.

    Every write carries LANES independent histories (see above): ``step`` moves each lane by
    one operation and writes once; ``rerun`` and ``quiet_run`` write all lanes without a
    tracked change, which must not commit.
    """

    spark = None
    root = None
    close_deletes = False

    def __init__(self):
        super().__init__()
        self.path = tempfile.mkdtemp(dir=self.root) + "/t"
        self.model = ReferenceModel(self.close_deletes)
        self.n = 0
        self.commits = 0  # the Delta versions the table must have
        self.committed_last = False
        self.lanes = [{} for _ in range(LANES)]  # each lane's last snapshot, on its own keys
        self.closed_before = []

    def _run(self, snapshot):
        """One history run; it commits iff the model changed, or it creates the table."""
        # Hypothesis always runs the simplest example first: every lane empty at every step.
        # Once it has created the (empty) table it tests nothing more, so it ends there, as
        # an invalid example, instead of costing a write per remaining step. Random examples
        # practically never leave all LANES lanes empty.
        assume(snapshot or self.model.rows or not self.commits)
        self.n += 1
        rows = [(k, v, u) for k, (v, u) in sorted(snapshot.items())]
        df = self.spark.createDataFrame(rows, "id INT, v STRING, u STRING")
        tgt = target(self.path, run_id=f"r{self.n}", track=("v",), close=self.close_deletes)
        result = HistoryWrite().write(self.spark, df, tgt, run_timestamp=ts(self.n))
        expected_commit = self.model.apply(snapshot, us(self.n)) or self.commits == 0
        assert result.committed == expected_commit
        self.commits += expected_commit
        self.committed_last = expected_commit
        # The one DESCRIBE HISTORY of the step: exactly one version per commit so far.
        assert versions(self.spark, self.path) == list(reversed(range(self.commits)))
        assert result.version == self.commits - 1
        return result

    def _combined(self):
        """All lanes' snapshots as one, lane i's key k stored as i*LANE_STRIDE + k."""
        return {i * LANE_STRIDE + k: vu for i, lane in enumerate(self.lanes) for k, vu in lane.items()}

    @rule(ops=st.lists(LANE_OPS, min_size=LANES, max_size=LANES))
    def step(self, ops):
        self.lanes = [lane_snapshot(last, op) for last, op in zip(self.lanes, ops)]
        self._run(self._combined())

    @precondition(lambda self: self.committed_last)  # after a no-op, a rerun repeats it
    @rule()
    def rerun(self):
        """The whole combined snapshot again: nothing changes, so no commit."""
        assert not self._run(self._combined()).committed

    @precondition(lambda self: self.committed_last)  # likewise
    @rule(drop=st.lists(st.sets(KEYS, max_size=2), min_size=LANES, max_size=LANES))
    def quiet_run(self, drop):
        """Every lane's last snapshot with each untracked value changed and, while absent keys
        stay current (soft delete), some keys dropped: no tracked change, so no commit."""
        self.lanes = [
            {k: (v, OTHER_VALUE[u]) for k, (v, u) in lane.items() if self.close_deletes or k not in gone}
            for lane, gone in zip(self.lanes, drop)
        ]
        assert not self._run(self._combined()).committed

    def _table(self):
        if not os.path.isdir(self.path + "/_delta_log"):
            return []
        return history(self.spark, self.path, ("id", "v", "u"))

    @invariant()
    def matches_model_and_invariants(self):
        table = self._table()
        assert table == self.model.table()
        by_key = {}
        for row in table:
            by_key.setdefault(row[0], []).append(row)
        for rows in by_key.values():
            assert sum(1 for r in rows if r[5]) <= 1  # at most one current row per key
            assert all(r[5] == (r[4] is None) for r in rows)  # is_current <=> valid_to IS NULL
            ordered = sorted(rows, key=lambda r: r[3])
            for prev, nxt in zip(ordered, ordered[1:]):  # contiguous or gapped, never overlapping
                assert prev[4] is not None and prev[3] < prev[4] <= nxt[3]
        closed = [r for r in table if not r[5]]
        assert all(r in closed for r in self.closed_before)  # closed rows never change
        self.closed_before = closed


@pytest.mark.parametrize("close_deletes", [False, True], ids=["soft-delete", "close-deletes"])
def test_history_state_machine(spark, tmp_path, close_deletes):
    machine = type(
        "Machine", (HistoryMachine,), {"spark": spark, "root": str(tmp_path), "close_deletes": close_deletes}
    )
    # 2 examples x 6 steps (after the simplest example, which stops after its first write):
    # about a dozen writes, each testing LANES histories.
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=2,
            stateful_step_count=6,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        ),
    )
