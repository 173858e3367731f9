"""The demo's SCD2 dimension and its as-of fact table, across a change, through Dagster.

Runs the bundled demo's own ``dim_customer.sql`` and ``fct_orders.sql`` (not copies) on a
tmp lake. Their inputs (``raw.customers``, ``staging.orders``) are written by the test,
so the customer data can change between runs and orders can be placed on either side of
a version's start: the source's ``updated_at`` (``valid_from=updated_at``), or for a customer
who left, the second run's clock, where ``deletes=close`` ends the version.
"""

import datetime as dt
import os

import dagster as dg

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster.writes.history import to_micros

DIM = "analytics/dim_customer"
FCT = "analytics/fct_orders"
HOUR = 3_600_000_000  # microseconds


def day(month, day_of_month):
    """A source timestamp in 2024 (naive: UTC), and its microseconds."""
    ts = dt.datetime(2024, month, day_of_month)
    return ts, to_micros(ts)


def write_customers(spark, lake_root, rows):
    """``raw.customers`` as the demo's pandas source would write it (a full snapshot)."""
    df = spark.createDataFrame(
        rows, "customer_id BIGINT, name STRING, tier STRING, country STRING, email STRING, updated_at TIMESTAMP"
    )
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
    (jan1, JAN1), (jan10, JAN10), (feb1, FEB1), (feb15, FEB15) = day(1, 1), day(1, 10), day(2, 1), day(2, 15)

    # run 1: three customers, each known to the source since its own updated_at
    write_customers(
        spark,
        lake_root,
        [
            (1, "Ann", "bronze", "DE", "a@x", jan10),
            (2, "Bob", "silver", "FR", "b@x", jan1),
            (3, "Cy", "gold", "US", None, jan1),
        ],
    )
    materialize(defs, instance, DIM)

    # run 2: Ann's tier changes, Bob moves (both tracked, each at its source time), Cy leaves
    # (deletes=close: no source row, so the version ends at the run's clock)
    write_customers(
        spark, lake_root, [(1, "Ann", "gold", "DE", "a@x", feb1), (2, "Bob", "silver", "NL", "b@y", feb15)]
    )
    materialize(defs, instance, DIM)
    rows = dimension(spark, lake_root)
    (gone,) = [r[4] for r in rows if r[0] == 3]
    assert gone > to_micros(dt.datetime(2025, 1, 1))  # the run's clock, not a source time
    assert rows == [
        (1, "bronze", "DE", JAN10, FEB1, False),
        (1, "gold", "DE", FEB1, None, True),
        (2, "silver", "FR", JAN1, FEB15, False),
        (2, "silver", "NL", FEB15, None, True),
        (3, "gold", "US", JAN1, gone, False),
    ]

    write_orders(
        spark,
        lake_root,
        [
            (100, 1, JAN10 - HOUR),  # before the source knew Ann: no version covers it
            (101, 1, JAN10),  # the first microsecond of her first version (valid_from is inclusive)
            (102, 1, FEB1 - 1),  # the last microsecond of it (valid_to is exclusive)
            (103, 1, FEB1),
            (201, 2, FEB15 - HOUR),
            (202, 2, FEB15 + HOUR),
            (301, 3, FEB15),  # while Cy was still a customer
            (302, 3, gone + HOUR),  # after Cy's version was closed: no version is valid
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
    # The LEFT JOIN keeps an order that no version covers instead of dropping it.
    assert sorted(tuple(r) for r in rows) == [
        (100, JAN10 - HOUR, None, None),
        (101, JAN10, "bronze", "DE"),
        (102, FEB1 - 1, "bronze", "DE"),
        (103, FEB1, "gold", "DE"),
        (201, FEB15 - HOUR, "silver", "FR"),
        (202, FEB15 + HOUR, "silver", "NL"),
        (301, FEB15, "gold", "US"),
        (302, gone + HOUR, None, None),
    ]
