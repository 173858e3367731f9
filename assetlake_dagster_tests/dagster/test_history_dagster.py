"""SCD2 history through real Dagster runs: a history SQL file and a reader of its view."""

import os

import dagster as dg
from delta.tables import DeltaTable

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.defs.io_manager import DeltaIOManager
from assetlake_dagster.defs.write_contract import managed_write
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster_tests.helpers import PROJECTS

PROJECT = os.path.join(PROJECTS, "history")
SELECTION = [dg.AssetKey(["dim", "customer"]), dg.AssetKey(["mart", "tier_counts"])]


def write_source(spark, lake_root, rows):
    df = spark.createDataFrame(rows, "id INT, name STRING, tier STRING, email STRING")
    df.write.format("delta").mode("overwrite").save(os.path.join(lake_root, "raw", "customers"))


def run(defs, instance):
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=SELECTION
    )
    assert result.success
    return {
        e.asset_key.to_user_string(): e.step_materialization_data.materialization.metadata
        for e in result.get_asset_materialization_events()
    }


def delta_history(spark, path):
    return [(r.version, r.operation) for r in DeltaTable.forPath(spark, path).history().collect()]


def current(spark, path):
    rows = spark.sql(f"SELECT id, name, tier FROM delta.`{path}` WHERE is_current").collect()
    return sorted(tuple(r) for r in rows)


def tier_counts(spark, lake_root):
    rows = spark.read.format("delta").load(os.path.join(lake_root, "mart", "tier_counts")).collect()
    return sorted(tuple(r) for r in rows)


def test_history_definitions_depend_on_the_table_not_the_view(spark, lake_root):
    defs = build_definitions(PROJECT, lake_root=lake_root)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {"raw/customers", "dim/customer", "mart/tier_counts"}
    counts = next(iter(defs.resolve_assets_def(dg.AssetKey(["mart", "tier_counts"])).specs))
    assert {d.asset_key for d in counts.deps} == {dg.AssetKey(["dim", "customer"])}
    dim = next(iter(defs.resolve_assets_def(dg.AssetKey(["dim", "customer"])).specs))
    assert dim.metadata["assetlake/write"] == {
        "table": "delta://dim/customer",
        "strategy": "history",
        "key": ["id"],
        "track": ["name", "tier"],
        "deletes": "close",
    }


def test_history_sql_file_through_dagster(spark, lake_root):
    defs = build_definitions(PROJECT, lake_root=lake_root)
    instance = dg.DagsterInstance.ephemeral()
    dim = os.path.join(lake_root, "dim", "customer")

    # run 1: initial load
    write_source(spark, lake_root, [(1, "ann", "gold", "a@x"), (2, "bob", "silver", "b@x")])
    first = run(defs, instance)
    assert first["dim/customer"]["delta/version"].value == 0
    assert first["dim/customer"]["assetlake/strategy"].value == "history"
    assert tier_counts(spark, lake_root) == [("gold", 1), ("silver", 1)]

    # run 2: ann changes tier, bob leaves (closed), cy arrives; an untracked email change
    write_source(spark, lake_root, [(1, "ann", "silver", "a@y"), (3, "cy", "gold", "c@x")])
    second = run(defs, instance)
    # (the file's description, the table's comment, is in the first run's one commit)
    assert second["dim/customer"]["delta/version"].value == 1
    assert delta_history(spark, dim) == [(1, "MERGE"), (0, "CREATE TABLE AS SELECT")]
    assert current(spark, dim) == [(1, "ann", "silver"), (3, "cy", "gold")]
    assert spark.read.format("delta").load(dim).count() == 4
    # the downstream file read dim.customer_current in the same run
    assert tier_counts(spark, lake_root) == [("gold", 1), ("silver", 1)]

    # run 3: unchanged snapshot (only an untracked column moves): no new version
    write_source(spark, lake_root, [(1, "ann", "silver", "a@z"), (3, "cy", "gold", "c@x")])
    third = run(defs, instance)
    assert third["dim/customer"]["delta/version"].value == 1
    assert delta_history(spark, dim) == [(1, "MERGE"), (0, "CREATE TABLE AS SELECT")]
    assert tier_counts(spark, lake_root) == [("gold", 1), ("silver", 1)]


def test_python_asset_history(spark, lake_root):
    snapshots = iter([[(1, "a"), (2, "b")], [(1, "c"), (2, "b")], [(1, "c"), (2, "b")]])

    @dg.asset(key=["py", "hist"], metadata=managed_write("history", key=["id"]))
    def hist(spark: SparkDeltaResource):
        return spark.get_session().createDataFrame(next(snapshots), "id INT, v STRING")

    resource = SparkDeltaResource(lake_root=lake_root)
    resources = {"spark": resource, "io_manager": DeltaIOManager(spark=resource)}
    instance = dg.DagsterInstance.ephemeral()
    for _ in range(3):
        assert dg.materialize([hist], resources=resources, instance=instance).success
    path = os.path.join(lake_root, "py", "hist")
    assert delta_history(spark, path) == [(1, "MERGE"), (0, "WRITE")]
    rows = spark.sql(f"SELECT id, v, is_current FROM delta.`{path}`").collect()
    assert sorted(tuple(r) for r in rows) == [(1, "a", False), (1, "c", True), (2, "b", True)]
    assert sorted(tuple(r) for r in spark.sql("SELECT id, v FROM py.hist_current").collect()) == [(1, "c"), (2, "b")]


def test_python_asset_history_takes_a_late_version(spark, lake_root):
    """``late="insert"`` reaches the write through the asset's contract: a version older than
    the key's current one lands in the past, and the current one stays."""
    import datetime as dt

    day = lambda d: dt.datetime(2024, 1, d)  # noqa: E731
    snapshots = iter([[(1, "now", day(2))], [(1, "before", day(1))]])

    @dg.asset(key=["py", "late"], metadata=managed_write("history", key=["id"], valid_from="at", late="insert"))
    def late(spark: SparkDeltaResource):
        return spark.get_session().createDataFrame(next(snapshots), "id INT, v STRING, at TIMESTAMP")

    resource = SparkDeltaResource(lake_root=lake_root)
    resources = {"spark": resource, "io_manager": DeltaIOManager(spark=resource)}
    instance = dg.DagsterInstance.ephemeral()
    for _ in range(2):
        assert dg.materialize([late], resources=resources, instance=instance).success
    path = os.path.join(lake_root, "py", "late")
    assert delta_history(spark, path) == [(1, "MERGE"), (0, "WRITE")]
    rows = spark.sql(f"SELECT id, v, valid_from, valid_to, is_current FROM delta.`{path}`").collect()
    assert sorted(tuple(r) for r in rows) == [(1, "before", day(1), day(2), False), (1, "now", day(2), None, True)]
