"""Layer 5: data tests as Dagster asset checks, audited before the commit (real runs).

The fixture `projects/audited` has a merge-keyed table with every built-in test, a custom
test and a `warn` test, a downstream table, a partitioned table and an SCD2 dimension.
The sources are external tables the tests write directly. The checks of the partitioned
table are partitioned: what the instance records is asserted per partition.
"""

import os

import dagster as dg
import pytest
# Not exported by `dagster`: the status type of the instance's check history, which the UI shows.
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.cli.check_runner import run_checks
from assetlake_dagster.defs.checks import RETRY_ON_STEP_FAILURE_TAG
from assetlake_dagster.lake.delta_sql import read
from assetlake_dagster.errors import ConfigError
from assetlake_dagster_tests.helpers import PROJECTS, run_cli

PROJECT = os.path.join(PROJECTS, "audited")
ORDERS = dg.AssetKey(["mart", "orders"])
TOTALS = dg.AssetKey(["mart", "order_totals"])
DAILY = dg.AssetKey(["mart", "daily_orders"])
DIM = dg.AssetKey(["mart", "dim_customer"])
STATUS_CHECK = dg.AssetCheckKey(ORDERS, "accepted_values_status")
DAILY_CHECKS = ("unique_order_id", "custom_day_matches")
DAILY_SCHEMA = "order_id INT, day STRING, amount DOUBLE"
#: A batch run: one run over the partition range d1...d2, as a backfill launches it.
BATCH = {"dagster/asset_partition_range_start": "d1", "dagster/asset_partition_range_end": "d2"}
SUCCEEDED, FAILED = AssetCheckExecutionRecordStatus.SUCCEEDED, AssetCheckExecutionRecordStatus.FAILED
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
    check_daily = dg.define_asset_job("check_daily", selection=dg.AssetSelection.checks_for_assets(DAILY))
    defs = dg.Definitions.merge(defs, dg.Definitions(jobs=[job, check_only, check_daily]))
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


def evaluations(result):
    """The run's check evaluations by (check, partition); each pair must occur once."""
    found = [
        e.asset_check_evaluation_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    by_key = {(e.check_name, e.partition): e for e in found}
    assert len(by_key) == len(found), [(e.check_name, e.partition) for e in found]
    return by_key


def recorded(instance, run_id):
    """What the instance recorded for a run's checks of DAILY: {(check, partition): status}."""
    records = {}
    for name in DAILY_CHECKS:
        history = instance.event_log_storage.get_asset_check_execution_history(dg.AssetCheckKey(DAILY, name), limit=100)
        for r in history:
            if r.run_id == run_id:
                assert (name, r.partition) not in records, (name, r.partition)
                records[(name, r.partition)] = r.status
    return records


def partition_status(instance, check):
    """The per-partition status the UI shows: {partition: (status, is_current)}.

    ``is_current``: the evaluation targets the partition's latest materialization; Dagster
    drops a partition's check status from the UI when it does not.
    """
    infos = instance.event_log_storage.get_asset_check_partition_info([dg.AssetCheckKey(DAILY, check)])
    return {i.partition_key: (i.latest_execution_status, i.is_current) for i in infos}


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


def test_the_checks_of_a_partitioned_asset_are_partitioned_like_it(project):
    defs, _, _ = project
    daily = defs.resolve_assets_def(DAILY)
    assert {c.name: c.partitions_def for c in daily.check_specs} == {n: daily.partitions_def for n in DAILY_CHECKS}
    assert daily.partitions_def.get_partition_keys() == ["d1", "d2"]
    assert {c.partitions_def for c in defs.resolve_assets_def(ORDERS).check_specs} == {None}


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
    # Unpartitioned asset: unpartitioned evaluations, one per check.
    assert {(name, partition) for name, partition in evaluations(result)} == {(n, None) for n in checks}
    history = instance.event_log_storage.get_asset_check_execution_history(STATUS_CHECK, limit=10)
    assert [(r.run_id, r.partition, r.status) for r in history] == [(result.run_id, None, SUCCEEDED)]
    assert versions(spark, f"{lake_root}/mart/orders") == [0]
    # Evaluated on the staged rows, reported after the commit: each targets this run's
    # materialization (none existed before it; the UI showed "Target materialization –").
    (mat,) = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=ORDERS), limit=5).records
    assert mat.run_id == result.run_id
    targets = {e.target_materialization_data.storage_id for e in evaluations(result).values() if e.asset_key == ORDERS}
    assert targets == {mat.storage_id}


#: One bad row per blocking test: the row, the test it trips, and what the message must say.
BAD_ROWS = [
    ((1, 10, "paid", 2.0, "dup"), "unique_order_id", "1 failing value, e.g. 1 x2"),
    ((4, None, "paid", 2.0, "x"), "not_null_customer_id", "1 failing row, e.g. {order_id: 4"),
    ((5, 10, "lost", 2.0, "x"), "accepted_values_status", "1 failing row, e.g. 'lost'"),
    ((6, 99, "paid", 2.0, "x"), "relationships_customer_id", "1 failing row, e.g. 99"),
    ((7, 10, "paid", -2.0, "x"), "custom_no_negative_amounts", "1 failing row, e.g. {order_id: 7, amount: -2.0}"),
]


def test_each_failing_blocking_test_keeps_the_prior_version_and_skips_downstream(project, spark):
    """One run with every bad row (each trips its own test only): every blocking test fails
    and names its row, nothing is written, downstream does not run."""
    defs, instance, lake_root = project
    sources(spark, lake_root)
    assert run(defs, instance, [ORDERS, TOTALS]).success
    totals_before = versions(spark, f"{lake_root}/mart/order_totals")
    sources(spark, lake_root, GOOD_ORDERS + [bad_row for bad_row, _, _ in BAD_ROWS])
    result = defs.resolve_job_def("audited").execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    message = failure_message(result)
    checks = check_results(result)
    for _, test, expected in BAD_ROWS:
        assert f"data test {test} (" in message and expected in message, (test, message)
        assert checks[test].passed is False and checks[test].metadata["failing"].value == 1, test
    assert "Nothing was written: the table stays at version 0" in message, message
    assert versions(spark, f"{lake_root}/mart/orders") == [0]
    # Downstream did not run, and the failure was not retried despite the job's retry policy.
    assert versions(spark, f"{lake_root}/mart/order_totals") == totals_before
    assert [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"] == []
    assert result.asset_materializations_for_node("sql__mart__orders") == []
    # Remove the bad rows: the next run passes and publishes.
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
    # d1 holds a duplicate order_id; d2 does not: only d1 is blocked.
    write_source(spark, lake_root, "daily", [(1, "d1", 1.0), (1, "d1", 2.0), (1, "d2", 3.0)], DAILY_SCHEMA)
    blocked = run(defs, instance, [DAILY], partition_key="d1")
    assert not blocked.success
    assert {k: e.passed for k, e in evaluations(blocked).items()} == {
        ("unique_order_id", "d1"): False,
        ("custom_day_matches", "d1"): True,
    }
    assert recorded(instance, blocked.run_id) == {
        ("unique_order_id", "d1"): FAILED,
        ("custom_day_matches", "d1"): SUCCEEDED,
    }
    result = run(defs, instance, [DAILY], partition_key="d2")
    assert result.success
    checks = check_results(result)
    assert checks["unique_order_id"].metadata["scope"].value == "staged slice d2"
    assert checks["custom_day_matches"].passed
    assert recorded(instance, result.run_id) == {(n, "d2"): SUCCEEDED for n in DAILY_CHECKS}
    # The UI's per-partition view: d1 failed (nothing written), d2 passed on what was written.
    assert partition_status(instance, "unique_order_id") == {"d1": (FAILED, True), "d2": (SUCCEEDED, True)}
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


def test_a_batch_records_each_check_once_per_partition(project, spark):
    defs, instance, lake_root = project
    write_source(spark, lake_root, "daily", [(1, "d1", 1.0), (2, "d1", 2.0), (3, "d2", 3.0)], DAILY_SCHEMA)
    result = run(defs, instance, [DAILY], tags=BATCH)
    assert result.success
    found = evaluations(result)
    assert set(found) == {(n, p) for n in DAILY_CHECKS for p in ("d1", "d2")}
    # Each partition tested on its own rows; `WHERE day <> {partition}` bound to that partition.
    assert {k: (e.passed, e.metadata["rows_tested"].value, e.metadata["scope"].value) for k, e in found.items()} == {
        ("unique_order_id", "d1"): (True, 2, "staged slice d1"),
        ("unique_order_id", "d2"): (True, 1, "staged slice d2"),
        ("custom_day_matches", "d1"): (True, 2, "staged slice d1"),
        ("custom_day_matches", "d2"): (True, 1, "staged slice d2"),
    }
    assert all(e.blocking and e.severity == dg.AssetCheckSeverity.ERROR for e in found.values())
    assert recorded(instance, result.run_id) == {(n, p): SUCCEEDED for n in DAILY_CHECKS for p in ("d1", "d2")}
    # Each evaluation targets its partition's materialization from this very run.
    for (_, partition), evaluation in found.items():
        (mat,) = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=DAILY, asset_partitions=[partition]), limit=5
        ).records
        assert evaluation.target_materialization_data.storage_id == mat.storage_id
        assert mat.run_id == result.run_id
    for check in DAILY_CHECKS:
        assert partition_status(instance, check) == {"d1": (SUCCEEDED, True), "d2": (SUCCEEDED, True)}
    assert versions(spark, f"{lake_root}/mart/daily_orders") == [0]  # one commit for the batch


def test_one_failing_partition_of_a_batch_fails_its_evaluation_and_blocks_the_batch(project, spark):
    defs, instance, lake_root = project
    write_source(spark, lake_root, "daily", [(3, "d2", 3.0)], DAILY_SCHEMA)
    # A batch of one partition (a backfill's last batch can be): a range run, no single key.
    first = run(defs, instance, [DAILY], tags={**BATCH, "dagster/asset_partition_range_start": "d2"})
    assert first.success
    assert {k: e.passed for k, e in evaluations(first).items()} == {(n, "d2"): True for n in DAILY_CHECKS}
    # d1 now holds a duplicate; d2 changed but is clean.
    changed = [(1, "d1", 1.0), (1, "d1", 2.0), (3, "d2", 30.0), (4, "d2", 4.0)]
    write_source(spark, lake_root, "daily", changed, DAILY_SCHEMA)
    result = run(defs, instance, [DAILY], tags=BATCH)
    assert not result.success
    found = evaluations(result)
    assert {k: (e.passed, e.metadata["failing"].value, e.metadata["rows_tested"].value) for k, e in found.items()} == {
        ("unique_order_id", "d1"): (False, 1, 2),
        ("unique_order_id", "d2"): (True, 0, 2),
        ("custom_day_matches", "d1"): (True, 0, 2),
        ("custom_day_matches", "d2"): (True, 0, 2),
    }
    assert found[("unique_order_id", "d1")].metadata["samples"].value == ["1 x2"]
    assert "samples" not in found[("unique_order_id", "d2")].metadata
    assert recorded(instance, result.run_id) == {
        ("unique_order_id", "d1"): FAILED,
        ("unique_order_id", "d2"): SUCCEEDED,
        ("custom_day_matches", "d1"): SUCCEEDED,
        ("custom_day_matches", "d2"): SUCCEEDED,
    }
    assert failure_message(result) == (
        "data test unique_order_id (order_id unique) failed on delta://mart/daily_orders (staged slice d1): "
        "1 failing value, e.g. 1 x2. Nothing was written: the table stays at version 0. "
        "Fix the data or the SQL and run again."
    )
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    metadata = failure.step_failure_data.user_failure_data.metadata
    assert metadata["failed_tests"].value == ["unique_order_id"] and metadata["failed_partitions"].value == ["d1"]
    assert [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"] == []
    # The whole batch is blocked: d2 keeps what the first run wrote.
    assert versions(spark, f"{lake_root}/mart/daily_orders") == [0]
    table = read(spark, f"{lake_root}/mart/daily_orders")
    assert [tuple(r) for r in table.select("order_id", "amount", "_partition").collect()] == [(3, 3.0, "d2")]
    # d2's evaluation judged (and targets) the materialization that stays current.
    assert partition_status(instance, "unique_order_id") == {"d1": (FAILED, True), "d2": (SUCCEEDED, True)}


def test_a_check_only_run_records_the_partitions_it_checks(project, spark):
    defs, instance, lake_root = project
    write_source(spark, lake_root, "daily", [(1, "d1", 1.0), (2, "d1", 2.0), (3, "d2", 3.0)], DAILY_SCHEMA)
    assert run(defs, instance, [DAILY], tags=BATCH).success
    # Someone edits the table outside assetlake: d1 now holds a duplicate.
    spark.sql(f"UPDATE delta.`{lake_root}/mart/daily_orders` SET order_id = 1 WHERE order_id = 2")
    # The UI's "Execute" on the checks for one partition (run_checks launches it the same way).
    d1 = run_checks(defs, DAILY, instance=instance, partition="d1")
    assert {(e.check_name, e.partition, e.passed) for e in d1} == {
        ("unique_order_id", "d1", False),
        ("custom_day_matches", "d1", True),
    }
    assert {e.metadata["scope"].value for e in d1} == {"committed slice d1"}
    assert partition_status(instance, "unique_order_id") == {"d1": (FAILED, True), "d2": (SUCCEEDED, True)}
    # ... and for both partitions at once: one evaluation per check per partition.
    both = defs.resolve_job_def("check_daily").execute_in_process(instance=instance, tags=BATCH, raise_on_error=False)
    assert {k: e.passed for k, e in evaluations(both).items()} == {
        ("unique_order_id", "d1"): False,
        ("unique_order_id", "d2"): True,
        ("custom_day_matches", "d1"): True,
        ("custom_day_matches", "d2"): True,
    }
    assert recorded(instance, both.run_id) == {
        ("unique_order_id", "d1"): FAILED,
        ("unique_order_id", "d2"): SUCCEEDED,
        ("custom_day_matches", "d1"): SUCCEEDED,
        ("custom_day_matches", "d2"): SUCCEEDED,
    }
    # Dagster fails a run whose blocking check failed; it is no crash to retry.
    assert not both.success
    assert instance.get_run_by_id(both.run_id).tags[RETRY_ON_STEP_FAILURE_TAG] == "false"
    # Without a partition there is nothing to record a partitioned result for.
    unscoped = defs.resolve_job_def("check_daily").execute_in_process(instance=instance, raise_on_error=False)
    assert failure_message(unscoped) == (
        "delta://mart/daily_orders is partitioned: run it, or its checks, for one or more partitions."
    )
    assert versions(spark, f"{lake_root}/mart/daily_orders") == [1, 0]  # the UPDATE; the checks wrote nothing


@pytest.mark.parametrize(
    "key, partition, message",
    [
        pytest.param(
            DAILY, None, "mart/daily_orders is partitioned: name the partition to check with --partition (d1, d2).",
            id="missing",
        ),
        pytest.param(DAILY, "d22", "'d22' is not a partition of mart/daily_orders. Did you mean 'd2'?", id="unknown"),
        pytest.param(ORDERS, "d1", "mart/orders is not partitioned; check it without --partition.", id="unpartitioned"),
    ],
)
def test_run_checks_needs_a_partition_exactly_for_partitioned_assets(project, key, partition, message):
    defs, instance, _ = project
    with pytest.raises(ConfigError) as err:
        run_checks(defs, key, instance=instance, partition=partition)
    assert str(err.value) == message


def test_assetlake_check_runs_the_tests_on_the_committed_table(spark, tmp_path, monkeypatch, capsys):
    lake_root = str(tmp_path / "lake")
    sources(spark, lake_root)
    defs = build_definitions(PROJECT, lake_root=lake_root)
    assert run(defs, dg.DagsterInstance.ephemeral(), [ORDERS]).success
    spark.sql(f"UPDATE delta.`{lake_root}/mart/orders` SET status = 'lost' WHERE order_id = 3")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    code, out, err = run_cli(capsys, "check", "mart/orders", "--project-dir", PROJECT, "--lake-root", lake_root)
    assert code == 1, err
    lines = out.splitlines()
    assert "FAIL accepted_values_status: 1 failing, e.g. 'lost'" in lines
    assert "PASS unique_order_id" in lines and "WARN not_null_note: 1 failing, e.g. {order_id: 2, customer_id: 11, status: 'pending', amount: 7.5}" in lines
    assert versions(spark, f"{lake_root}/mart/orders") == [1, 0]  # the UPDATE; the check wrote nothing

    # A partitioned asset: the checks of one partition, recorded for that partition.
    write_source(spark, lake_root, "daily", [(1, "d1", 1.0), (3, "d2", 3.0)], DAILY_SCHEMA)
    assert run(defs, dg.DagsterInstance.ephemeral(), [DAILY], tags=BATCH).success
    check = ["check", "mart/daily_orders", "--project-dir", PROJECT, "--lake-root", lake_root]
    code, out, err = run_cli(capsys, *check, "--partition", "d1")
    assert code == 0, err
    assert out.splitlines() == ["PASS unique_order_id", "PASS custom_day_matches"]
    with dg.DagsterInstance.from_config(str(home)) as recorded_in_home:
        history = recorded_in_home.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(DAILY, "unique_order_id"), limit=10
        )
    assert [(r.partition, r.status) for r in history] == [("d1", SUCCEEDED)]
    code, out, err = run_cli(capsys, *check)
    assert code == 1
    missing = "mart/daily_orders is partitioned: name the partition to check with --partition (d1, d2)."
    assert missing in err.splitlines()
