"""Views (``-- materialize view``) through real Dagster runs: a virtual asset whose run makes a
catalog view and writes nothing, re-made only when its file changes, read by a downstream
file and by SQL unit tests."""

import dagster as dg

from assetlake_dagster.cli.catalog_sync import sync_catalog
from assetlake_dagster.cli.sql_test_run import assert_sql_tests_pass
from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.project.load import load_project
from assetlake_dagster.spec import TableUri

ORDERS_SQL = """\
-- materialize delta://raw/orders

SELECT * FROM VALUES (1, 'open', 10), (2, 'closed', 5), (3, 'open', 7) AS t(id, status, amount)
"""
VIEW_SQL = """\
-- materialize view delta://mart/open_orders
-- description Orders still open.
-- column amount "Order amount, EUR."

SELECT id, amount FROM raw.orders WHERE status = '{status}'
"""
TOTAL_SQL = """\
-- materialize delta://mart/open_total

SELECT sum(amount) AS total, count(*) AS orders FROM mart.open_orders
"""
VIEW = dg.AssetKey(["mart", "open_orders"])
TOTAL = dg.AssetKey(["mart", "open_total"])


def project(tmp_path, status="open"):
    (tmp_path / "orders.sql").write_text(ORDERS_SQL)
    (tmp_path / "open_orders.sql").write_text(VIEW_SQL.format(status=status))
    (tmp_path / "open_total.sql").write_text(TOTAL_SQL)
    return str(tmp_path)


def run(defs, instance, keys):
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, asset_selection=keys)
    assert result.success
    return {
        e.asset_key: e.step_materialization_data.materialization.metadata for e in result.get_asset_materialization_events()
    }


def test_a_view_is_a_virtual_asset_made_in_the_catalog_and_read_downstream(spark, lake_root, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    defs = build_definitions(project(folder), lake_root=lake_root)
    specs = {s.key: s for s in defs.resolve_all_asset_specs()}
    assert specs[VIEW].is_virtual and not specs[TOTAL].is_virtual
    assert {d.asset_key for d in specs[TOTAL].deps} == {VIEW}
    assert specs[VIEW].metadata["assetlake/write"]["strategy"] == "view"
    instance = dg.DagsterInstance.ephemeral()

    first = run(defs, instance, [dg.AssetKey(["raw", "orders"]), VIEW, TOTAL])
    assert first[VIEW]["assetlake/view"].value == "created"
    schema = first[VIEW]["dagster/column_schema"].schema
    assert [(c.name, c.description) for c in schema.columns] == [("id", None), ("amount", "Order amount, EUR.")]
    lineage = first[VIEW]["dagster/column_lineage"].column_lineage
    assert [d.asset_key for d in lineage.deps_by_column["amount"]] == [dg.AssetKey(["raw", "orders"])]
    assert "delta/version" not in first[VIEW]  # no data written
    assert [tuple(r) for r in spark.table("mart.open_total").collect()] == [(17, 2)]
    assert spark.sql("SHOW TABLE EXTENDED IN mart LIKE 'open_orders'").first()["information"].count("Type: VIEW") == 1
    assert spark.sql("DESCRIBE TABLE EXTENDED mart.open_orders").where("col_name = 'Comment'").first()["data_type"] == (
        "Orders still open."
    )

    # An unchanged file does nothing to the view.
    assert run(defs, instance, [VIEW])[VIEW]["assetlake/view"].value == "unchanged"

    # The view is gone from the catalog (a new engine): the downstream's run makes it first.
    spark.sql("DROP VIEW mart.open_orders")
    run(defs, instance, [TOTAL])
    assert [tuple(r) for r in spark.table("mart.open_total").collect()] == [(17, 2)]

    # A changed file re-creates the view; the downstream reads the new one.
    changed = build_definitions(project(folder, status="closed"), lake_root=lake_root)
    again = run(changed, instance, [VIEW, TOTAL])
    assert again[VIEW]["assetlake/view"].value == "created"
    assert [tuple(r) for r in spark.table("mart.open_total").collect()] == [(5, 1)]

    # `assetlake catalog sync` makes the view beside the tables it registers, once.
    spark.sql("DROP VIEW mart.open_orders")
    views = [s for s in load_project(folder, load_python_files=False).assets if s.uri == TableUri("mart", "open_orders")]
    synced = [line.render() for line in sync_catalog(spark, Lake(lake_root), changed, views)]
    assert "view made          mart.open_orders" in synced and "already registered mart.open_total" in synced
    assert "view as it is      mart.open_orders" in [line.render() for line in sync_catalog(spark, Lake(lake_root), changed, views)]


def test_sql_unit_tests_read_a_view_and_test_one(spark, tmp_path):
    folder = project(tmp_path)
    (tmp_path / "open_orders.tests.yml").write_text(
        "tests:\n"
        "  - name: keeps_open_orders\n"
        "    given:\n"
        "      raw.orders: [{id: 1, status: open, amount: 3}, {id: 2, status: closed, amount: 4}]\n"
        "    expect: [{id: 1, amount: 3}]\n"
    )
    (tmp_path / "open_total.tests.yml").write_text(
        "tests:\n"
        "  - name: sums_the_view\n"
        "    given:\n"
        "      mart.open_orders: [{id: 1, amount: 3}, {id: 4, amount: 6}]\n"
        "    expect: [{total: 9, orders: 2}]\n"
    )
    results = assert_sql_tests_pass(folder, spark)
    assert sorted(r.case.name for r in results) == ["keeps_open_orders", "sums_the_view"]
