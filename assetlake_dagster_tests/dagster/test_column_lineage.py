"""Layer 5: each SQL asset's materialization carries its column lineage, inferred from its
SELECT against the upstream tables' real columns (``SELECT *`` expanded), as Dagster's
``dagster/column_lineage`` and as a table the open-source UI shows."""

import dagster as dg

from assetlake_dagster.defs.build import build_definitions

FILES = {
    "orders.sql": "-- materialize delta://s/orders\n\nSELECT 1 AS order_id, 10 AS customer_id, 2.5 AS amount, 0.5 AS tax\n",
    "customers.sql": "-- materialize delta://s/customers\n\nSELECT 10 AS customer_id, 'ann' AS name\n",
    "enriched.sql": (
        "-- materialize delta://s/enriched\n\n"
        "WITH o AS (SELECT * FROM s.orders)\n"
        "SELECT o.order_id, o.amount + o.tax AS order_total, c.name,\n"
        "       row_number() OVER (PARTITION BY o.customer_id ORDER BY o.order_id) AS nth, count(*) OVER () AS n\n"
        "FROM o JOIN s.customers c ON o.customer_id = c.customer_id\n"
    ),
}
ORDERS, CUSTOMERS, ENRICHED = (dg.AssetKey(["s", t]) for t in ("orders", "customers", "enriched"))


def _materialize_all(files, lake_root, tmp_path):
    """Build the project of ``files`` and materialize all of it: (definitions, instance)."""
    project = tmp_path / "project"
    project.mkdir()
    for name, text in files.items():
        (project / name).write_text(text)
    defs = build_definitions(str(project), lake_root=lake_root)
    instance = dg.DagsterInstance.ephemeral()
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance).success
    return defs, instance


def _deps(metadata):
    return {
        column: sorted((d.asset_key.to_user_string(), d.column_name) for d in found)
        for column, found in metadata["dagster/column_lineage"].value.deps_by_column.items()
    }


def test_a_materialization_records_the_lineage_of_each_column(spark, lake_root, tmp_path):
    _, instance = _materialize_all(FILES, lake_root, tmp_path)
    metadata = instance.get_latest_materialization_event(ENRICHED).asset_materialization.metadata
    assert _deps(metadata) == {
        "order_id": [("s/orders", "order_id")],
        "order_total": [("s/orders", "amount"), ("s/orders", "tax")],
        "name": [("s/customers", "name")],
        "nth": [("s/orders", "customer_id"), ("s/orders", "order_id")],
        "n": [],
    }
    table = metadata["assetlake/column_lineage"].value
    assert "| `order_total` | `s.orders.amount`, `s.orders.tax` |" in table
    assert "| `n` | (no column: a constant or `count(*)`) |" in table
    # A root asset's columns derive from no table.
    root = instance.get_latest_materialization_event(ORDERS).asset_materialization.metadata
    assert root["dagster/column_lineage"].value.deps_by_column == {c: [] for c in ("order_id", "customer_id", "amount", "tax")}


ANNOTATED = {
    **FILES,
    "enriched.sql": (
        "-- materialize delta://s/enriched key=order_id\n"
        "-- column nth <- delta://s/orders.order_id\n"
        '-- column ORDER_TOTAL "Amount plus tax, in EUR"\n'
        '-- column order_id "The order"\n'
        "-- column tier <- delta://s/customers.name\n\n"
        "WITH o AS (SELECT * FROM s.orders)\n"
        "SELECT o.order_id, o.amount + o.tax AS order_total, c.name,\n"
        "       row_number() OVER (PARTITION BY o.customer_id ORDER BY o.order_id) AS nth,\n"
        "       upper(c.name) AS tier\n"
        "FROM o JOIN s.customers c ON o.customer_id = c.customer_id WHERE o.amount > 0\n"
    ),
}


def test_column_lines_override_the_inferred_lineage_and_describe_the_columns(spark, lake_root, tmp_path):
    defs, instance = _materialize_all(ANNOTATED, lake_root, tmp_path)
    # The storage location is in the catalog (the definitions, not only the materializations).
    spec = defs.resolve_assets_def(ENRICHED).specs_by_key[ENRICHED]
    assert spec.metadata["dagster/uri"].value == f"{lake_root}/s/enriched"
    metadata = instance.get_latest_materialization_event(ENRICHED).asset_materialization.metadata
    assert _deps(metadata) == {
        "order_id": [("s/orders", "order_id")],
        "order_total": [("s/orders", "amount"), ("s/orders", "tax")],  # inferred, not annotated
        "name": [("s/customers", "name")],
        "nth": [("s/orders", "order_id")],  # the annotation wins over customer_id + order_id
        "tier": [("s/customers", "name")],
    }
    assert "| `nth` | `s.orders.order_id` (declared) |" in metadata["assetlake/column_lineage"].value
    # Columns only joined or filtered on are read too.
    assert metadata["assetlake/columns_read"].value == {
        "s.customers": ["customer_id", "name"],
        "s.orders": ["amount", "customer_id", "order_id", "tax"],
    }
    described = {c.name: c.description for c in metadata["dagster/column_schema"].value.columns}
    assert described == {
        "order_id": "The order",
        "order_total": "Amount plus tax, in EUR",
        "name": None,
        "nth": None,
        "tier": None,
    }
