"""Tables published together (``-- publish_with <group>``) through real Dagster runs: a member
reads the members before it as staged; a failed audit of the third leaves all three at their
prior versions; a failed commit of the third restores the first two; each publish is logged
with its versions, which a reader pins; an unchanged group is skipped whole."""

import dagster as dg
import pytest
from delta.tables import DeltaTable

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.lake.publish_log import find_publish, published_tables
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.run.publish_group import PUBLISHED_TAG_PREFIX
from assetlake_dagster_tests.helpers import run_cli

SOURCE = "-- materialize delta://raw/orders_src\n\nSELECT * FROM VALUES {rows} AS t(id, customer, amount)\n"
ORDERS = "-- materialize delta://mart/orders key=id\n-- publish_with sales\n\nSELECT id, customer, amount FROM raw.orders_src\n"
TOTALS = (
    "-- materialize delta://mart/totals\n-- publish_with sales\n\n"
    "SELECT customer, sum(amount) AS total, count(*) AS orders FROM mart.orders GROUP BY customer\n"
)
# One row per order of a customer: its key repeats once a customer has two orders.
TOP = (
    "-- materialize delta://mart/top key=customer\n-- publish_with sales\n{tests}\n"
    "SELECT o.customer, t.total, o.amount FROM mart.orders o JOIN mart.totals t ON o.customer <=> t.customer\n"
)
TABLES = ("orders", "totals", "top")
GROUP_KEYS = [dg.AssetKey(["mart", t]) for t in TABLES]


def write_project(folder, rows, tests="-- data_test not_null customer\n"):
    folder.mkdir(exist_ok=True)
    (folder / "src.sql").write_text(SOURCE.format(rows=rows))
    (folder / "orders.sql").write_text(ORDERS)
    (folder / "totals.sql").write_text(TOTALS)
    (folder / "top.sql").write_text(TOP.format(tests=tests))


def run(folder, lake_root, instance, keys=None):
    defs = build_definitions(str(folder), lake_root=lake_root)
    job = defs.resolve_implicit_global_asset_job_def()
    keys = keys or [dg.AssetKey(["raw", "orders_src"]), *GROUP_KEYS]
    return job.execute_in_process(instance=instance, asset_selection=keys, raise_on_error=False)


def versions(spark, lake_root):
    return {t: DeltaTable.forPath(spark, f"{lake_root}/mart/{t}").history(1).collect()[0].version for t in TABLES}


def rows(spark, lake_root, table, version=None):
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(f"{lake_root}/mart/{table}").collect())


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        yield instance


def test_a_group_stages_audits_and_commits_together(spark, lake_root, tmp_path, instance, capsys):
    folder = tmp_path / "project"
    write_project(folder, "(1, 'a', 10), (2, 'b', 5)")
    defs = build_definitions(str(folder), lake_root=lake_root)
    group = defs.resolve_assets_def(GROUP_KEYS[0])
    assert set(group.keys) == set(GROUP_KEYS) and not group.can_subset  # one step, never subset

    first = run(folder, lake_root, instance)
    assert first.success
    # The members after the first read it as its write left it, in the same run.
    assert rows(spark, lake_root, "totals") == [("a", 10, 1), ("b", 5, 1)]
    assert rows(spark, lake_root, "top") == [("a", 10, 10), ("b", 5, 5)]
    assert versions(spark, lake_root) == {"orders": 0, "totals": 0, "top": 0}
    staged_views = [v.viewName for v in spark.sql("SHOW VIEWS IN global_temp").collect() if "staged" in v.viewName]
    assert staged_views == []  # dropped with the run
    publish = find_publish(spark, Lake(lake_root), "sales")
    assert (publish.number, publish.run_id) == (1, first.run_id)
    assert publish.versions == {"delta://mart/orders": 0, "delta://mart/totals": 0, "delta://mart/top": 0}
    tag = instance.get_run_by_id(first.run_id).tags[PUBLISHED_TAG_PREFIX + "sales"]
    assert tag == "publish 1: mart.orders@0, mart.totals@0, mart.top@0"

    # A NULL customer reaches the third member, whose blocking test fails: nothing commits.
    write_project(folder, "(1, 'a', 10), (2, 'b', 5), (3, NULL, 7)")
    failed = run(folder, lake_root, instance)
    assert not failed.success
    failure = failed.failure_data_for_node("publish__sales").error.message
    assert "publish group 'sales': delta://mart/top failed a blocking data test, so no table of the group was committed" in failure
    assert versions(spark, lake_root) == {"orders": 0, "totals": 0, "top": 0}
    assert rows(spark, lake_root, "orders") == [(1, "a", 10), (2, "b", 5)]
    checks = {(e.asset_key.path[-1], e.check_name): e.passed for e in failed.get_asset_check_evaluations()}
    assert checks == {("top", "not_null_customer"): False}

    # Without the test, a second order of 'a' repeats top's key: its commit (the third) fails,
    # after orders and totals committed; they are restored to the versions before the run.
    write_project(folder, "(1, 'a', 10), (2, 'b', 5), (4, 'a', 1)", tests="")
    broken = run(folder, lake_root, instance)
    assert not broken.success
    message = broken.failure_data_for_node("publish__sales").error.message
    assert "publish group 'sales': the commit of delta://mart/top failed (KeyViolationError" in message
    assert "delta://mart/totals was restored to version 0 (as version 2)." in message
    assert "delta://mart/orders was restored to version 0 (as version 2)." in message
    assert rows(spark, lake_root, "orders") == [(1, "a", 10), (2, "b", 5)]
    assert rows(spark, lake_root, "totals") == [("a", 10, 1), ("b", 5, 1)]
    assert versions(spark, lake_root)["top"] == 0
    assert find_publish(spark, Lake(lake_root), "sales").number == 1  # a failed publish is not logged

    # Fixed: the group publishes again, and a reader pins either publish's set.
    write_project(folder, "(1, 'a', 10), (2, 'b', 5), (4, 'c', 1)")
    assert run(folder, lake_root, instance).success
    second = find_publish(spark, Lake(lake_root), "sales")
    assert second.number == 2 and second.versions["delta://mart/orders"] == 3
    pinned = published_tables(spark, Lake(lake_root), "sales", 1)
    assert sorted(tuple(r) for r in pinned["delta://mart/totals"].collect()) == [("a", 10, 1), ("b", 5, 1)]
    latest = published_tables(spark, Lake(lake_root), "sales")
    assert sorted(tuple(r) for r in latest["delta://mart/top"].collect()) == [("a", 10, 10), ("b", 5, 5), ("c", 1, 1)]

    code, out, _ = run_cli(capsys, "published", "sales", "--publish", "1", "--lake-root", lake_root)
    assert code == 0
    assert out.splitlines()[0].startswith(f"publish group 'sales': publish 1 of 2, run {first.run_id}, ")
    assert out.splitlines()[1:] == [
        "  delta://mart/orders  version 0  SELECT * FROM mart.orders VERSION AS OF 0",
        "  delta://mart/totals  version 0  SELECT * FROM mart.totals VERSION AS OF 0",
        "  delta://mart/top  version 0  SELECT * FROM mart.top VERSION AS OF 0",
    ]
    code, _, err = run_cli(capsys, "published", "sales", "--publish", "3", "--lake-root", lake_root)
    assert code == 1 and "publish group 'sales' has publishes 1..2; there is no publish 3." in err

    # Nothing changed: every member is skipped, nothing is staged or committed or logged.
    before = versions(spark, lake_root)
    again = run(folder, lake_root, instance, keys=GROUP_KEYS)
    assert again.success
    assert versions(spark, lake_root) == before
    assert find_publish(spark, Lake(lake_root), "sales").number == 2
    assert {m.metadata["delta/committed"].value for m in again.asset_materializations_for_node("publish__sales")} == {False}


def test_publish_log_names_an_unknown_publish(spark, lake_root):
    from assetlake_dagster.errors import ConfigError

    with pytest.raises(ConfigError, match="publish group 'nope' has no publish in the lake"):
        find_publish(spark, Lake(lake_root), "nope")


DAILY = "-- partitioned daily start=2024-01-01 end=2024-01-04\n-- publish_with days\n"


def test_a_partitioned_group_reads_the_staged_slice_with_the_committed_others(spark, lake_root, tmp_path, instance):
    folder = tmp_path / "daily"
    folder.mkdir()
    (folder / "src.sql").write_text(
        "-- materialize delta://raw/events\n\nSELECT * FROM VALUES (1, DATE'2024-01-01'), (2, DATE'2024-01-02'), "
        "(3, DATE'2024-01-02') AS t(id, day)\n"
    )
    (folder / "a.sql").write_text("-- materialize delta://mart/a\n" + DAILY + "\nSELECT id, day FROM raw.events WHERE day = {partition}\n")
    # Each slice of b counts all of a: the slices a committed before and the one staged now.
    (folder / "b.sql").write_text("-- materialize delta://mart/b\n" + DAILY + "\nSELECT count(*) AS rows_in_a FROM mart.a\n")
    defs = build_definitions(str(folder), lake_root=lake_root)
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(instance=instance, asset_selection=[dg.AssetKey(["raw", "events"])]).success
    group = [dg.AssetKey(["mart", "a"]), dg.AssetKey(["mart", "b"])]
    for day in ("2024-01-01", "2024-01-02"):
        assert job.execute_in_process(instance=instance, asset_selection=group, partition_key=day).success
    counts = spark.read.format("delta").load(f"{lake_root}/mart/b").orderBy("_partition").collect()
    assert [(r["_partition"], r["rows_in_a"]) for r in counts] == [("2024-01-01", 1), ("2024-01-02", 3)]
    assert find_publish(spark, Lake(lake_root), "days").number == 2
