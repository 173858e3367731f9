"""The demo's SCD2 dimension and its as-of fact table, across a change, through Dagster.

Runs the bundled demo's own ``dim_customer.sql`` and ``fct_orders.sql`` (not copies) on a
tmp lake. Their inputs (``raw.customers``, ``staging.orders``) are written by the test,
so the customer data can change between runs and orders can be placed on either side of
the second run's ``valid_from`` (the wall clock of that run).
"""

import datetime as dt
import os

import dagster as dg

from assetlake_dagster.build import build_definitions
from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster.writes.history import to_micros

DIM = "analytics/dim_customer"
FCT = "analytics/fct_orders"
HOUR = 3_600_000_000  # microseconds
JAN_2024 = to_micros(dt.datetime(2024, 1, 15))  # long before the dimension's first run


def write_customers(spark, lake_root, rows):
    """``raw.customers`` as the demo's pandas source would write it (a full snapshot)."""
    df = spark.createDataFrame(rows, "customer_id BIGINT, name STRING, tier STRING, country STRING, email STRING")
    df.write.format("delta").mode("overwrite").save(os.path.join(lake_root, "raw", "customers"))


def write_orders(spark, lake_root, orders):
    """``staging.orders`` with the demo's columns; ``orders`` are ``(order_id, customer_id, micros)``."""
    df = spark.createDataFrame(orders, "order_id BIGINT, customer_id BIGINT, at BIGINT").selectExpr(
        "order_id",
        "customer_id",
        "CAST(10 AS DECIMAL(10, 2)) AS amount",
        "'paid' AS status",
        "timestamp_micros(at) AS ordered_at",  # micros: no time zone involved
        "CAST(timestamp_micros(at) AS DATE) AS order_date",
    )
    df.write.format("delta").mode("overwrite").save(os.path.join(lake_root, "staging", "orders"))


def materialize(defs, instance, table):
    """Run one demo asset alone; its inputs are already in the lake."""
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[dg.AssetKey(table.split("/"))]
    )
    assert result.success


def dimension(spark, lake_root):
    query = (
        "SELECT customer_id, tier, country, unix_micros(valid_from), unix_micros(valid_to), is_current "
        f"FROM delta.`{os.path.join(lake_root, *DIM.split('/'))}`"
    )
    return sorted(tuple(r) for r in spark.sql(query).collect())


def test_fact_rows_get_the_dimension_version_valid_at_order_time(spark, lake_root):
    defs = build_definitions(DEMO_PROJECT_DIR, lake_root=lake_root)
    instance = dg.DagsterInstance.ephemeral()

    # run 1: three customers
    write_customers(
        spark,
        lake_root,
        [(1, "Ann", "bronze", "DE", "a@x"), (2, "Bob", "silver", "FR", "b@x"), (3, "Cy", "gold", "US", None)],
    )
    materialize(defs, instance, DIM)
    ((v1,),) = {(r[3],) for r in dimension(spark, lake_root)}

    # run 2: Ann's tier changes, Bob moves (both tracked), Cy leaves (deletes=close)
    write_customers(spark, lake_root, [(1, "Ann", "gold", "DE", "a@x"), (2, "Bob", "silver", "NL", "b@y")])
    materialize(defs, instance, DIM)
    v2 = max(r[3] for r in dimension(spark, lake_root))
    assert v2 > v1
    assert dimension(spark, lake_root) == [
        (1, "bronze", "DE", v1, v2, False),
        (1, "gold", "DE", v2, None, True),
        (2, "silver", "FR", v1, v2, False),
        (2, "silver", "NL", v2, None, True),
        (3, "gold", "US", v1, v2, False),
    ]

    # Orders on both sides of run 2's valid_from; the 2024 ones predate the dimension.
    write_orders(
        spark,
        lake_root,
        [
            (101, 1, JAN_2024),
            (102, 1, v2 - 1),  # the last microsecond of the old version (valid_to is exclusive)
            (103, 1, v2),  # the first microsecond of the new one (valid_from is inclusive)
            (104, 1, v2 + 24 * HOUR),
            (201, 2, v2 - HOUR),  # may even predate run 1: the first version is open since 1900
            (202, 2, v2 + HOUR),
            (301, 3, JAN_2024),
            (302, 3, v2 + HOUR),  # after Cy's version was closed: no version is valid
        ],
    )
    materialize(defs, instance, FCT)

    facts = spark.read.format("delta").load(os.path.join(lake_root, *FCT.split("/")))
    assert facts.columns == [
        "order_id",
        "customer_id",
        "ordered_at",
        "order_date",
        "amount",
        "status",
        "tier_at_order",
        "country_at_order",
    ]
    rows = facts.selectExpr("order_id", "unix_micros(ordered_at)", "tier_at_order", "country_at_order").collect()
    assert sorted(tuple(r) for r in rows) == [
        (101, JAN_2024, "bronze", "DE"),
        (102, v2 - 1, "bronze", "DE"),
        (103, v2, "gold", "DE"),
        (104, v2 + 24 * HOUR, "gold", "DE"),
        (201, v2 - HOUR, "silver", "FR"),
        (202, v2 + HOUR, "silver", "NL"),
        (301, JAN_2024, "gold", "US"),
        # The LEFT JOIN keeps an order that no version covers instead of dropping it.
        (302, v2 + HOUR, None, None),
    ]
