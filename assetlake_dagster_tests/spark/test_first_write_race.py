"""Two runs writing a table's first version at once: the loser merges onto the winner.

Found in CI (e2e/test_concurrent_runs.py, 1 run in 5): two processes on the warm engine
each checked "no table yet", one created it, and the other's create failed with
``[DELTA_PATH_EXISTS] Cannot write to already existent path``. Through Spark Connect the
table lock was skipped while the schema folder did not exist, so both checks ran before
either commit. Here the lost race is forced: the existence check answers "no table" once,
after the other writer has committed.
"""

import os
import subprocess
import sys

from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
from assetlake_dagster.writes import history as history_module
from assetlake_dagster.writes import merge as merge_module
from assetlake_dagster.writes.commit import lock_file_path, table_lock
from assetlake_dagster.writes.retry import write_with_retries

SCHEMA = "id INT, tier STRING"


def _target(path, strategy, run_id):
    return WriteTarget(
        uri=TableUri("s", "t"),
        path=path,
        strategy=strategy,
        stamp=CommitStamp(run_id, "s/t"),
        key=("id",),
    )


def _stale_once(monkeypatch, module):
    """The module's existence check says "no table" on its first call: checked before the
    other writer's first commit landed."""
    real = module.delta_schema
    calls = []

    def stale(spark, path):
        calls.append(path)
        return None if len(calls) == 1 else real(spark, path)

    monkeypatch.setattr(module, "delta_schema", stale)
    return calls


def _operations(spark, path):
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation").collect()
    return [r["operation"] for r in sorted(rows, key=lambda r: r["version"])]


def test_history_first_write_that_lost_the_race_merges_onto_the_winner(spark, lake_root, monkeypatch):
    path = os.path.join(lake_root, "s", "t")
    history = strategy_for(WriteStrategy.HISTORY)
    history.write(spark, spark.createDataFrame([(1, "a"), (2, "same")], SCHEMA), _target(path, WriteStrategy.HISTORY, "a"))
    calls = _stale_once(monkeypatch, history_module)

    result = write_with_retries(
        history, spark, spark.createDataFrame([(1, "b"), (2, "same")], SCHEMA), _target(path, WriteStrategy.HISTORY, "b")
    )

    assert len(calls) == 2  # the lost create, then the retry that found the table
    assert result.committed and _operations(spark, path) == ["WRITE", "MERGE"]
    rows = spark.sql(f"SELECT id, tier, is_current FROM delta.`{path}`").collect()
    assert sorted(tuple(r) for r in rows) == [(1, "a", False), (1, "b", True), (2, "same", True)]


def test_merge_first_write_that_lost_the_race_merges_instead_of_appending_duplicates(spark, lake_root, monkeypatch):
    path = os.path.join(lake_root, "s", "t")
    merge = strategy_for(WriteStrategy.MERGE)
    merge.write(spark, spark.createDataFrame([(1, "a"), (2, "a")], SCHEMA), _target(path, WriteStrategy.MERGE, "a"))
    calls = _stale_once(monkeypatch, merge_module)

    result = write_with_retries(
        merge, spark, spark.createDataFrame([(1, "b"), (3, "b")], SCHEMA), _target(path, WriteStrategy.MERGE, "b")
    )

    assert len(calls) == 2
    assert result.committed and _operations(spark, path) == ["WRITE", "MERGE"]
    rows = spark.sql(f"SELECT id, tier FROM delta.`{path}`").collect()
    assert sorted(tuple(r) for r in rows) == [(1, "b"), (2, "a"), (3, "b")]


class _ConnectLikeSession:
    """Stands in for a Spark Connect session: the table lock decides by the class's module."""


_ConnectLikeSession.__module__ = "pyspark.sql.connect.session"

TRY_LOCK = "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)"


def test_connect_sessions_lock_a_local_lake_before_its_schema_folder_exists(lake_root):
    path = os.path.join(lake_root, "s", "t")
    assert os.path.isdir(lake_root) and not os.path.exists(os.path.dirname(path))
    with table_lock(_ConnectLikeSession(), path):
        lock_file = lock_file_path(path)
        assert os.path.isfile(lock_file)
        held = subprocess.run([sys.executable, "-c", TRY_LOCK, lock_file], check=False)
        assert held.returncode != 0  # another process (another run) waits for this one


def test_connect_sessions_create_nothing_for_a_lake_this_machine_does_not_hold(tmp_path):
    remote = tmp_path / "server-side" / "lake"  # a path on the Connect server's disk
    with table_lock(_ConnectLikeSession(), str(remote / "s" / "t")):
        pass
    assert not (tmp_path / "server-side").exists()


def test_a_first_write_that_finds_another_runs_create_under_way_waits_for_it(spark, lake_root, monkeypatch):
    """Seen in CI's UI smoke: a backfill and an eager run wrote a partitioned table's first
    partitions at once; each CREATE found the other's `_delta_log`, both wrote bare, and the
    declared description followed in a metadata-only commit. Now the second waits for the
    first's CREATE, which gives the table its description, and writes onto it."""
    import threading

    from assetlake_dagster.spec import PARTITION_COLUMN
    from assetlake_dagster.writes import create as create_module

    path = os.path.join(lake_root, "s", "parts")
    os.makedirs(os.path.join(path, "_delta_log"))  # the other run's CREATE, under way
    waiting = threading.Event()
    real_pause = create_module._pause

    def pause(seconds):
        waiting.set()
        real_pause(seconds)

    monkeypatch.setattr(create_module, "_pause", pause)

    def other_run():
        waiting.wait(60)
        os.rmdir(os.path.join(path, "_delta_log"))  # its CREATE lands: version 0, with the description
        spark.sql(
            f"CREATE TABLE delta.`{path}` USING delta PARTITIONED BY ({PARTITION_COLUMN}) COMMENT 'Declared.' "
            f"AS SELECT 1 AS id, 'a' AS tier, 'p1' AS {PARTITION_COLUMN}"
        )

    other = threading.Thread(target=other_run)
    other.start()
    target = WriteTarget(
        uri=TableUri("s", "parts"), path=path, strategy=WriteStrategy.REPLACE, stamp=CommitStamp("b", "s/parts"),
        partitions=("p2",), comment="Declared.",
    )
    rows = spark.createDataFrame([(2, "b", "p2")], f"{SCHEMA}, {PARTITION_COLUMN} STRING")
    result = strategy_for(WriteStrategy.REPLACE).write(spark, rows, target)
    other.join(60)
    assert waiting.is_set() and result.committed
    assert _operations(spark, path) == ["CREATE TABLE AS SELECT", "WRITE"]  # no metadata-only commit
    assert spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["description"] == "Declared."
    rows = spark.sql(f"SELECT id, tier, {PARTITION_COLUMN} FROM delta.`{path}`").collect()
    assert sorted(tuple(r) for r in rows) == [(1, "a", "p1"), (2, "b", "p2")]
