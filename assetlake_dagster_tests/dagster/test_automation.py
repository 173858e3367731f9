"""Layer 5: `-- schedule` and `-- automation` lines, and the jobs per group, in Dagster.

The fixture `projects/automation` has, per group: `sales` (daily orders with a blocking test
and a schedule, an eager daily downstream, a scheduled monthly rollup), `reports` (two
pairs of unpartitioned files sharing a cron: one schedule per pair), `geo` (static,
dynamic and daily partitions; schedules and `on_missing`) and `ops` (`on_cron`).

Schedule ticks and automation conditions are evaluated as the daemon would
(`build_schedule_context`, `evaluate_automation_conditions`); only the upstream orders are
materialized for real, once for the whole module (two runs on the suite's Spark session).
"""

import datetime as dt
import os

import dagster as dg
import pytest

from assetlake_dagster.defs.automation_conditions import AUTOMATION_SENSOR_NAME, automation_condition
from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.defs.dagster_internals import DATA_VERSION_TAG
from assetlake_dagster.spec import AutomationKind, AutomationSpec
from assetlake_dagster.defs.translator import AssetlakeTranslator
from assetlake_dagster.defs.watch import WATCH_SENSOR_NAME
from assetlake_dagster_tests.helpers import PROJECTS

PROJECT = os.path.join(PROJECTS, "automation")
ORDERS = dg.AssetKey(["sales", "orders"])
TOTALS = dg.AssetKey(["sales", "order_totals"])
CUSTOMERS = dg.AssetKey(["sales", "order_customers"])  # also reads the external raw/customers
NOT_NULL = dg.AssetCheckKey(ORDERS, "not_null_amount")
UTC = dt.timezone.utc


def key(text):
    return dg.AssetKey(text.split("/"))


@pytest.fixture(scope="module")
def defs(tmp_path_factory):
    return build_definitions(PROJECT, lake_root=str(tmp_path_factory.mktemp("lake")))


def tick(defs, name, at, instance=None):
    """One tick of the schedule ``name`` at the scheduled time ``at``, as the daemon runs it."""
    schedule = defs.resolve_schedule_def(name)
    repository = defs.get_repository_def()
    # An instance with a ref, as the daemon's: the tick reads dynamic partitions from it.
    with dg.instance_for_test() as own:
        with dg.build_schedule_context(
            instance=instance or own, scheduled_execution_time=at, repository_def=repository
        ) as context:
            return schedule.evaluate_tick(context)


def requested(data):
    return [(r.partition_key, r.run_key) for r in data.run_requests]


# -- jobs per group ---------------------------------------------------------------------------
def test_a_job_per_group_split_by_partitions_definition(defs):
    repo = defs.get_repository_def()
    group_jobs = {
        job.name: sorted(k.to_user_string() for k in job.asset_layer.executable_asset_keys)
        for job in repo.get_all_jobs()
        if not job.name.startswith("__") and "_schedule" not in job.name
    }
    assert group_jobs == {
        # daily and monthly cannot share one asset job in Dagster 1.13
        "sales_daily_job": ["sales/order_customers", "sales/order_totals", "sales/orders"],
        "sales_monthly_job": ["sales/monthly_orders"],
        "reports_job": ["reports/daily_c", "reports/daily_d", "reports/weekly_a", "reports/weekly_b"],
        "geo_daily_job": ["geo/daily_snapshot"],
        "geo_dynamic_job": ["geo/tenants"],
        "geo_static_job": ["geo/by_region"],
        "ops_job": ["ops/heartbeat"],
        # no job for the 'external' group (raw/customers): nothing in it runs
    }
    assert repo.get_job("sales_daily_job").partitions_def == dg.DailyPartitionsDefinition("2026-01-01", end_date="2026-01-08")
    # the checks of the group's assets run with the job
    assert NOT_NULL in repo.get_job("sales_daily_job").asset_layer.asset_graph.asset_check_keys


def test_python_assets_join_their_groups_job_and_yours_replace_generated_ones(tmp_path):
    (tmp_path / "a.sql").write_text("-- materialize delta://m/a\n-- group g\n\nSELECT 1 AS id\n")
    (tmp_path / "extra.py").write_text("import dagster as dg\n\n@dg.asset(group_name='g')\ndef py():\n    return None\n")
    defs = build_definitions(tmp_path, lake_root=str(tmp_path / "lake"))
    job = defs.get_repository_def().get_job("g_job")
    assert {k.to_user_string() for k in job.asset_layer.executable_asset_keys} == {"m/a", "py"}

    mine = dg.define_asset_job("g_job", selection=[dg.AssetKey(["m", "a"])], tags={"team": "x"})
    defs = build_definitions(tmp_path, lake_root=str(tmp_path / "lake"), jobs=[mine])
    job = defs.get_repository_def().get_job("g_job")
    assert job.tags == {"team": "x"} and [k.to_user_string() for k in job.asset_layer.executable_asset_keys] == ["m/a"]


# -- schedules ----------------------------------------------------------------------------------
def test_schedules_are_named_after_the_asset_or_the_group_and_run_by_default(defs):
    schedules = {s.name: s for s in defs.get_repository_def().schedule_defs}
    assert sorted(schedules) == [
        "geo__by_region_schedule",
        "geo__tenants_schedule",
        "reports_schedule",  # daily_c + daily_d at 0 7 * * * (the bucket whose first asset sorts first)
        "reports_schedule_2",  # weekly_a + weekly_b at 0 6 * * MON, Berlin
        "sales__monthly_orders_schedule",  # one cron, two partitions definitions: two schedules
        "sales__orders_schedule",
    ]
    assert all(s.default_status is dg.DefaultScheduleStatus.RUNNING for s in schedules.values())
    weekly = schedules["reports_schedule_2"]
    assert (weekly.cron_schedule, weekly.execution_timezone) == ("0 6 * * MON", "Europe/Berlin")
    assert schedules["reports_schedule"].execution_timezone == "UTC"
    job = defs.get_repository_def().get_job(weekly.job_name)
    assert sorted(k.to_user_string() for k in job.asset_layer.executable_asset_keys) == ["reports/weekly_a", "reports/weekly_b"]
    # the same names on every load
    again = build_definitions(PROJECT, lake_root="/unused")
    assert sorted(s.name for s in again.get_repository_def().schedule_defs) == sorted(schedules)


def test_a_daily_tick_runs_the_day_that_just_closed(defs):
    data = tick(defs, "sales__orders_schedule", dt.datetime(2026, 1, 5, 2, tzinfo=UTC))
    assert requested(data) == [("2026-01-04", "2026-01-04")]
    # before the first day has closed, nothing to run
    data = tick(defs, "sales__orders_schedule", dt.datetime(2026, 1, 1, 2, tzinfo=UTC))
    assert requested(data) == [] and "No partition" in data.skip_message


def test_a_daily_tick_of_a_monthly_asset_runs_the_last_whole_month(defs):
    assert requested(tick(defs, "sales__monthly_orders_schedule", dt.datetime(2026, 1, 5, 2, tzinfo=UTC))) == [
        ("2025-12-01", "2025-12-01")
    ]
    assert requested(tick(defs, "sales__monthly_orders_schedule", dt.datetime(2026, 2, 1, 2, tzinfo=UTC))) == [
        ("2026-01-01", "2026-01-01")
    ]


def test_static_ticks_run_every_key_and_dynamic_ones_every_existing_key(defs):
    assert requested(tick(defs, "geo__by_region_schedule", dt.datetime(2026, 1, 5, 3, tzinfo=UTC))) == [
        ("eu", "eu"),
        ("us", "us"),
    ]
    with dg.instance_for_test() as instance:
        data = tick(defs, "geo__tenants_schedule", dt.datetime(2026, 1, 5, 3, tzinfo=UTC), instance)
        assert requested(data) == [] and "No partition" in data.skip_message
        instance.add_dynamic_partitions("tenants", ["acme", "globex"])
        data = tick(defs, "geo__tenants_schedule", dt.datetime(2026, 1, 5, 4, tzinfo=UTC), instance)
        assert requested(data) == [("acme", "acme"), ("globex", "globex")]


def test_an_unpartitioned_tick_is_one_run(defs):
    assert requested(tick(defs, "reports_schedule_2", dt.datetime(2026, 1, 5, 5, tzinfo=UTC))) == [(None, None)]


# -- automation --------------------------------------------------------------------------------
def test_the_automation_sensor_runs_by_default_and_is_the_only_one(defs):
    sensors = {s.name: s for s in defs.get_repository_def().sensor_defs}
    # No default_automation_condition_sensor; the watch sensor is there because the project
    # reads an external table.
    assert sorted(sensors) == sorted([AUTOMATION_SENSOR_NAME, WATCH_SENSOR_NAME])
    sensor = sensors[AUTOMATION_SENSOR_NAME]
    assert isinstance(sensor, dg.AutomationConditionSensorDefinition)
    assert sensor.default_status is dg.DefaultSensorStatus.RUNNING
    graph = defs.resolve_asset_graph()
    assert graph.get(TOTALS).automation_condition.get_label() == "eager"
    assert graph.get(key("ops/heartbeat")).automation_condition.get_label() == "on_cron(0 * * * *, UTC)"
    assert graph.get(ORDERS).automation_condition is None


def test_no_sensor_without_automation_and_yours_keeps_its_assets(tmp_path):
    (tmp_path / "a.sql").write_text("-- materialize delta://m/a\n\nSELECT 1 AS id\n")
    (tmp_path / "b.sql").write_text("-- materialize delta://m/b\n-- automation eager\n\nSELECT id FROM m.a\n")
    (tmp_path / "c.sql").write_text("-- materialize delta://m/c\n-- automation eager\n\nSELECT id FROM m.a\n")
    lake = str(tmp_path / "lake")
    mine = dg.AutomationConditionSensorDefinition("my_sensor", target=dg.AssetSelection.assets(["m", "b"]))
    defs = build_definitions(tmp_path, lake_root=lake, sensors=[mine])
    sensors = {s.name: s for s in defs.get_repository_def().sensor_defs}
    assert sorted(sensors) == [AUTOMATION_SENSOR_NAME, "my_sensor"]
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in sensors[AUTOMATION_SENSOR_NAME].asset_selection.resolve(graph)} == {"m/a", "m/c"}

    (tmp_path / "b.sql").write_text("-- materialize delta://m/b\n\nSELECT id FROM m.a\n")
    (tmp_path / "c.sql").unlink()
    assert build_definitions(tmp_path, lake_root=lake).get_repository_def().sensor_defs == []


def test_the_translator_decides_the_condition(tmp_path):
    (tmp_path / "a.sql").write_text("-- materialize delta://m/a\n-- automation eager\n\nSELECT 1 AS id\n")

    class Lazy(AssetlakeTranslator):
        def get_automation_condition(self, spec):
            return None

    defs = build_definitions(tmp_path, lake_root=str(tmp_path / "lake"), translator=Lazy())
    assert defs.resolve_asset_graph().get(dg.AssetKey(["m", "a"])).automation_condition is None
    assert defs.get_repository_def().sensor_defs == []


def test_every_condition_waits_for_the_upstreams_blocking_checks():
    for spec in (
        AutomationSpec(AutomationKind.EAGER),
        AutomationSpec(AutomationKind.ON_CRON, cron="0 2 * * *"),
        AutomationSpec(AutomationKind.ON_MISSING),
    ):
        labels = {c.get_label() for c in automation_condition(spec).children}
        assert "all_deps_blocking_checks_passed" in labels, (spec, labels)
    eager = automation_condition(AutomationSpec(AutomationKind.EAGER)).children[0]
    assert dg.AutomationCondition.in_latest_time_window() not in eager.children
    # the replacements of Dagster's sub-conditions, found by label, happened
    for spec, replaced in (
        (AutomationSpec(AutomationKind.EAGER), 2),  # missing, updated
        (AutomationSpec(AutomationKind.ON_MISSING), 1),
        (AutomationSpec(AutomationKind.ON_CRON, cron="0 2 * * *", timezone="Asia/Tokyo"), 1),
    ):
        assert str(automation_condition(spec)).count("allow_selection=MaterializableAssetSelection") == replaced


class PlainEager(AssetlakeTranslator):
    """Dagster's eager for every partition, without the wait for upstream checks."""

    def get_automation_condition(self, spec):
        from assetlake_dagster.defs.dagster_internals import condition_without

        if spec.automation is None:
            return None
        A = dg.AutomationCondition
        return condition_without(A.eager(), A.in_latest_time_window())


@pytest.fixture(scope="module")
def real_orders(spark, defs, tmp_path_factory):
    """Orders materialized for real: 2026-01-01..02 pass their blocking test, 2026-01-03
    fails it (NULL amount: no commit). The conditions are evaluated before the runs, and
    their cursors kept, as the sensor's would be."""
    instance = dg.DagsterInstance.ephemeral()
    plain = build_definitions(PROJECT, lake_root=str(tmp_path_factory.mktemp("unused")), translator=PlainEager())
    cursors = {
        "ours": dg.evaluate_automation_conditions(defs=defs, instance=instance).cursor,
        "plain": dg.evaluate_automation_conditions(defs=plain, instance=instance).cursor,
    }
    job = defs.resolve_implicit_job_def_def_for_assets([ORDERS])
    batch = {"dagster/asset_partition_range_start": "2026-01-01", "dagster/asset_partition_range_end": "2026-01-02"}
    passed = job.execute_in_process(instance=instance, asset_selection=[ORDERS], tags=batch)
    failed = job.execute_in_process(instance=instance, asset_selection=[ORDERS], partition_key="2026-01-03", raise_on_error=False)
    return instance, plain, cursors, passed, failed


def test_the_real_runs(real_orders):
    instance, _, _, passed, failed = real_orders
    assert passed.success and not failed.success
    assert instance.get_materialized_partitions(ORDERS) == {"2026-01-01", "2026-01-02"}


def test_eager_runs_older_partitions_once_upstream_lands_but_not_past_a_failed_blocking_check(real_orders, defs):
    instance, plain_defs, cursors, _, _ = real_orders
    # A check run on its own later finds 2026-01-02 failing against the committed table.
    instance.report_runless_asset_event(
        dg.AssetCheckEvaluation(
            asset_key=ORDERS, check_name=NOT_NULL.name, passed=False, partition="2026-01-02",
            severity=dg.AssetCheckSeverity.ERROR,
        )
    )
    ours = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursors["ours"])
    plain = dg.evaluate_automation_conditions(defs=plain_defs, instance=instance, cursor=cursors["plain"])
    # 2026-01-01 is no latest partition (the asset ends 2026-01-07): late data still flows.
    # 2026-01-03 failed its test, so it was never written: nothing to propagate.
    assert ours.get_requested_partitions(TOTALS) == {"2026-01-01"}
    # Without the AND of all_deps_blocking_checks_passed, eager would run 2026-01-02 too.
    assert plain.get_requested_partitions(TOTALS) == {"2026-01-01", "2026-01-02"}
    # An external upstream nothing materializes does not hold a reader back; Dagster's
    # eager would wait for it for ever.
    assert ours.get_requested_partitions(CUSTOMERS) == {"2026-01-01"}
    assert plain.get_num_requested(CUSTOMERS) == 0



def test_a_new_version_of_an_external_upstream_is_left_to_the_watch_sensor(real_orders, defs):
    """External tables are observable (their Delta version is their data version); eager
    must not turn an observation into a request for every partition of a reader: the watch
    sensor requests the partitions the commit changed."""
    instance, _, cursors, _, _ = real_orders
    settled = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursors["ours"])
    settled = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=settled.cursor)
    assert settled.get_num_requested(CUSTOMERS) == 0
    instance.report_runless_asset_event(
        dg.AssetObservation(asset_key=key("raw/customers"), tags={DATA_VERSION_TAG: "7"})
    )
    after = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=settled.cursor)
    assert after.get_num_requested(CUSTOMERS) == 0

def test_on_missing_requests_partitions_that_appear(defs):
    snapshot, tenants = key("geo/daily_snapshot"), key("geo/tenants")
    t0 = dt.datetime(2026, 1, 5, 3, tzinfo=UTC)
    with dg.DagsterInstance.ephemeral() as instance:
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=t0)
        # Dagster's on_missing: what was missing when the condition was first evaluated is not
        # requested (materialize or backfill it once), ...
        assert first.get_num_requested(snapshot) == 0
        # ... a day that closes afterwards is, and so is a dynamic key added afterwards.
        instance.add_dynamic_partitions("tenants", ["acme"])
        later = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=first.cursor, evaluation_time=t0 + dt.timedelta(days=1)
        )
        assert later.get_requested_partitions(snapshot) == {"2026-01-05"}
        assert later.get_requested_partitions(tenants) == {"acme"}


def test_on_cron_requests_after_each_tick(defs):
    heartbeat = key("ops/heartbeat")
    t0 = dt.datetime(2026, 1, 5, 10, 30, tzinfo=UTC)
    with dg.DagsterInstance.ephemeral() as instance:
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=t0)
        assert first.get_num_requested(heartbeat) == 0
        later = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=first.cursor, evaluation_time=t0 + dt.timedelta(minutes=35)
        )
        assert later.get_num_requested(heartbeat) == 1
