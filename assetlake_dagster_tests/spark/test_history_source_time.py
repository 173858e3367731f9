"""SCD2 history on the source's clock (``valid_from=<column>``) against real Spark + Delta.

The first test ports dbt's timestamp-strategy snapshot test (``BaseSnapshotTimestamp`` in
dbt-tests-adapter): new keys, timestamps that move, and a change whose timestamp does not
move, which dbt skips silently and this strategy refuses. The run clock is injected
(``run_timestamp=``) and set far from the source's timestamps, so a test sees which clock a
value came from. Timestamps are read back as ``unix_micros``: no time zone is involved.
"""

import datetime as dt
import os

import pytest
from delta.tables import DeltaTable

from assetlake_dagster.errors import WriteError
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget
from assetlake_dagster.writes.history import HistoryWrite, to_micros

SCHEMA = "id INT, name STRING, updated_at TIMESTAMP"
SOURCE_T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
RUN_T0 = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)  # the run clock: later than every source time


def at(day):
    """The source's timestamp on ``day`` (days after 2024-01-01), as a naive UTC datetime."""
    return (SOURCE_T0 + dt.timedelta(days=day)).replace(tzinfo=None)


def us(day):
    return to_micros(SOURCE_T0 + dt.timedelta(days=day))


def write(spark, path, rows, run, schema=SCHEMA, close=False, track=()):
    tgt = WriteTarget(
        uri=TableUri("s", "dim"),
        path=path,
        strategy=WriteStrategy.HISTORY,
        stamp=CommitStamp(run_id=f"run{run}", asset="s/dim"),
        key=("id",),
        track=track,
        close_deletes=close,
        valid_from="updated_at",
    )
    df = spark.createDataFrame(rows, schema)
    return HistoryWrite().write(spark, df, tgt, run_timestamp=RUN_T0 + dt.timedelta(hours=run))


def history(spark, path):
    query = f"SELECT id, name, unix_micros(valid_from), unix_micros(valid_to), is_current FROM delta.`{path}`"
    return sorted(tuple(r) for r in spark.sql(query).collect())


def version(spark, path):
    return DeltaTable.forPath(spark, path).history(1).first()["version"]


@pytest.fixture
def path(lake_root):
    return os.path.join(lake_root, "s", "dim")


def test_dbt_timestamp_strategy_cases(spark, path):
    base = [(i, f"n{i}", at(i)) for i in range(1, 4)]
    write(spark, path, base, 1)
    assert history(spark, path) == [(i, f"n{i}", us(i), None, True) for i in range(1, 4)]

    # "the snapshot sees new rows": new keys open at their own timestamps
    added = base + [(i, f"n{i}", at(i)) for i in range(4, 7)]
    write(spark, path, added, 2)
    assert len(history(spark, path)) == 6

    # "update some timestamps": a moved timestamp is a change (every non-key column is
    # tracked, updated_at too), closed and opened at the new timestamp
    moved = [(i, n, at(i + 30) if i > 3 else t) for i, n, t in added]
    write(spark, path, moved, 3)
    rows = history(spark, path)
    assert len(rows) == 9
    assert [r for r in rows if r[0] == 5] == [(5, "n5", us(5), us(35), False), (5, "n5", us(35), None, True)]

    # "update names without the timestamp": dbt keeps 9 rows by skipping the change; here
    # the run is refused, naming the keys, and the table keeps its version
    before = version(spark, path)
    renamed = [(i, f"{n}_updated" if i < 3 else n, t) for i, n, t in moved]
    with pytest.raises(WriteError) as refused:
        write(spark, path, renamed, 4)
    message = str(refused.value)
    assert "valid_from=updated_at" in message
    assert "id=1: updated_at 2024-01-02T00:00:00+00:00, not after 2024-01-02T00:00:00+00:00" in message
    assert "id=2: updated_at" in message and "id=3" not in message
    assert "Nothing was written" in message
    assert version(spark, path) == before and len(history(spark, path)) == 9


def test_replaying_the_source_rebuilds_the_same_history(spark, lake_root):
    """Two tables fed the same snapshots at different run times hold the same versions."""
    snapshots = [
        [(1, "a", at(1)), (2, "b", at(1))],
        [(1, "a2", at(5)), (2, "b", at(1)), (3, "c", at(4))],
        [(1, "a3", at(9)), (3, "c2", at(6))],  # 2 is absent: soft delete, stays current
    ]
    tables = [os.path.join(lake_root, "s", name) for name in ("first", "replay")]
    for offset, table in zip((0, 1000), tables):
        for run, rows in enumerate(snapshots):
            write(spark, table, rows, offset + run)
    assert history(spark, tables[0]) == history(spark, tables[1]) == [
        (1, "a", us(1), us(5), False),
        (1, "a2", us(5), us(9), False),
        (1, "a3", us(9), None, True),
        (2, "b", us(1), None, True),
        (3, "c", us(4), us(6), False),
        (3, "c2", us(6), None, True),
    ]


def test_late_null_and_reappearing_keys(spark, path):
    write(spark, path, [(1, "a", at(10)), (2, "b", at(10))], 1, close=True)

    # A late change (its timestamp before the current version's start) and a changed row
    # without a timestamp are refused together, before anything is written.
    before = version(spark, path)
    with pytest.raises(WriteError) as refused:
        write(spark, path, [(1, "a2", at(3)), (2, "b2", None)], 2, close=True)
    message = str(refused.value)
    assert "id=1: updated_at 2024-01-04T00:00:00+00:00, not after 2024-01-11T00:00:00+00:00" in message
    assert "id=2: updated_at is NULL" in message
    assert version(spark, path) == before

    # deletes=close: an absent key has no source row, so it closes at the run's clock
    write(spark, path, [(1, "a", at(10))], 3, close=True)
    closed_at = to_micros(RUN_T0 + dt.timedelta(hours=3))
    assert (2, "b", us(10), closed_at, False) in history(spark, path)

    # Reappearing with a source time before its close would overlap the closed version...
    with pytest.raises(WriteError, match=r"id=2: updated_at 2024-01-21T00:00:00\+00:00, not after 2030-01-01T03:00:00\+00:00"):
        write(spark, path, [(1, "a", at(10)), (2, "b", at(20))], 4, close=True)
    # ...after it, it opens a fresh version
    later = dt.datetime(2030, 2, 1)
    write(spark, path, [(1, "a", at(10)), (2, "b", later)], 5, close=True)
    assert history(spark, path)[-1] == (2, "b", to_micros(later), None, True)


def test_the_first_run_and_the_column_type_are_checked(spark, path):
    with pytest.raises(WriteError, match=r"valid_from column 'updated_at' is NULL for id=2: .*Nothing was written"):
        write(spark, path, [(1, "a", at(1)), (2, "b", None)], 1)
    with pytest.raises(WriteError, match=r"valid_from column 'updated_at' is string; .*to_timestamp\(updated_at\)"):
        write(spark, path, [(1, "a", "2024-01-01")], 1, schema="id INT, name STRING, updated_at STRING")
    assert not os.path.exists(path)

    # A DATE starts its version at midnight UTC.
    write(spark, path, [(1, "a", dt.date(2024, 1, 2))], 1, schema="id INT, name STRING, updated_at DATE")
    assert history(spark, path) == [(1, "a", us(1), None, True)]
