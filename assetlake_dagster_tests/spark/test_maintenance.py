"""Layer 4: OPTIMIZE and the guarded VACUUM on real Delta tables (`assetlake optimize|vacuum`).

A VACUUM that would delete the files of a version still needed is refused with the oldest
safe retention and deletes nothing; a permitted one keeps every needed version restorable;
without the guard the same VACUUM really does break the restore (so the guard protects
something). OPTIMIZE compacts and its commit changes no rows.
"""

import datetime as dt
import threading
import time

import dagster as dg
import pytest

from assetlake_dagster.lake.delta_log import DeltaLog
from assetlake_dagster.lake.maintenance import Need, VacuumRefused, table_files, vacuum_table
from assetlake_dagster.lake.restore import restore_table
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.defs.maintenance_jobs import ProjectAssets, guarded_vacuum, needed_versions
from assetlake_dagster.spec import TableUri
from assetlake_dagster_tests.helpers import run_cli

URI = TableUri("s", "t")


def write_versions(spark, path, count, *, mode="overwrite", window="interval 0 hours"):
    """Versions 0..count-1 of one row each (by default each replacing the last)."""
    for n in range(count):
        writer = spark.createDataFrame([(n,)], "n INT").write.format("delta").mode(mode)
        if n == 0 and window:
            writer = writer.option("delta.deletedFileRetentionDuration", window)
        writer.save(path)


def rows(spark, path, version=None):
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(r.n for r in reader.load(path).collect())


def test_optimize_compacts_and_changes_no_rows(spark, lake_root, capsys):
    path = f"{lake_root}/s/t"
    write_versions(spark, path, 5, mode="append", window=None)
    code, out, err = run_cli(capsys, "optimize", str(URI), "--lake-root", lake_root)
    assert (code, err) == (0, "")
    assert "OPTIMIZE -> version 5; current files 5 -> 1" in out
    assert rows(spark, path) == [0, 1, 2, 3, 4]
    log = DeltaLog.open(path)
    optimize = log.read_commits(4, 5)[0]
    assert (optimize.operation, optimize.data_changed) == ("OPTIMIZE", False)


def test_a_vacuum_that_would_break_a_needed_version_is_refused_and_a_safe_one_keeps_it(spark, lake_root):
    lake = Lake(lake_root)
    path = lake.table_path(URI)
    write_versions(spark, path, 4)  # the restore window is 0 hours: only needs protect old versions
    stored = table_files(spark, lake, path).stored_files
    need = Need(1, "recorded by its materialization of today")
    with pytest.raises(VacuumRefused) as refused:
        vacuum_table(spark, lake, URI, 0, lambda *_: [need])
    assert str(refused.value) == (
        "delta://s/t: VACUUM RETAIN 0 HOURS would delete files of version 1 (recorded by its materialization "
        "of today). The oldest safe retention is 1 hours: run it with --retain 1 or more."
    )
    assert table_files(spark, lake, path).stored_files == stored  # nothing deleted

    kept = vacuum_table(spark, lake, URI, 1, lambda *_: [need])
    assert kept.after.stored_files == stored
    restore_table(spark, lake, URI, 1)
    assert rows(spark, path) == [1]

    # The same VACUUM without the guard's needs deletes version 1's files for good.
    gone = vacuum_table(spark, lake, URI, 0)
    assert gone.after.stored_files < gone.before.stored_files
    with pytest.raises(Exception, match="(?i)does not exist|not found|FileNotFound|FAILED_READ_FILE"):
        rows(spark, path, version=2)


def test_a_retention_below_the_restore_window_is_refused(spark, lake_root, capsys):
    write_versions(spark, f"{lake_root}/s/t", 2, window=None)  # Delta's default window: 7 days
    code, out, err = run_cli(capsys, "vacuum", str(URI), "--retain", "24", "--lake-root", lake_root)
    assert (code, out) == (1, "")
    assert (
        "delta://s/t: VACUUM RETAIN 24 HOURS is shorter than the table's restore window of 7 days "
        "(delta.deletedFileRetentionDuration). Retain at least 168 hours"
    ) in err
    code, out, _ = run_cli(capsys, "vacuum", str(URI), "--lake-root", lake_root)
    assert code == 0 and "VACUUM RETAIN 168 HOURS" in out


def test_needed_versions_come_from_materializations_pins_and_runs_in_flight(spark, lake_root, tmp_path):
    """Recorded versions (the table's own and a downstream's read) and a pinned input."""
    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.defs.io_manager import DeltaIOManager
    from assetlake_dagster.defs.resources import SparkDeltaResource

    project = tmp_path / "project"
    project.mkdir()
    (project / "t.sql").write_text("-- materialize delta://s/t\n\nSELECT 1 AS n\n")
    (project / "d.sql").write_text("-- materialize delta://s/d\n\nSELECT n FROM s.t\n")
    instance = dg.DagsterInstance.ephemeral()
    defs = build_definitions(str(project), lake_root=lake_root)
    for _ in range(2):  # forced: two versions of each table (nothing they read changes)
        assert defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance, tags={"assetlake/force": "true"}
        ).success

    @dg.asset(key=["s", "pinned_reader"], ins={"t": dg.AssetIn(key=["s", "t"], metadata={"assetlake/version": 0})})
    def pinned_reader(t):
        return t

    resource = SparkDeltaResource(lake_root=lake_root)
    pinned_defs = dg.Definitions(assets=[dg.AssetSpec(["s", "t"]), pinned_reader], resources={"io_manager": DeltaIOManager(spark=resource)})
    since = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)
    needs = needed_versions(instance, URI, dg.AssetKey(["s", "t"]), since=since, commit_times={}, project=ProjectAssets.of(pinned_defs))
    by_reason = sorted((n.version, n.reason.split(" of ")[0].split("'s input")[0]) for n in needs)
    assert by_reason == [
        (0, "pinned by s/pinned_reader"),
        (0, "read by s/d's materialization"),
        (0, "recorded by its materialization"),
        (1, "read by s/d's materialization"),
        (1, "recorded by its materialization"),
    ]

    # A run in flight needs the version that was current when it started.
    release = threading.Event()

    @dg.asset(key=["s", "slow"])
    def slow() -> None:
        release.wait(60)

    lake = Lake(lake_root)
    other = TableUri("s", "other")
    write_versions(spark, lake.table_path(other), 2)  # a restore window of 0 hours: only needs protect
    runner = threading.Thread(target=dg.materialize, args=([slow],), kwargs={"instance": instance})
    runner.start()
    try:
        deadline = time.time() + 60
        while not instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
            assert time.time() < deadline, "the run never started"
            time.sleep(0.2)
        past = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=2)
        later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
        none = ProjectAssets.of(dg.Definitions())  # a project without pinning inputs
        needs = needed_versions(instance, URI, dg.AssetKey(["s", "t"]), since=later, commit_times={0: past, 1: past, 2: later}, project=none)
        assert [(n.version, n.reason.endswith("still in flight, started")) for n in needs] == [(1, True)]
        # Through the command's path: the version current when the run started is kept.
        spark.createDataFrame([(9,)], "n INT").write.format("delta").mode("overwrite").save(lake.table_path(other))
        with pytest.raises(VacuumRefused, match=r"version 1 \(current when run \w+, still in flight, started\)"):
            guarded_vacuum(spark, lake, other, 0, instance, none)
    finally:
        release.set()
        runner.join(60)


def test_a_partitioned_tables_stored_files_are_counted(spark, lake_root):
    # The partition folders are named `_partition=<key>`: counted, while `_delta_log` is not.
    path = f"{lake_root}/s/parts"
    spark.createDataFrame([(1, "a"), (2, "b")], "n INT, _partition STRING").write.format("delta").partitionBy("_partition").save(path)
    files = table_files(spark, Lake(lake_root), path)
    assert (files.current_files, files.stored_files) == (2, 2)
    assert files.stored_bytes == files.current_bytes > 0
