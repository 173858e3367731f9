"""Quarantine (``-- data_test … on_fail=quarantine``) through real Dagster runs: the failing rows
go to ``<table>__quarantine``, the rest are published, for a merge, an append, a history and a
partition; a blocking test still blocks, and then nothing is written aside either."""

import dagster as dg
import pytest
from delta.tables import DeltaTable

from assetlake_dagster.defs.build import build_definitions

SOURCE_SQL = """\
-- materialize delta://raw/customers

SELECT * FROM VALUES
  (1, 'a@x', 'gold', DATE'2024-01-01'), (2, NULL, 'gold', DATE'2024-01-01'),
  (3, 'c@x', 'tin', DATE'2024-01-01'), (4, NULL, 'lead', DATE'2024-01-02'), (5, 'e@x', 'silver', DATE'2024-01-02')
  AS t(id, email, tier, day)
"""
TESTS = """\
-- data_test not_null email on_fail=quarantine
-- data_test accepted_values tier = gold,silver on_fail=quarantine
-- data_test unique id
"""
TARGETS = {
    "merged": "-- materialize delta://mart/merged key=id\n",
    "appended": "-- materialize delta://mart/appended append\n",
    "history": "-- materialize delta://mart/history key=id history\n",
}
PARTITIONED_SQL = """\
-- materialize delta://mart/daily
-- partitioned daily start=2024-01-01 end=2024-01-03
-- data_test not_null email on_fail=quarantine

SELECT id, email, tier FROM raw.customers WHERE day = {partition}
"""


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "customers.sql").write_text(SOURCE_SQL)
    for name, line in TARGETS.items():
        (folder / f"{name}.sql").write_text(line + TESTS + "\nSELECT id, email, tier FROM raw.customers\n")
    (folder / "daily.sql").write_text(PARTITIONED_SQL)
    return folder


def ids(spark, name, where=""):
    return sorted(r.id for r in spark.sql(f"SELECT id FROM {name} {where}").collect())


def test_failing_rows_go_aside_and_the_rest_are_published(spark, lake_root, project):
    defs = build_definitions(str(project), lake_root=lake_root)
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_implicit_global_asset_job_def()
    keys = [dg.AssetKey(["raw", "customers"])] + [dg.AssetKey(["mart", n]) for n in TARGETS]
    result = job.execute_in_process(instance=instance, asset_selection=keys)
    assert result.success
    for name in TARGETS:
        table = f"mart.{name}" if name != "history" else "mart.history_current"
        assert ids(spark, table) == [1, 5], name  # 2 and 4 lack an email, 3 and 4 have another tier
        aside = spark.sql(
            f"SELECT id, quarantine_tests, quarantine_run_id FROM mart.{name}__quarantine ORDER BY id"
        ).collect()
        assert [(r.id, sorted(r.quarantine_tests)) for r in aside] == [
            (2, ["not_null_email"]),
            (3, ["accepted_values_tier"]),
            (4, ["accepted_values_tier", "not_null_email"]),
        ], name
        assert {r.quarantine_run_id for r in aside} == {result.run_id}
    evaluations = {
        (e.asset_key.path[-1], e.check_name): e for e in result.get_asset_check_evaluations()
    }
    not_null = evaluations["merged", "not_null_email"]
    assert not not_null.passed and not_null.severity is dg.AssetCheckSeverity.WARN
    assert not_null.metadata["quarantined"].value == 2 and not_null.metadata["passed"].value == 3
    assert evaluations["merged", "unique_id"].passed

    # Nothing changed: the runs are skipped (run decisions), and nothing is set aside twice.
    again = job.execute_in_process(instance=instance, asset_selection=keys)
    assert again.success
    assert ids(spark, "mart.merged") == [1, 5]
    assert spark.sql("SELECT count(*) AS n FROM mart.merged__quarantine").first().n == 3

    # A partition: its failing rows go aside with their partition key.
    daily = job.execute_in_process(instance=instance, asset_selection=[dg.AssetKey(["mart", "daily"])], partition_key="2024-01-02")
    assert daily.success
    assert ids(spark, "mart.daily") == [5]
    row = spark.sql("SELECT id, quarantine_tests, quarantine_partition FROM mart.daily__quarantine").collect()
    assert [(r.id, list(r.quarantine_tests), r.quarantine_partition) for r in row] == [(4, ["not_null_email"], "2024-01-02")]


def test_a_blocking_failure_writes_nothing_aside_either(spark, lake_root, project):
    (project / "customers.sql").write_text(SOURCE_SQL.replace("(5, 'e@x'", "(1, 'e@x'"))  # id 1 twice, both valid
    defs = build_definitions(str(project), lake_root=lake_root)
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        asset_selection=[dg.AssetKey(["raw", "customers"]), dg.AssetKey(["mart", "merged"])],
        raise_on_error=False,
    )
    assert not result.success
    assert not DeltaTable.isDeltaTable(spark, f"{lake_root}/mart/merged")
    assert not DeltaTable.isDeltaTable(spark, f"{lake_root}/mart/merged__quarantine")
