"""Layer 5: partitioned SQL assets through real Dagster runs and the command line.

The fixture project `projects/partitioned` has daily (replace, merge, append), monthly,
windowed and static (injection payloads as keys) partitioned files.
"""

import os

import dagster as dg
import pytest

from assetlake_dagster.cli.backfill import batches, run_backfill
from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.lake.delta_sql import read
from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster_tests.helpers import PROJECTS, delta_history as history, files_by_partition, run_cli
from assetlake_dagster_tests.projects.partitioned.sources import REGIONS

PROJECT = os.path.join(PROJECTS, "partitioned")
RAW = dg.AssetKey(["raw", "events"])


def key(text):
    return dg.AssetKey(text.split("/"))


@pytest.fixture
def project(spark, lake_root):
    """The fixture's definitions on a fresh lake, with raw/events materialized."""
    defs = build_definitions(PROJECT, lake_root=lake_root)
    instance = dg.DagsterInstance.ephemeral()
    run(defs, instance, [RAW])
    return defs, instance, lake_root


def run(defs, instance, keys, **kwargs):
    result = defs.resolve_implicit_job_def_def_for_assets(keys).execute_in_process(
        instance=instance, asset_selection=keys, **kwargs
    )
    assert result.success
    return result


def range_tags(start, end):
    return {"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end}


def materializations(result):
    return {
        e.materialization.partition: e.materialization.metadata for e in result.get_asset_materialization_events()
    }




def test_partitions_become_dagster_definitions(spark, lake_root):
    defs = build_definitions(PROJECT, lake_root=lake_root)
    graph = defs.resolve_asset_graph()
    daily = graph.get(key("mart/daily_events"))
    assert isinstance(daily.partitions_def, dg.DailyPartitionsDefinition)
    assert daily.partitions_def.get_partition_keys()[0] == "2024-01-01" and len(daily.partitions_def.get_partition_keys()) == 10
    assert daily.backfill_policy == dg.BackfillPolicy.multi_run(5)
    assert isinstance(graph.get(key("mart/monthly_totals")).partitions_def, dg.MonthlyPartitionsDefinition)
    assert graph.get(key("mart/region_events")).partitions_def.get_partition_keys() == list(REGIONS)
    rolling = next(iter(defs.resolve_assets_def(key("mart/rolling_totals")).specs))
    (dep,) = [d for d in rolling.deps if d.asset_key == key("mart/daily_events")]
    assert isinstance(dep.partition_mapping, dg.TimeWindowPartitionMapping)
    assert (dep.partition_mapping.start_offset, dep.partition_mapping.end_offset) == (-2, 0)


def test_a_batch_run_is_one_commit_with_a_row_count_per_partition(project, spark):
    defs, instance, lake_root = project
    path = f"{lake_root}/mart/daily_events"
    result = run(defs, instance, [key("mart/daily_events")], tags=range_tags("2024-01-01", "2024-01-05"))
    counts = {p: m["dagster/partition_row_count"].value for p, m in materializations(result).items()}
    # Day N has N events: each partition's own count, not the batch's.
    assert counts == {f"2024-01-0{d}": d for d in range(1, 6)}
    # dagster/row_count is the table's, on every partition's materialization (Dagster's conventions).
    assert {m["dagster/row_count"].value for m in materializations(result).values()} == {1 + 2 + 3 + 4 + 5}
    # One commit, the file's description (the table's comment) in it.
    assert history(spark, path) == [(0, "CREATE TABLE AS SELECT")]
    assert instance.get_materialized_partitions(key("mart/daily_events")) == {f"2024-01-0{d}" for d in range(1, 6)}
    # Re-running one partition with nothing changed: skipped, no commit.
    run(defs, instance, [key("mart/daily_events")], partition_key="2024-01-03")
    assert history(spark, path) == [(0, "CREATE TABLE AS SELECT")]
    # Forced: same rows, one more commit, other partitions' files untouched.
    before_rows = sorted(tuple(r) for r in read(spark, path).collect())
    before_files = files_by_partition(spark, path)
    run(defs, instance, [key("mart/daily_events")], partition_key="2024-01-03", tags={"assetlake/force": "true"})
    after_files = files_by_partition(spark, path)
    assert sorted(tuple(r) for r in read(spark, path).collect()) == before_rows
    assert history(spark, path)[0] == (1, "WRITE")
    assert all(after_files[p] == before_files[p] for p in before_files if p != "2024-01-03")
    assert after_files["2024-01-03"] != before_files["2024-01-03"]
    # Time travel from SQL: a file reads the table as of its first version.
    run(defs, instance, [key("mart/daily_events")], partition_key="2024-01-06")
    run(defs, instance, [key("mart/first_load")])
    assert read(spark, f"{lake_root}/mart/first_load").first().events == 1 + 2 + 3 + 4 + 5


def test_time_windows_windows_and_coarser_partitions_read_their_range(project, spark):
    defs, instance, lake_root = project
    run(defs, instance, [key("mart/daily_events")], tags=range_tags("2024-01-01", "2024-01-05"))
    run(defs, instance, [key("mart/monthly_totals")], partition_key="2024-01-01")
    run(defs, instance, [key("mart/rolling_totals")], partition_key="2024-01-04")
    run(defs, instance, [key("mart/event_log")], tags=range_tags("2024-01-02", "2024-01-03"))
    run(defs, instance, [key("mart/daily_totals")], partition_key="2024-01-04")
    monthly = read(spark, f"{lake_root}/mart/monthly_totals").collect()
    assert [(r.events, r[PARTITION_COLUMN]) for r in monthly] == [(15, "2024-01-01")]  # days 1..5
    rolling = read(spark, f"{lake_root}/mart/rolling_totals").collect()
    assert [(r.events_3d, r[PARTITION_COLUMN]) for r in rolling] == [(2 + 3 + 4, "2024-01-04")]
    log = read(spark, f"{lake_root}/mart/event_log").groupBy(PARTITION_COLUMN).count().collect()
    assert sorted(tuple(r) for r in log) == [("2024-01-02", 2), ("2024-01-03", 3)]
    totals = read(spark, f"{lake_root}/mart/daily_totals").collect()
    assert sorted((r.customer, r.events, r[PARTITION_COLUMN]) for r in totals) == [
        ("c0", 2, "2024-01-04"),
        ("c1", 2, "2024-01-04"),
    ]


def test_injection_keys_touch_only_their_own_partition(project, spark):
    defs, instance, lake_root = project
    for region in REGIONS:
        # Merged per partition: the MERGE is stamped through a session setting, where a key
        # such as ${env:HOME} must not be expanded: the run finds its commit and succeeds.
        run(defs, instance, [key("mart/region_events")], partition_key=region)
    rows = read(spark, f"{lake_root}/mart/region_events").select(PARTITION_COLUMN, "region").collect()
    assert {(r[0], r[1]) for r in rows} == {(region, region) for region in REGIONS}
    assert read(spark, f"{lake_root}/mart/region_events").count() == read(spark, f"{lake_root}/raw/events").count()
    # Re-running a payload partition changes nothing anywhere else.
    before = files_by_partition(spark, f"{lake_root}/mart/region_events")
    run(defs, instance, [key("mart/region_events")], partition_key=REGIONS[1])
    after = files_by_partition(spark, f"{lake_root}/mart/region_events")
    assert after[REGIONS[0]] == before[REGIONS[0]] and after[REGIONS[2]] == before[REGIONS[2]]


def test_backfill_runs_batches_and_a_failed_batch_does_not_stop_the_others(project, spark):
    defs, instance, lake_root = project
    path = f"{lake_root}/mart/bad_days"
    report = run_backfill(defs, key("mart/bad_days"), None, None, instance=instance, log=lambda line: None)
    # batch=2 over 6 days: three runs; the one holding 2024-01-04 fails, the others land.
    assert [b for b, _ in report.succeeded] == [["2024-01-01", "2024-01-02"], ["2024-01-05", "2024-01-06"]]
    assert [b for b, _ in report.failed] == [["2024-01-03", "2024-01-04"]]
    assert [op for _, op in history(spark, path)] == ["WRITE", "CREATE TABLE AS SELECT"]  # the comment in the first
    assert {r[0] for r in read(spark, path).select(PARTITION_COLUMN).distinct().collect()} == {
        "2024-01-01", "2024-01-02", "2024-01-05", "2024-01-06"
    }
    # --missing retries only what is not materialized, and fails again without a new commit.
    again = run_backfill(defs, key("mart/bad_days"), None, None, instance=instance, missing_only=True, log=lambda line: None)
    assert [b for b, _ in again.failed] == [["2024-01-03", "2024-01-04"]] and again.succeeded == []
    assert len(history(spark, path)) == 2


def test_batches_split_at_gaps_and_size():
    keys = ["d1", "d2", "d3", "d5", "d6"]
    assert batches(keys, ["d1", "d2", "d3", "d4", "d5", "d6"], 2) == [["d1", "d2"], ["d3"], ["d5", "d6"]]


def test_backfill_and_restore_from_the_command_line(spark, tmp_path, monkeypatch, capsys):
    home, lake = tmp_path / "home", str(tmp_path / "lake")
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("ASSETLAKE_PROJECT_DIR", PROJECT)
    monkeypatch.setenv("ASSETLAKE_LAKE_ROOT", lake)
    run(build_definitions(PROJECT), dg.DagsterInstance.ephemeral(), [RAW])
    code, out, err = run_cli(capsys, "backfill", "mart/daily_events", "--from", "2024-01-01", "--to", "2024-01-10")
    assert code == 0, err
    assert "10 partitions in 2 runs" in out and "2 runs succeeded, 0 failed" in out
    path = os.path.join(lake, "mart", "daily_events")
    # One commit per batch of 5, the table's comment in the first.
    assert history(spark, path) == [(1, "WRITE"), (0, "CREATE TABLE AS SELECT")]
    assert read(spark, path).count() == sum(range(1, 11))
    # The runs are in DAGSTER_HOME, so the UI shows every partition as materialized.
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert len(instance.get_materialized_partitions(key("mart/daily_events"))) == 10
    # Restore version 0: only the first batch's five days remain, as a new version.
    code, out, err = run_cli(capsys, "restore", "delta://mart/daily_events", "--version", "0", "--lake-root", lake)
    assert code == 0, err
    assert "restored to its version 0 as new version 2" in out
    assert read(spark, path).count() == sum(range(1, 6))
    code, out, err = run_cli(capsys, "restore", "delta://mart/daily_events", "--version", "9", "--lake-root", lake)
    assert code == 1 and "version 9 is not in the table's history" in err
