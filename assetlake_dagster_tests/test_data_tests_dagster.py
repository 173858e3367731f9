"""Layer 5: data tests as Dagster asset checks, audited before the commit (real runs).

The fixture `projects/audited` has a merge-keyed table with every built-in test, a custom
test and a `warn` test, a downstream table, a partitioned table and an SCD2 dimension.
The sources are external tables the tests write directly.
"""

import os

import dagster as dg
import pytest

from assetlake_dagster.build import build_definitions
from assetlake_dagster.delta_sql import read

PROJECT = os.path.join(os.path.dirname(__file__), "projects", "audited")
ORDERS = dg.AssetKey(["mart", "orders"])
TOTALS = dg.AssetKey(["mart", "order_totals"])
DAILY = dg.AssetKey(["mart", "daily_orders"])
DIM = dg.AssetKey(["mart", "dim_customer"])
STATUS_CHECK = dg.AssetCheckKey(ORDERS, "accepted_values_status")
GOOD_ORDERS = [(1, 10, "paid", 5.0, "a"), (2, 11, "pending", 7.5, None), (3, 10, "paid", 1.0, "c")]


def write_source(spark, lake_root, table, rows, schema):
    df = spark.createDataFrame(rows, schema)
    df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(f"{lake_root}/raw/{table}")


def sources(spark, lake_root, orders=GOOD_ORDERS):
    write_source(spark, lake_root, "customers", [(10, "gold"), (11, "silver")], "customer_id INT, tier STRING")
    write_source(spark, lake_root, "orders", orders, "order_id INT, customer_id INT, status STRING, amount DOUBLE, note STRING")


@pytest.fixture
def project(spark, lake_root):
    defs = build_definitions(PROJECT, lake_root=lake_root)
    job = dg.define_asset_job("audited", selection=[ORDERS, TOTALS], op_retry_policy=dg.RetryPolicy(max_retries=2))
    check_only = dg.define_asset_job("check_only", selection=dg.AssetSelection.checks(STATUS_CHECK))
    defs = dg.Definitions.merge(defs, dg.Definitions(jobs=[job, check_only]))
    return defs, dg.DagsterInstance.ephemeral(), lake_root


def run(defs, instance, keys, **kwargs):
    job = defs.resolve_implicit_job_def_def_for_assets(keys)
    return job.execute_in_process(instance=instance, asset_selection=keys, raise_on_error=False, **kwargs)


def check_results(result):
    return {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }


def versions(spark, path):
    return [r.version for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version").collect()]


def failure_message(result):
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    return failure.step_failure_data.user_failure_data.description


def test_data_tests_become_blocking_and_warn_asset_checks(project):
    defs, _, _ = project
    specs = {c.name: c for c in defs.resolve_assets_def(ORDERS).check_specs}
    assert set(specs) == {
        "unique_order_id",
        "not_null_customer_id",
        "accepted_values_status",
        "relationships_customer_id",
        "custom_no_negative_amounts",
        "not_null_note",
    }
    assert all(specs[n].blocking for n in specs if n != "not_null_note")
    assert specs["not_null_note"].blocking is False


def test_passing_tests_record_what_was_tested_and_warn_does_not_block(project, spark):
    defs, instance, lake_root = project
    sources(spark, lake_root)
    result = run(defs, instance, [ORDERS, TOTALS])
    assert result.success
    checks = check_results(result)
    assert {n for n, c in checks.items() if c.passed} == set(checks) - {"not_null_note"}
    warn = checks["not_null_note"]
    assert not warn.passed and warn.severity == dg.AssetCheckSeverity.WARN
    assert warn.metadata["failing"].value == 1
    passed = checks["unique_order_id"]
    assert passed.metadata["rows_tested"].value == 3 and passed.metadata["scope"].value == "staged table"
    assert versions(spark, f"{lake_root}/mart/orders") == [0]


#: One bad row per blocking test: the row, the test it trips, and what the message must say.
BAD_ROWS = [
    ((1, 10, "paid", 2.0, "dup"), "unique_order_id", "1 failing value, e.g. 1 x2"),
    ((4, None, "paid", 2.0, "x"), "not_null_customer_id", "1 failing row, e.g. {order_id: 4"),
    ((4, 10, "lost", 2.0, "x"), "accepted_values_status", "1 failing row, e.g. 'lost'"),
    ((4, 99, "paid", 2.0, "x"), "relationships_customer_id", "1 failing row, e.g. 99"),
    ((4, 10, "paid", -2.0, "x"), "custom_no_negative_amounts", "1 failing row, e.g. {order_id: 4, amount: -2.0}"),
]


def test_each_failing_blocking_test_keeps_the_prior_version_and_skips_downstream(project, spark):
    defs, instance, lake_root = project
    sources(spark, lake_root)
    assert run(defs, instance, [ORDERS, TOTALS]).success
    totals_before = versions(spark, f"{lake_root}/mart/order_totals")
    for bad_row, test, expected in BAD_ROWS:
        sources(spark, lake_root, GOOD_ORDERS + [bad_row])
        result = defs.resolve_job_def("audited").execute_in_process(instance=instance, raise_on_error=False)
        assert not result.success, test
        message = failure_message(result)
        assert f"data test {test} (" in message and expected in message, message
        assert "Nothing was written: the table stays at version 0" in message, message
        assert versions(spark, f"{lake_root}/mart/orders") == [0], test
        checks = check_results(result)
        assert checks[test].passed is False and checks[test].metadata["failing"].value == 1, test
        # Downstream did not run, and the failure was not retried despite the job's retry policy.
        assert versions(spark, f"{lake_root}/mart/order_totals") == totals_before, test
        assert [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"] == [], test
        assert result.asset_materializations_for_node("sql__mart__orders") == [], test
    # Remove the bad row: the next run passes and publishes.
    sources(spark, lake_root)
    sources(spark, lake_root, GOOD_ORDERS + [(4, 11, "paid", 3.0, "new")])
    assert run(defs, instance, [ORDERS]).success
    assert versions(spark, f"{lake_root}/mart/orders") == [1, 0]


def test_a_failing_first_run_creates_no_table(project, spark):
    defs, instance, lake_root = project
    sources(spark, lake_root, GOOD_ORDERS + [(1, 10, "paid", 1.0, "dup")])
    assert not run(defs, instance, [ORDERS]).success
    assert not os.path.exists(f"{lake_root}/mart/orders/_delta_log")


def test_merge_tests_see_the_table_after_the_upsert(project, spark):
    defs, instance, lake_root = project
    sources(spark, lake_root)
    assert run(defs, instance, [ORDERS]).success
    # The snapshot now lacks order 2, but merge keeps it: 3 rows tested, not 2.
    sources(spark, lake_root, [GOOD_ORDERS[0], GOOD_ORDERS[2]])
    result = run(defs, instance, [ORDERS])
    assert result.success
    assert check_results(result)["unique_order_id"].metadata["rows_tested"].value == 3


def test_partition_tests_see_only_their_slice(project, spark):
    defs, instance, lake_root = project
    schema = "order_id INT, day STRING, amount DOUBLE"
    # d1 holds a duplicate order_id; d2 does not: only d1 is blocked.
    write_source(spark, lake_root, "daily", [(1, "d1", 1.0), (1, "d1", 2.0), (1, "d2", 3.0)], schema)
    assert not run(defs, instance, [DAILY], partition_key="d1").success
    result = run(defs, instance, [DAILY], partition_key="d2")
    assert result.success
    checks = check_results(result)
    assert checks["unique_order_id"].metadata["scope"].value == "staged slice d2"
    assert checks["custom_day_matches"].passed
    assert [tuple(r) for r in read(spark, f"{lake_root}/mart/daily_orders").select("order_id", "_partition").collect()] == [
        (1, "d2")
    ]


def test_history_tests_see_only_current_rows(project, spark):
    defs, instance, lake_root = project
    write_source(spark, lake_root, "customers", [(10, "bronze")], "customer_id INT, tier STRING")
    assert not run(defs, instance, [DIM]).success  # 'bronze' is not accepted
    write_source(spark, lake_root, "customers", [(10, "gold")], "customer_id INT, tier STRING")
    assert run(defs, instance, [DIM]).success
    write_source(spark, lake_root, "customers", [(10, "silver"), (11, "gold")], "customer_id INT, tier STRING")
    result = run(defs, instance, [DIM])
    assert result.success
    checks = check_results(result)
    # Closed versions are history, not tested: only the 2 current rows.
    assert checks["accepted_values_tier"].metadata["rows_tested"].value == 2
    assert checks["accepted_values_tier"].metadata["scope"].value == "staged current rows"


def test_checks_run_on_their_own_against_the_committed_table(project, spark):
    defs, instance, lake_root = project
    sources(spark, lake_root)
    assert run(defs, instance, [ORDERS]).success
    # Someone edits the table outside assetlake: the check, run alone, sees it; nothing is written.
    spark.sql(f"UPDATE delta.`{lake_root}/mart/orders` SET status = 'lost' WHERE order_id = 3")
    result = defs.resolve_job_def("check_only").execute_in_process(instance=instance, raise_on_error=False)
    checks = check_results(result)
    assert set(checks) == {"accepted_values_status"}
    assert checks["accepted_values_status"].passed is False
    assert checks["accepted_values_status"].metadata["scope"].value == "committed table"
    assert versions(spark, f"{lake_root}/mart/orders") == [1, 0]


def test_a_batch_runs_partition_bound_custom_tests_once_per_partition(project, spark):
    defs, instance, lake_root = project
    schema = "order_id INT, day STRING, amount DOUBLE"
    write_source(spark, lake_root, "daily", [(1, "d1", 1.0), (2, "d1", 2.0), (3, "d2", 3.0)], schema)
    tags = {"dagster/asset_partition_range_start": "d1", "dagster/asset_partition_range_end": "d2"}
    result = run(defs, instance, [DAILY], tags=tags)
    assert result.success
    checks = check_results(result)
    # `WHERE day <> {partition}` is bound per partition: all 3 rows tested, none failing.
    assert checks["custom_day_matches"].passed and checks["custom_day_matches"].metadata["rows_tested"].value == 3
    assert checks["unique_order_id"].metadata["scope"].value == "staged slice d1...d2"


def test_assetlake_check_runs_the_tests_on_the_committed_table(spark, tmp_path):
    import subprocess
    import sys

    lake_root = str(tmp_path / "lake")
    sources(spark, lake_root)
    defs = build_definitions(PROJECT, lake_root=lake_root)
    assert run(defs, dg.DagsterInstance.ephemeral(), [ORDERS]).success
    spark.sql(f"UPDATE delta.`{lake_root}/mart/orders` SET status = 'lost' WHERE order_id = 3")
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, DAGSTER_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1")
    cli = os.path.join(os.path.dirname(sys.executable), "assetlake")
    proc = subprocess.run(
        [cli, "check", "mart/orders", "--project-dir", PROJECT, "--lake-root", lake_root],
        env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "FAIL accepted_values_status: 1 failing, e.g. 'lost'" in lines
    assert "PASS unique_order_id" in lines and "WARN not_null_note: 1 failing, e.g. {order_id: 2, customer_id: 11, status: 'pending', amount: 7.5}" in lines
    assert versions(spark, f"{lake_root}/mart/orders") == [1, 0]  # the UPDATE; the check wrote nothing
