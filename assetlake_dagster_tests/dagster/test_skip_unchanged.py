"""Layer 5: a run whose inputs did not change does nothing (real runs, one instance).

The fixture `projects/unchanged`: `staging/orders` (replace) reads the external `raw/orders`,
`mart/totals` (merge, a data test, eager) reads it, `mart/daily` is partitioned, and
`mart/stamped` calls `current_timestamp()`. Each test runs the assets twice or more in one
Dagster instance and reads what the instance and the tables' logs say.
"""

import os

import dagster as dg
import pytest

from assetlake_dagster.defs.automation_conditions import automation_condition
from assetlake_dagster.cli.backfill import run_backfill
from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.lake.delta_log import latest_version
from assetlake_dagster.run.decision import FORCE_TAG, INPUTS_KEY, SKIPPED_KEY
from assetlake_dagster.spec import AutomationKind, AutomationSpec
from assetlake_dagster_tests.helpers import PROJECTS

PROJECT = os.path.join(PROJECTS, "unchanged")
ORDERS = dg.AssetKey(["staging", "orders"])
TOTALS = dg.AssetKey(["mart", "totals"])
DAILY = dg.AssetKey(["mart", "daily"])
STAMPED = dg.AssetKey(["mart", "stamped"])
ROWS = [(1, 10, 5.0, "d1"), (2, 11, 7.5, "d1"), (3, 10, 1.0, "d2")]


def land(spark, lake_root, rows=ROWS):
    spark.createDataFrame(rows, "order_id INT, customer_id INT, amount DOUBLE, day STRING").write.format(
        "delta"
    ).mode("overwrite").save(f"{lake_root}/raw/orders")


@pytest.fixture
def project(spark, lake_root):
    land(spark, lake_root)
    return build_definitions(PROJECT, lake_root=lake_root), dg.DagsterInstance.ephemeral(), lake_root


def run(defs, instance, keys, **kwargs):
    job = defs.resolve_implicit_job_def_def_for_assets(keys)
    result = job.execute_in_process(instance=instance, asset_selection=keys, raise_on_error=False, **kwargs)
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    return result


def latest(instance, key, partition=None):
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None), limit=1
    ).records
    return records[0].asset_materialization


def version(lake_root, key):
    return latest_version(os.path.join(lake_root, *key.path))


def spark_jobs(spark):
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(None) or [-1])


def test_a_rerun_with_nothing_changed_starts_no_spark_job_and_commits_nothing(spark, project):
    defs, instance, lake_root = project
    run(defs, instance, [ORDERS, TOTALS])
    first = {key: (version(lake_root, key), latest(instance, key)) for key in (ORDERS, TOTALS)}
    jobs_before = spark_jobs(spark)
    result = run(defs, instance, [ORDERS, TOTALS])
    assert spark_jobs(spark) == jobs_before  # no Spark job at all
    for key in (ORDERS, TOTALS):
        before_version, before = first[key]
        after = latest(instance, key)
        assert version(lake_root, key) == before_version  # no commit
        assert after.metadata[SKIPPED_KEY].value.startswith(f"delta://{key.path[0]}/{key.path[1]}: inputs unchanged since version {before_version}")
        assert after.metadata["delta/committed"].value is False
        assert after.metadata["delta/version"].value == before_version
        # Dagster's data version is the Delta version holding the rows, unchanged.
        assert after.tags["dagster/data_version"] == before.tags["dagster/data_version"] == str(before_version)
        assert after.metadata["dagster/row_count"] == before.metadata["dagster/row_count"]
    # The data test's last result is reported again, for the new materialization.
    (evaluation,) = [e.asset_check_evaluation_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert evaluation.passed and "unchanged since run" in evaluation.metadata["scope"].value
    logs = [e.message for e in instance.all_logs(result.run_id) if e.message]
    assert any("inputs unchanged since version" in m and "raw.orders@0" in m for m in logs)


def test_what_reads_a_changed_table_runs_and_the_rest_is_skipped(spark, project):
    defs, instance, lake_root = project
    run(defs, instance, [ORDERS, TOTALS])
    orders_version = version(lake_root, ORDERS)
    land(spark, lake_root, [*ROWS, (4, 12, 2.0, "d2")])  # raw/orders -> version 1
    result = run(defs, instance, [ORDERS, TOTALS])
    assert version(lake_root, ORDERS) == orders_version + 1
    assert latest(instance, ORDERS).metadata[INPUTS_KEY].value["tables"] == {"delta://raw/orders": 1}
    assert SKIPPED_KEY not in latest(instance, TOTALS).metadata  # staging/orders moved
    logs = [e.message for e in instance.all_logs(result.run_id) if e.message]
    assert any("runs, delta://raw/orders moved from version 0 to 1" in m for m in logs)
    # A replace whose rows did not change still commits; a merge that changes nothing does not.
    land(spark, lake_root, [*ROWS, (4, 12, 2.0, "d2"), (5, 12, -1.0, "d2")])  # filtered out downstream
    totals_before = version(lake_root, TOTALS)
    data_version = latest(instance, TOTALS).tags["dagster/data_version"]
    run(defs, instance, [ORDERS, TOTALS])
    assert version(lake_root, TOTALS) == totals_before
    assert latest(instance, TOTALS).tags["dagster/data_version"] == data_version == str(totals_before)


def test_force_tag_and_non_deterministic_sql_run_anyway(spark, project):
    defs, instance, lake_root = project
    run(defs, instance, [ORDERS, STAMPED])
    orders, stamped = version(lake_root, ORDERS), version(lake_root, STAMPED)
    result = run(defs, instance, [ORDERS, STAMPED])
    assert version(lake_root, ORDERS) == orders  # skipped
    assert version(lake_root, STAMPED) == stamped + 1  # current_timestamp(): never skipped
    logs = [e.message for e in instance.all_logs(result.run_id) if e.message]
    assert any("its SQL calls current_timestamp(), whose result differs from run to run" in m for m in logs)
    result = run(defs, instance, [ORDERS], tags={FORCE_TAG: "true"})
    assert version(lake_root, ORDERS) == orders + 1
    logs = [e.message for e in instance.all_logs(result.run_id) if e.message]
    assert any(f"the run is tagged {FORCE_TAG}" in m for m in logs)


def test_a_partition_is_skipped_on_its_own(spark, project):
    defs, instance, lake_root = project
    run(defs, instance, [DAILY], partition_key="d1")
    after_d1 = version(lake_root, DAILY)
    jobs_before = spark_jobs(spark)
    run(defs, instance, [DAILY], partition_key="d1")
    assert spark_jobs(spark) == jobs_before and version(lake_root, DAILY) == after_d1
    run(defs, instance, [DAILY], partition_key="d2")  # never materialized: runs
    assert version(lake_root, DAILY) == after_d1 + 1
    # d2's commit touched only d2: d1 is still skipped.
    run(defs, instance, [DAILY], partition_key="d1")
    assert version(lake_root, DAILY) == after_d1 + 1
    assert SKIPPED_KEY in latest(instance, DAILY, "d1").metadata
    assert SKIPPED_KEY not in latest(instance, DAILY, "d2").metadata


def test_a_commit_by_someone_else_makes_the_run_work(spark, project):
    defs, instance, lake_root = project
    run(defs, instance, [ORDERS])
    spark.sql(f"DELETE FROM delta.`{lake_root}/staging/orders` WHERE order_id = 1")
    before = version(lake_root, ORDERS)
    result = run(defs, instance, [ORDERS])
    assert version(lake_root, ORDERS) == before + 1
    assert spark.read.format("delta").load(f"{lake_root}/staging/orders").count() == 3
    logs = [e.message for e in instance.all_logs(result.run_id) if e.message]
    assert any(f"the table's rows changed since version {before - 1}" in m for m in logs)


def test_a_skipped_upstream_does_not_wake_its_eager_reader(spark, project):
    defs, instance, lake_root = project
    condition = automation_condition(AutomationSpec(AutomationKind.EAGER))
    assert "data_version_changed" in str(condition)
    run(defs, instance, [ORDERS, TOTALS])
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance).cursor
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor).cursor
    run(defs, instance, [ORDERS])  # skipped: same data version
    after = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert TOTALS not in {r.key for r in after.results if r.true_subset.size}
    land(spark, lake_root, [*ROWS, (4, 12, 2.0, "d2")])
    run(defs, instance, [ORDERS])  # a new Delta version of staging/orders: a new data version
    woken = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=after.cursor)
    assert TOTALS in {r.key for r in woken.results if r.true_subset.size}


def test_a_backfill_skips_unchanged_batches_unless_forced(spark, project):
    defs, instance, lake_root = project
    assert run_backfill(defs, DAILY, None, None, instance=instance, batch_size=2, log=lambda _: None).ok
    written = version(lake_root, DAILY)
    assert run_backfill(defs, DAILY, None, None, instance=instance, batch_size=2, log=lambda _: None).ok
    assert version(lake_root, DAILY) == written
    assert all(SKIPPED_KEY in latest(instance, DAILY, p).metadata for p in ("d1", "d2"))
    # Each partition's check result is carried to its new materialization, which it targets.
    infos = instance.event_log_storage.get_asset_check_partition_info([dg.AssetCheckKey(DAILY, "unique_order_id")])
    assert {(i.partition_key, i.latest_execution_status.value, i.is_current) for i in infos} == {
        ("d1", "SUCCEEDED", True), ("d2", "SUCCEEDED", True)
    }
    report = run_backfill(defs, DAILY, None, None, instance=instance, batch_size=2, force=True, log=lambda _: None)
    assert report.ok and version(lake_root, DAILY) == written + 1
    assert instance.get_run_by_id(report.succeeded[0][1]).tags[FORCE_TAG] == "true"


def test_a_python_replace_of_the_rows_the_table_holds_commits_nothing(spark, lake_root):
    from assetlake_dagster.defs.io_manager import DeltaIOManager
    from assetlake_dagster.defs.write_contract import managed_write
    from assetlake_dagster.defs.resources import SparkDeltaResource

    rows = {"value": [(1, "a", None), (2, None, 2.0)]}

    @dg.asset(key=["py", "people"], metadata=managed_write("replace"))
    def people(spark: SparkDeltaResource):
        return spark.get_session().createDataFrame(rows["value"], "id INT, name STRING, score DOUBLE")

    resource = SparkDeltaResource(lake_root=lake_root)
    resources = {"spark": resource, "io_manager": DeltaIOManager(spark=resource)}
    instance = dg.DagsterInstance.ephemeral()
    key = dg.AssetKey(["py", "people"])

    def materialize():
        assert dg.materialize([people], resources=resources, instance=instance).success
        return version(lake_root, key), latest(instance, key)

    first, recorded = materialize()
    again, unchanged = materialize()
    assert again == first and unchanged.metadata["delta/committed"].value is False
    assert unchanged.tags["dagster/data_version"] == recorded.tags["dagster/data_version"] == str(first)
    rows["value"] = [(2, None, 2.0), (1, "a", None)]  # the same rows in another order
    assert materialize()[0] == first
    rows["value"] = [(1, None, None), (2, "a", 2.0)]  # the same values, NULLs elsewhere
    changed, written = materialize()
    assert changed == first + 1 and written.tags["dagster/data_version"] == str(changed)
