"""Layer 5: the demo's data tests, as the README tells a new user to try them.

A duplicate customer injected through raw/customers' run config must be blocked by
analytics/customers' `unique customer_id` test before the merge commits; removing it lets the
next run publish.
"""

import dagster as dg

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.demo import DEMO_PROJECT_DIR

RAW = dg.AssetKey(["raw", "customers"])
CUSTOMERS = dg.AssetKey(["analytics", "customers"])
INJECT = {"ops": {"raw__customers": {"config": {"duplicate_customer_id": 7}}}}


def run(defs, instance, **kwargs):
    job = defs.resolve_implicit_job_def_def_for_assets([RAW, CUSTOMERS])
    return job.execute_in_process(instance=instance, asset_selection=[RAW, CUSTOMERS], raise_on_error=False, **kwargs)


def versions(spark, path):
    return [r.version for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version").collect()]


def test_the_demo_declares_data_tests_including_a_custom_one(spark, lake_root):
    defs = build_definitions(DEMO_PROJECT_DIR, lake_root=lake_root)
    names = {spec.name for spec in defs.resolve_assets_def(CUSTOMERS).check_specs}
    assert names == {"unique_customer_id", "not_null_name", "accepted_values_tier"}
    facts = {spec.name: spec for spec in defs.resolve_assets_def(dg.AssetKey(["analytics", "fct_orders"])).check_specs}
    assert "custom_positive_amounts" in facts and facts["not_null_tier_at_order"].blocking is False


def test_a_duplicate_customer_is_blocked_before_the_commit(spark, lake_root):
    defs = build_definitions(DEMO_PROJECT_DIR, lake_root=lake_root)
    instance = dg.DagsterInstance.ephemeral()
    assert run(defs, instance).success
    path = f"{lake_root}/analytics/customers"
    before = versions(spark, path)
    result = run(defs, instance, run_config=INJECT)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    message = failure.step_failure_data.user_failure_data.description
    assert message.startswith(
        "data test unique_customer_id (customer_id unique) failed on delta://analytics/customers (staged table): "
        "1 failing value, e.g. 7 x2. Nothing was written: the table stays at version 0."  # its comment is in version 0
    ), message
    assert versions(spark, path) == before
    evaluations = {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    assert evaluations["unique_customer_id"].passed is False
    assert evaluations["not_null_name"].passed is True
    # Without the duplicate the next run passes (and, nothing having changed, commits nothing).
    assert run(defs, instance).success
    assert versions(spark, path) == before
