"""The Spark-free Delta log reader, on real tables written by delta-rs (``deltalake``)."""

import datetime as dt
import json
import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from assetlake_dagster.lake.delta_log import Commit, DeltaLog, DeltaLogError, DeltaLogExpiredError, DeltaLogUnreadableError, DeltaTableMissingError, latest_version, read_commits


def orders(*days, amount=1.0):
    return pa.table(
        {
            "order_id": list(range(len(days))),
            "amount": [amount] * len(days),
            "order_date": pa.array([dt.date.fromisoformat(d) for d in days]),
        }
    )


@pytest.fixture
def table(tmp_path):
    return str(tmp_path / "landing" / "orders")


def log_file(table, version):
    return os.path.join(table, "_delta_log", f"{version:020d}.json")


# -- versions and commits ---------------------------------------------------------------------


def test_unpartitioned_table_commits(table):
    before = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    write_deltalake(table, orders("2024-01-01"))
    write_deltalake(table, orders("2024-01-02", "2024-01-03"), mode="append")

    assert latest_version(table) == 1
    commits = read_commits(table, after_version=-1)
    assert [(c.version, c.operation, c.added, c.removed) for c in commits] == [
        (0, "WRITE", ({},), ()),
        (1, "WRITE", ({},), ()),
    ]
    assert all(c.data_changed for c in commits)
    assert before <= commits[0].timestamp <= commits[1].timestamp <= dt.datetime.now(dt.timezone.utc)


def test_partitioned_table_partition_values_are_strings(table):
    write_deltalake(table, orders("2024-01-01", "2024-01-02"), partition_by=["order_date"])
    write_deltalake(table, orders("2024-01-05"), partition_by=["order_date"], mode="append")
    write_deltalake(
        table, orders("2024-01-02", amount=2.0), partition_by=["order_date"], mode="overwrite",
        predicate="order_date = '2024-01-02'",
    )

    log = DeltaLog.open(table)
    assert (log.latest_version, log.first_readable, log.checkpoint_version) == (2, 0, None)
    first, second, third = log.read_commits(after_version=-1)
    assert sorted(v["order_date"] for v in first.added) == ["2024-01-01", "2024-01-02"]
    assert second.added == ({"order_date": "2024-01-05"},)
    # A partition replace removes the old file and adds the new one, both in the partition.
    assert (third.added, third.removed) == (({"order_date": "2024-01-02"},), ({"order_date": "2024-01-02"},))


def test_only_the_asked_commits_are_read(table):
    for day in ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"):
        write_deltalake(table, orders(day), partition_by=["order_date"], mode="append")
    log = DeltaLog.open(table)
    # A damaged old commit does not matter to a reader that only asks for newer ones.
    with open(log_file(table, 0), "a") as f:
        f.write("{not json\n")

    assert [c.version for c in log.read_commits(after_version=1)] == [2, 3]
    assert [c.version for c in log.read_commits(after_version=1, up_to=2)] == [2]
    assert log.read_commits(after_version=3) == []
    assert log.read_commits(after_version=9) == []
    with pytest.raises(ValueError, match="up_to=7 is past the latest version 3"):
        log.read_commits(after_version=1, up_to=7)


def test_rearranging_rows_is_no_data_change(table):
    for day in ("2024-01-01", "2024-01-01"):
        write_deltalake(table, orders(day), partition_by=["order_date"], mode="append")
    DeltaTable(table).optimize.compact()

    (commit,) = read_commits(table, after_version=1)
    assert commit.operation == "OPTIMIZE"
    assert (commit.added, commit.removed, commit.data_changed) == ((), (), False)


def test_timestamp_partition_values(table):
    rows = pa.table({"ts": pa.array([dt.datetime(2024, 1, 5, 6, 30)], pa.timestamp("us")), "x": [1]})
    write_deltalake(table, rows, partition_by=["ts"])

    (commit,) = read_commits(table, after_version=-1)
    assert commit.added == ({"ts": "2024-01-05 06:30:00.000000"},)


# -- expired commits (log cleanup after a checkpoint) -----------------------------------------


def test_commits_removed_by_log_cleanup_are_expired_not_lost(table):
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        write_deltalake(table, orders(day), partition_by=["order_date"], mode="append")
    DeltaTable(table).create_checkpoint()  # at version 2
    write_deltalake(table, orders("2024-01-04"), partition_by=["order_date"], mode="append")
    for version in (0, 1):  # what log cleanup does once the retention has passed
        os.remove(log_file(table, version))

    log = DeltaLog.open(table)
    assert (log.latest_version, log.first_readable, log.checkpoint_version) == (3, 2, 2)
    with pytest.raises(DeltaLogExpiredError) as caught:
        log.read_commits(after_version=-1)
    error = caught.value
    assert (error.first_missing, error.last_missing, error.first_readable, error.checkpoint_version) == (0, 1, 2, 2)
    assert str(error) == (
        f"the commits 0..1 of {table} are no longer in its log: log cleanup removed their JSON files "
        "after checkpoint 2 (delta.logRetentionDuration), so what they changed cannot be read; "
        "commits can be read from version 2 on."
    )
    assert isinstance(error, DeltaLogError)
    # Reading resumes where the log still has commits.
    assert [c.version for c in log.read_commits(error.first_readable - 1)] == [2, 3]
    assert [c.version for c in log.read_commits(after_version=1)] == [2, 3]


def test_a_checkpoint_with_every_commit_cleaned_up(table):
    for day in ("2024-01-01", "2024-01-02"):
        write_deltalake(table, orders(day), mode="append")
    DeltaTable(table).create_checkpoint()
    for version in (0, 1):
        os.remove(log_file(table, version))

    log = DeltaLog.open(table)
    assert (log.latest_version, log.checkpoint_version) == (1, 1)
    assert log.read_commits(after_version=1) == []
    with pytest.raises(DeltaLogExpiredError, match="the commits 1 of"):
        log.read_commits(after_version=0)


@pytest.mark.parametrize(
    "name",
    [
        "00000000000000000002.checkpoint.parquet",
        "00000000000000000002.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
    ],
    ids=["classic", "multi-part", "v2"],
)
def test_checkpoint_file_names(table, name):
    write_deltalake(table, orders("2024-01-01"))
    log_dir = os.path.join(table, "_delta_log")
    open(os.path.join(log_dir, name), "w").close()
    # Files the protocol allows that are neither commits nor checkpoints are ignored.
    for other in ("00000000000000000000.crc", "00000000000000000000.00000000000000000001.compacted.json", ".tmp.json"):
        open(os.path.join(log_dir, other), "w").close()

    log = DeltaLog.open(table)
    assert (log.latest_version, log.checkpoint_version) == (2, 2)


def test_last_checkpoint_is_read_only_without_a_listed_checkpoint(table):
    write_deltalake(table, orders("2024-01-01"))
    with open(os.path.join(table, "_delta_log", "_last_checkpoint"), "w") as f:
        json.dump({"version": 0, "size": 3}, f)
    assert DeltaLog.open(table).checkpoint_version == 0
    with open(os.path.join(table, "_delta_log", "_last_checkpoint"), "w") as f:
        f.write("{damaged")
    assert DeltaLog.open(table).checkpoint_version is None  # a hint: never an error


# -- missing and unreadable -------------------------------------------------------------------


def test_missing_table(tmp_path):
    path = str(tmp_path / "nope")
    with pytest.raises(DeltaTableMissingError) as caught:
        latest_version(path)
    assert str(caught.value) == (
        f"no Delta table at {path}: {path}/_delta_log does not exist. "
        "Write the table first (or fix its name or the lake root)."
    )
    assert caught.value.table_path == path


def test_a_log_folder_without_commits_is_a_missing_table(tmp_path):
    os.makedirs(tmp_path / "t" / "_delta_log")
    with pytest.raises(DeltaTableMissingError, match="holds no commit yet"):
        DeltaLog.open(str(tmp_path / "t"))


@pytest.mark.parametrize(
    "damage, problem",
    [
        ("{not json\n", "Expecting property name enclosed in double quotes"),
        ('{"add": {"path": "x", "partitionValues": {"day": 5}}}\n', "'partitionValues' must map column names"),
        ('{"add": ["x"]}\n', "'add' must be a JSON object"),
        ("[1, 2]\n", "an action must be a JSON object"),
    ],
    ids=["not-json", "partition-value-not-a-string", "action-not-an-object", "line-not-an-object"],
)
def test_damaged_commit_is_unreadable(table, damage, problem):
    write_deltalake(table, orders("2024-01-01"))
    write_deltalake(table, orders("2024-01-02"), mode="append")
    path = log_file(table, 1)
    with open(path) as f:
        lines = f.readlines()
    with open(path, "w") as f:
        f.writelines([lines[0], damage, *lines[1:]])

    log = DeltaLog.open(table)
    assert [c.version for c in log.read_commits(-1, up_to=0)] == [0]
    with pytest.raises(DeltaLogUnreadableError) as caught:
        log.read_commits(after_version=0)
    assert str(caught.value).startswith(f"{path}:2: not a valid Delta action ({problem}")
    assert str(caught.value).endswith("The commit file is damaged: restore it from a backup, or re-create the table.")
    assert caught.value.file == path


def test_binary_commit_file_is_unreadable(table):
    write_deltalake(table, orders("2024-01-01"))
    with open(log_file(table, 0), "wb") as f:
        f.write(b"\xff\xfe\x00garbage")
    with pytest.raises(DeltaLogUnreadableError, match="cannot read .*00000000000000000000.json"):
        read_commits(table, after_version=-1)


def test_unlistable_log_is_unreadable(table, monkeypatch):
    write_deltalake(table, orders("2024-01-01"))
    real_listdir = os.listdir

    def denied(path):
        if path.endswith("_delta_log"):
            raise PermissionError(13, "Permission denied", path)
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", denied)  # as chmod 000 would, also when the tests run as root
    with pytest.raises(DeltaLogUnreadableError) as caught:
        latest_version(table)
    assert str(caught.value) == (
        f"cannot list the Delta log {table}/_delta_log: Permission denied. "
        "Give this process read access to the folder."
    )


def test_a_log_that_is_a_file_is_unreadable(tmp_path):
    os.makedirs(tmp_path / "t")
    (tmp_path / "t" / "_delta_log").write_text("")
    with pytest.raises(DeltaLogUnreadableError, match="cannot list the Delta log"):
        DeltaLog.open(str(tmp_path / "t"))


def test_a_gap_no_checkpoint_explains_is_unreadable(table):
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        write_deltalake(table, orders(day), mode="append")
    os.remove(log_file(table, 1))

    log = DeltaLog.open(table)
    assert (log.latest_version, log.first_readable) == (2, 2)
    with pytest.raises(DeltaLogUnreadableError, match="has no commit file for version 1 .* the log is damaged"):
        log.read_commits(after_version=-1)


# -- commitInfo ------------------------------------------------------------------------------


def test_commit_info_is_optional_and_in_commit_timestamps_win(tmp_path):
    log_dir = tmp_path / "t" / "_delta_log"
    os.makedirs(log_dir)
    add = {"add": {"path": "a.parquet", "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}}
    (log_dir / f"{0:020d}.json").write_text(json.dumps(add) + "\n")
    info = {"commitInfo": {"timestamp": 1, "inCommitTimestamp": 1704067200000, "operation": "MERGE", "userMetadata": "run 1"}}
    (log_dir / f"{1:020d}.json").write_text(json.dumps(info) + "\n" + json.dumps(add) + "\n\n")
    os.utime(log_dir / f"{0:020d}.json", (1704153600, 1704153600))

    first, second = read_commits(str(tmp_path / "t"), after_version=-1)
    assert first == Commit(0, 1704153600000, "UNKNOWN", added=({},))
    assert second == Commit(1, 1704067200000, "MERGE", added=({},), user_metadata="run 1")
