"""Late history (``history valid_from=<column> late=insert``) against real Spark + Delta.

A version whose timestamp falls before its key's latest is placed among the key's versions:
the version it falls in ends at it, and it ends where that one ended. Every new start of a
key is a version, so the table is a function of the set of source rows: replaying the same
snapshots in every order gives one history, the one built from the rows sorted by time
(computed here in Python, not by the writer).
"""

import datetime as dt
import itertools
import os

import pytest
from delta.tables import DeltaTable

from assetlake_dagster.errors import WriteError
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget
from assetlake_dagster.writes.history import HistoryWrite, current_rows, to_micros

SCHEMA = "id INT, name STRING, updated_at TIMESTAMP"
SOURCE_T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def at(day):
    return (SOURCE_T0 + dt.timedelta(days=day)).replace(tzinfo=None)


def us(day):
    return to_micros(SOURCE_T0 + dt.timedelta(days=day))


#: Three snapshots, one row per key each. Key 1 goes A, B, A (a value that comes back); key 2
#: is delivered twice unchanged, then changes; key 3 arrives late before its first version;
#: key 4's second snapshot is earlier than its first.
SNAPSHOTS = (
    [(1, "A", at(1)), (2, "X", at(1)), (4, "P", at(5))],
    [(1, "B", at(2)), (2, "X", at(1)), (3, "M", at(4)), (4, "Q", at(2))],
    [(1, "A", at(3)), (2, "Y", at(6)), (3, "N", at(3))],
)


def reference(snapshots):
    """The history of the rows sorted by time: each key's distinct starts, in order, each
    version ending at the next start, the last one current."""
    starts = {}
    for row in itertools.chain.from_iterable(snapshots):
        starts.setdefault(row[0], {})[row[2]] = row[1]
    expected = []
    for key, versions in starts.items():
        times = sorted(versions)
        for i, start in enumerate(times):
            end = times[i + 1] if i + 1 < len(times) else None
            micros = lambda t: to_micros(t.replace(tzinfo=dt.timezone.utc)) if t else None  # noqa: E731
            expected.append((key, versions[start], micros(start), micros(end), end is None))
    return sorted(expected)


def target(path, run):
    return WriteTarget(
        uri=TableUri("s", "dim"),
        path=path,
        strategy=WriteStrategy.HISTORY,
        stamp=CommitStamp(run_id=f"run{run}", asset="s/dim"),
        key=("id",),
        valid_from="updated_at",
        late_insert=True,
    )


def write(spark, path, rows, run):
    return HistoryWrite().write(spark, spark.createDataFrame(rows, SCHEMA), target(path, run))


def history(spark, path):
    query = f"SELECT id, name, unix_micros(valid_from), unix_micros(valid_to), is_current FROM delta.`{path}`"
    return sorted(tuple(r) for r in spark.sql(query).collect())


def version(spark, path):
    return DeltaTable.forPath(spark, path).history(1).first()["version"]


def test_the_reference_keeps_a_value_that_comes_back():
    rows = sorted((r for r in reference(SNAPSHOTS) if r[0] == 1), key=lambda r: r[2])
    assert rows == [(1, "A", us(1), us(2), False), (1, "B", us(2), us(3), False), (1, "A", us(3), None, True)]


@pytest.mark.parametrize("order", list(itertools.permutations(range(len(SNAPSHOTS)))), ids=lambda o: "-".join(map(str, o)))
def test_every_order_of_the_snapshots_gives_the_same_history(spark, lake_root, order):
    path = os.path.join(lake_root, "s", "dim_" + "".join(map(str, order)))
    for run, index in enumerate(order):
        result = write(spark, path, SNAPSHOTS[index], run)
        assert result.committed
    assert history(spark, path) == reference(SNAPSHOTS)
    # Each run was one commit: the first creates the table, each later one is one MERGE.
    assert version(spark, path) == len(SNAPSHOTS) - 1
    # Replaying a snapshot again changes nothing and commits nothing.
    again = write(spark, path, SNAPSHOTS[order[0]], len(order))
    assert not again.committed and version(spark, path) == len(SNAPSHOTS) - 1


def test_the_data_tests_see_the_current_rows_the_run_will_leave(spark, lake_root):
    path = os.path.join(lake_root, "s", "dim_scope")
    write(spark, path, SNAPSHOTS[2], 0)
    rows = spark.createDataFrame(SNAPSHOTS[1], SCHEMA)
    staged, text = HistoryWrite().staged_scope(spark, rows, target(path, 1))
    write(spark, path, SNAPSHOTS[1], 1)
    committed = current_rows(spark.read.format("delta").load(path))
    assert text == "staged current rows"
    assert sorted(tuple(r) for r in staged.select("id", "name", "updated_at").collect()) == sorted(
        tuple(r) for r in committed.select("id", "name", "updated_at").collect()
    )
    # Key 1's B (day 2) is earlier than its A (day 3): A stays current; key 3's M (day 4) is
    # later than its N (day 3): M becomes current; key 4 is new.
    assert sorted((r.id, r.name) for r in committed.collect()) == [(1, "A"), (2, "Y"), (3, "M"), (4, "Q")]


def test_a_start_with_other_values_or_none_is_refused_and_nothing_is_written(spark, lake_root):
    path = os.path.join(lake_root, "s", "dim_refused")
    write(spark, path, SNAPSHOTS[0], 0)
    before = version(spark, path)
    with pytest.raises(WriteError, match=r"id=1: a version starting at 2024-01-02 00:00:00 holds other values"):
        write(spark, path, [(1, "Z", at(1)), (2, "X", at(1))], 1)
    with pytest.raises(WriteError, match=r"id=4: updated_at is NULL.*Nothing was written"):
        write(spark, path, [(4, "Q", None)], 2)
    assert version(spark, path) == before
    assert history(spark, path) == reference(SNAPSHOTS[:1])
