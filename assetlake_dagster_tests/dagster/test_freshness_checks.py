"""Layer 3: freshness checks, run by Dagster against its own event log (no Spark).

"Yesterday's partition by 09:00" for a time-partitioned asset with a ``-- freshness cron``
line, and dbt's "source freshness" for external tables (``source_freshness=``), fed by the
observed time of the table's last Delta commit.
"""

import datetime as dt
import textwrap

import dagster as dg
import deltalake
import pandas as pd
import pytest

from assetlake_dagster import build_definitions
from assetlake_dagster.defs.external import LAST_UPDATED_KEY
from assetlake_dagster.defs.freshness_checks import FRESH_UNTIL_KEY, FRESHNESS_SENSOR_NAME, partition_lag_result

DAILY = """\
    -- materialize delta://mart/daily_totals
    -- partitioned daily start=2024-01-01
    -- freshness cron 0 9 * * * lower_bound=1h
    SELECT count(*) AS n FROM raw.events WHERE event_date = {partition}
"""


def _project(tmp_path, sql: str = DAILY):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "daily_totals.sql").write_text(textwrap.dedent(sql))
    return folder


def _run(defs: dg.Definitions, selection: dg.AssetSelection, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """A run of ``selection`` only, as the UI launches one."""
    job = dg.define_asset_job("selected", selection=selection)
    return dg.Definitions.merge(defs, dg.Definitions(jobs=[job])).resolve_job_def("selected").execute_in_process(instance=instance)


def _run_checks(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, bool]:
    """Every freshness check of ``defs``, run once: ``{asset/check: passed}``."""
    graph = defs.get_repository_def().asset_graph
    keys = [key for key in graph.asset_check_keys if key.name == "freshness_check"]
    result = _run(defs, dg.AssetSelection.checks(*keys), instance)
    evaluations = result.get_asset_check_evaluations()
    return {f"{e.asset_key.to_user_string()}/{e.check_name}": e.passed for e in evaluations}


def test_a_cron_freshness_on_daily_partitions_checks_the_last_closed_partition(tmp_path):
    defs = build_definitions(_project(tmp_path), lake_root=str(tmp_path / "lake"))
    sensor = next(s for s in defs.get_repository_def().sensor_defs if s.name == FRESHNESS_SENSOR_NAME)
    assert sensor.default_status is dg.DefaultSensorStatus.RUNNING
    with dg.instance_for_test() as instance:
        assert _run_checks(defs, instance) == {"mart/daily_totals/freshness_check": False}
        # The partitions of the last three days: whichever side of 09:00 it is now, the one
        # that had closed by the last tick is among them.
        today = dt.datetime.now(dt.timezone.utc).date()
        for days in (1, 2, 3):
            key = (today - dt.timedelta(days=days)).isoformat()
            instance.report_runless_asset_event(dg.AssetMaterialization(["mart", "daily_totals"], partition=key))
        assert _run_checks(defs, instance) == {"mart/daily_totals/freshness_check": True}


def test_a_window_freshness_without_time_partitions_stays_a_policy_on_the_asset(tmp_path):
    sql = DAILY.replace("-- freshness cron 0 9 * * * lower_bound=1h", "-- freshness fail=26h").replace(
        "-- partitioned daily start=2024-01-01\n", "").replace(" WHERE event_date = {partition}", "")
    defs = build_definitions(_project(tmp_path, sql), lake_root=str(tmp_path / "lake"))
    assert list(defs.get_repository_def().asset_graph.asset_check_keys) == []
    assert FRESHNESS_SENSOR_NAME not in {s.name for s in defs.get_repository_def().sensor_defs}
    spec = defs.get_repository_def().asset_graph.get(dg.AssetKey(["mart", "daily_totals"]))
    assert spec.freshness_policy.fail_window.to_timedelta() == dt.timedelta(hours=26)


LAG = DAILY.replace("-- freshness cron 0 9 * * * lower_bound=1h", "-- freshness fail=26h warn=2h")
TOTALS = dg.AssetKey(["mart", "daily_totals"])


def _materialize(instance, *partitions):
    for partition in partitions:
        instance.report_runless_asset_event(dg.AssetMaterialization(TOTALS, partition=partition))


def test_a_window_freshness_on_daily_partitions_is_each_partitions_lag_after_it_closes(tmp_path):
    daily = dg.DailyPartitionsDefinition(start_date="2024-01-01")
    now = dt.datetime(2024, 3, 5, 3, 0, tzinfo=dt.timezone.utc)
    fail, warn = dt.timedelta(hours=26), dt.timedelta(hours=2)
    with dg.instance_for_test() as instance:
        def judge(at=now):
            return partition_lag_result(instance, TOTALS, daily, fail, warn, now=at)

        # The asset's latest materialization does not count: only the partition that is due.
        _materialize(instance, "2024-01-01")
        missing = judge()
        assert (missing.passed, missing.severity) == (False, dg.AssetCheckSeverity.ERROR)
        assert missing.metadata["partition"].value == "2024-03-03"
        assert missing.description == (
            "Partition 2024-03-03 closed at 2024-03-04 00:00 UTC and was due by 2024-03-05 02:00 UTC "
            "(1d 2h later); it has not landed (1h overdue)."
        )
        assert missing.metadata["dagster/overdue_seconds"].value == 3600
        # It lands (late): the next partition, due by warn=2h after it closed, only warns.
        _materialize(instance, "2024-03-03")
        warning = judge()
        assert (warning.passed, warning.severity) == (False, dg.AssetCheckSeverity.WARN)
        assert warning.metadata["partition"].value == "2024-03-04"
        assert "due by 2024-03-05 02:00 UTC (2h later)" in warning.description
        _materialize(instance, "2024-03-04")
        passed = judge()
        assert passed.passed and passed.metadata["partition"].value == "2024-03-04"
        assert passed.metadata["landed_late_seconds"].value > 0  # reported in 2026 for a 2024 deadline
        # The next partition (2024-03-05) can be overdue from 2024-03-06 02:00 on: the sensor waits till then.
        fresh_until = dt.datetime(2024, 3, 6, 2, 0, tzinfo=dt.timezone.utc).timestamp()
        assert passed.metadata[FRESH_UNTIL_KEY].value == fresh_until
        assert not judge(dt.datetime.fromtimestamp(fresh_until + 1, dt.timezone.utc)).passed
        # Before the first partition closed, nothing is due.
        early = judge(dt.datetime(2023, 12, 31, tzinfo=dt.timezone.utc))
        assert early.passed and early.description == "No partition is due yet."
        assert early.metadata[FRESH_UNTIL_KEY].value == dt.datetime(2024, 1, 2, 2, 0, tzinfo=dt.timezone.utc).timestamp()


def test_a_window_freshness_on_daily_partitions_is_a_check_run_by_the_freshness_sensor(tmp_path):
    defs = build_definitions(_project(tmp_path, LAG), lake_root=str(tmp_path / "lake"))
    repository = defs.get_repository_def()
    assert repository.asset_graph.get(TOTALS).freshness_policy is None  # not the asset's latest materialization
    assert list(repository.asset_graph.asset_check_keys) == [dg.AssetCheckKey(TOTALS, "freshness_check")]
    sensor = next(s for s in repository.sensor_defs if s.name == FRESHNESS_SENSOR_NAME)
    with dg.instance_for_test() as instance:
        assert _run_checks(defs, instance) == {"mart/daily_totals/freshness_check": False}
        today = dt.datetime.now(dt.timezone.utc).date()
        _materialize(instance, *[(today - dt.timedelta(days=days)).isoformat() for days in (1, 2, 3)])
        assert _run_checks(defs, instance) == {"mart/daily_totals/freshness_check": True}
        # Passed, with the time the next partition can be overdue: Dagster's sensor skips it till then.
        result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        assert isinstance(result, dg.SkipReason), result


@pytest.mark.parametrize("age, fresh", [(dt.timedelta(minutes=10), True), (dt.timedelta(hours=3), False)])
def test_source_freshness_reads_the_observed_last_commit(tmp_path, age, fresh):
    defs = build_definitions(_project(tmp_path), lake_root=str(tmp_path / "lake"), source_freshness={"raw.events": "fail=1h"})
    with dg.instance_for_test() as instance:
        committed = dt.datetime.now(dt.timezone.utc) - age
        observation = dg.AssetObservation(["raw", "events"], metadata={LAST_UPDATED_KEY: dg.MetadataValue.timestamp(committed)})
        instance.report_runless_asset_event(observation)
        assert _run_checks(defs, instance)["raw/events/freshness_check"] is fresh


def test_observe_records_the_tables_last_commit_time(tmp_path):
    lake = tmp_path / "lake"
    deltalake.write_deltalake(str(lake / "raw" / "events"), pd.DataFrame({"event_date": ["2024-01-01"]}))
    deltalake.write_deltalake(str(lake / "raw" / "events"), pd.DataFrame({"event_date": ["2024-01-02"]}), mode="append")
    defs = build_definitions(_project(tmp_path), lake_root=str(lake), source_freshness="fail=1h")
    events = dg.AssetKey(["raw", "events"])
    with dg.instance_for_test() as instance:
        assert _run(defs, dg.AssetSelection.assets(events), instance).success  # "Observe"
        metadata = instance.fetch_observations(events, limit=1).records[0].asset_observation.metadata
        commit_ms = deltalake.DeltaTable(str(lake / "raw" / "events")).history(1)[0]["timestamp"]
        assert metadata[LAST_UPDATED_KEY].value == pytest.approx(commit_ms / 1000, abs=1)
        assert _run_checks(defs, instance)["raw/events/freshness_check"] is True


@pytest.mark.parametrize(
    "given, message",
    [
        ({"raw.events": "fail=26h warn=24h"}, "a source's freshness check has one severity: 'warn=' is not taken"),
        ({"events": "fail=1h"}, "source_freshness['events']: 'events' is not a table. Name it 'schema.table'"),
        ("fail=26x", "source_freshness['*']:2:19: '26x' is not a duration."),
    ],
)
def test_a_bad_source_freshness_is_refused_with_the_lines_message(tmp_path, given, message):
    with pytest.raises(ValueError) as raised:
        build_definitions(_project(tmp_path), lake_root=str(tmp_path / "lake"), source_freshness=given)
    assert message in str(raised.value)
