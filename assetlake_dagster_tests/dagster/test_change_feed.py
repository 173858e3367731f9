"""Layer 5: a merge reads only what changed upstream (real runs, real change data feeds).

The fixture `projects/change_feed` reads the external `raw/orders` (created with
`delta.enableChangeDataFeed`): `staging/orders_clean` is row-local, `mart/customer_totals`
groups on its key, `staging/orders_open` and `mart/repeat_customers` are the same two shapes
with `deletes=delete` (keys the SELECT no longer returns are deleted), `mart/order_days`
(DISTINCT) has neither shape and reads in full. Two lakes get the same
random inserts, updates and deletes; one lake's runs read the change feed, the other's are
forced to read in full; their tables must be equal after every run.
"""

import os
import random

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.run.change_feed import READ_KEY
from assetlake_dagster.run.decision import FORCE_TAG
from assetlake_dagster_tests.helpers import PROJECTS

PROJECT = os.path.join(PROJECTS, "change_feed")
CLEAN = dg.AssetKey(["staging", "orders_clean"])
TOTALS = dg.AssetKey(["mart", "customer_totals"])
DAYS = dg.AssetKey(["mart", "order_days"])
CURRENT = dg.AssetKey(["staging", "orders_open"])
CUSTOMERS = dg.AssetKey(["mart", "repeat_customers"])
KEYS = [CLEAN, TOTALS, CURRENT, CUSTOMERS]
SCHEMA = "order_id INT, customer_id INT, status STRING, amount DOUBLE"
STATUSES = ["new", "paid", "void", None]
#: Random rounds of changes (each: both lakes run the four assets). Three, not five: the test
#: took 565 s of a CI worker with five, and each round repeats the same checks on new changes.
ROUNDS = 3


def create_orders(spark, path, rows, feed=True):
    spark.createDataFrame(rows, SCHEMA).write.format("delta").option(
        "delta.enableChangeDataFeed", str(feed).lower()
    ).save(path)


def random_row(rng, order_id):
    customer = rng.choice([1, 2, 3, 4, 5, 6, None])
    amount = rng.choice([None, -1.0, 0.0, round(rng.uniform(1, 50), 2)])
    return (order_id, customer, rng.choice(STATUSES), amount)


def mutate(spark, paths, rng, next_id):
    """One to three commits of random inserts, updates and deletes, the same on every path."""
    statements = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["insert", "update", "delete", "merge"])
        if kind == "insert":
            rows = [random_row(rng, next_id + i) for i in range(rng.randint(1, 4))]
            next_id += len(rows)
            values = ", ".join(_literal(r) for r in rows)
            statements.append(f"INSERT INTO {{t}} VALUES {values}")
        elif kind == "update":
            column, value = rng.choice(
                [("amount", f"{rng.uniform(1, 50):.2f}"), ("status", "'paid'"), ("status", "'void'"),
                 ("customer_id", str(rng.randint(1, 6))), ("amount", "NULL"), ("customer_id", "NULL")]
            )
            statements.append(f"UPDATE {{t}} SET {column} = {value} WHERE order_id % {rng.randint(3, 7)} = {rng.randint(0, 2)}")
        elif kind == "delete":
            statements.append(f"DELETE FROM {{t}} WHERE order_id % {rng.randint(4, 9)} = {rng.randint(0, 3)}")
        else:  # one commit that updates, deletes and inserts
            row = random_row(rng, next_id)
            next_id += 1
            statements.append(
                f"MERGE INTO {{t}} AS t USING (SELECT * FROM VALUES {_literal(row)}, ({rng.randint(0, next_id)}, 3, 'paid', 9.5) "
                f"AS s(order_id, customer_id, status, amount)) AS s ON t.order_id = s.order_id "
                "WHEN MATCHED AND s.status = 'paid' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )
    for statement in statements:
        for path in paths:
            spark.sql(statement.format(t=f"delta.`{path}`"))
    return next_id


#: The SELECTs of orders_open.sql and repeat_customers.sql, over a lake's raw.orders.
CURRENT_SQL = "SELECT order_id, customer_id, status, amount FROM {orders} WHERE status IS NULL OR status <> 'void'"
CUSTOMERS_SQL = (
    "SELECT customer_id AS customer, sum(amount) AS total, count(*) AS orders FROM {orders} "
    "WHERE customer_id IS NOT NULL GROUP BY customer_id HAVING count(*) > 1"
)


def select_rows(spark, lake_root, sql):
    orders = f"delta.`{os.path.join(lake_root, 'raw', 'orders')}`"
    return sorted(map(tuple, spark.sql(sql.format(orders=orders)).collect()), key=repr)


def _literal(row):
    return "(" + ", ".join("NULL" if v is None else repr(v) if isinstance(v, str) else str(v) for v in row) + ")"


def table_rows(spark, lake_root, key):
    return sorted(map(tuple, spark.read.format("delta").load(os.path.join(lake_root, *key.path)).collect()), key=repr)


def run(defs, instance, keys, **kwargs):
    job = defs.resolve_implicit_job_def_def_for_assets(keys)
    result = job.execute_in_process(instance=instance, asset_selection=keys, raise_on_error=False, **kwargs)
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    return result


def read_mode(instance, key):
    records = instance.fetch_materializations(key, limit=1).records
    value = records[0].asset_materialization.metadata.get(READ_KEY)
    return value.value if value is not None else None


def logs(instance, result):
    return [e.message for e in instance.all_logs(result.run_id) if e.message]


@pytest.fixture
def lakes(spark, lake_root):
    rng = random.Random(53)
    rows = [random_row(rng, i) for i in range(40)]
    made = {}
    for name in ("incremental", "full"):
        root = os.path.join(lake_root, name)
        create_orders(spark, os.path.join(root, "raw", "orders"), rows)
        made[name] = (build_definitions(PROJECT, lake_root=root), dg.DagsterInstance.ephemeral(), root)
    return made, rng


def test_reading_the_change_feed_gives_the_tables_a_full_read_gives(spark, lakes):
    made, rng = lakes
    (inc_defs, inc_instance, inc_root), (full_defs, full_instance, full_root) = made["incremental"], made["full"]
    run(inc_defs, inc_instance, KEYS)
    run(full_defs, full_instance, KEYS)
    next_id, fed = 40, 0
    for round_ in range(ROUNDS):
        next_id = mutate(spark, [os.path.join(r, "raw", "orders") for r in (inc_root, full_root)], rng, next_id)
        result = run(inc_defs, inc_instance, KEYS)
        run(full_defs, full_instance, KEYS, tags={FORCE_TAG: "true"})
        for key in KEYS:
            assert table_rows(spark, inc_root, key) == table_rows(spark, full_root, key), (round_, key)
        for key in KEYS:
            mode = read_mode(inc_instance, key)
            assert mode["mode"] == "change_feed", (round_, key, mode)
            fed += 1
        assert any("reads only the changes of delta://raw/orders (row-local SELECT" in m for m in logs(inc_instance, result))
        # deletes=delete: the table is the SELECT's result over the upstream as it is now.
        assert table_rows(spark, inc_root, CURRENT) == select_rows(spark, inc_root, CURRENT_SQL), round_
        assert table_rows(spark, inc_root, CUSTOMERS) == select_rows(spark, inc_root, CUSTOMERS_SQL), round_
    assert fed == len(KEYS) * ROUNDS
    # The full read's lake read in full each time.
    assert read_mode(full_instance, CLEAN) is None


def test_the_feed_reads_the_changed_rows_and_records_the_versions(spark, lakes):
    made, _ = lakes
    defs, instance, root = made["incremental"]
    run(defs, instance, [CLEAN, TOTALS, DAYS])
    orders = f"delta.`{os.path.join(root, 'raw', 'orders')}`"
    spark.sql(f"INSERT INTO {orders} VALUES (100, 7, 'new', 3.0), (101, 7, 'new', 4.0)")  # version 1
    spark.sql(f"UPDATE {orders} SET amount = 5.0 WHERE order_id = 100")  # version 2
    spark.sql(f"DELETE FROM {orders} WHERE order_id = 101")  # version 3
    result = run(defs, instance, [CLEAN, TOTALS, DAYS])
    assert read_mode(instance, DAYS) is None  # not a shape the feed serves: read in full
    assert any(
        "mart/order_days: reads its inputs in full: its SELECT has DISTINCT" in m for m in logs(instance, result)
    )
    # Inserted, updated, deleted: 100 telescopes to its last image, 101 to nothing.
    assert read_mode(instance, CLEAN) == {
        "mode": "change_feed", "table": "delta://raw/orders", "shape": "row-local",
        "from_version": 0, "to_version": 3, "rows_gained": 1, "rows_lost": 0,
    }
    assert read_mode(instance, TOTALS)["groups"] == 1
    clean = {r[0]: r for r in table_rows(spark, root, CLEAN)}
    assert clean[100] == (100, 7, "NEW", 10.0) and 101 not in clean
    totals = {r[0]: r for r in table_rows(spark, root, TOTALS)}
    assert totals[7] == (7, 5.0, 1, "new")


def test_without_a_feed_or_after_a_schema_change_it_reads_in_full_and_says_why(spark, lake_root):
    root = os.path.join(lake_root, "plain")
    path = os.path.join(root, "raw", "orders")
    create_orders(spark, path, [(1, 1, "new", 2.0)], feed=False)
    defs, instance = build_definitions(PROJECT, lake_root=root), dg.DagsterInstance.ephemeral()
    run(defs, instance, [CLEAN])
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (2, 1, 'new', 3.0)")
    result = run(defs, instance, [CLEAN])
    assert any(
        "reads its inputs in full: delta://raw/orders keeps no change data feed (delta.enableChangeDataFeed is not set)" in m
        for m in logs(instance, result)
    )
    assert len(table_rows(spark, root, CLEAN)) == 2
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (note STRING)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 1, 'new', 4.0, 'x')")
    result = run(defs, instance, [CLEAN])
    assert any("reads its inputs in full: the upstream's schema or properties changed at version" in m for m in logs(instance, result))
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, 2, 'paid', 1.0, 'y')")
    result = run(defs, instance, [CLEAN])
    assert read_mode(instance, CLEAN)["rows_gained"] == 1
    assert sorted(r[0] for r in table_rows(spark, root, CLEAN)) == [1, 2, 3, 4]


def test_deletes_delete_removes_the_keys_the_select_no_longer_returns(spark, lakes):
    made, _ = lakes
    defs, instance, root = made["incremental"]
    run(defs, instance, [CURRENT, CUSTOMERS])
    orders = f"delta.`{os.path.join(root, 'raw', 'orders')}`"
    before = {r[0] for r in table_rows(spark, root, CURRENT)}
    gone = sorted(before)[:2]
    spark.sql(f"DELETE FROM {orders} WHERE order_id = {gone[0]}")  # deleted upstream
    spark.sql(f"UPDATE {orders} SET status = 'void' WHERE order_id = {gone[1]}")  # filtered out now
    spark.sql(f"INSERT INTO {orders} VALUES (500, 9, 'new', 1.0)")  # a customer with one order: no row
    result = run(defs, instance, [CURRENT, CUSTOMERS])
    assert any(
        "staging/orders_open: reads only the changes of delta://raw/orders (row-local SELECT; change feed versions 1..3"
        in m and "keys no longer produced are deleted" in m
        for m in logs(instance, result)
    )
    assert {r[0] for r in table_rows(spark, root, CURRENT)} == before - set(gone) | {500}
    assert table_rows(spark, root, CURRENT) == select_rows(spark, root, CURRENT_SQL)
    assert read_mode(instance, CUSTOMERS)["mode"] == "change_feed"
    # Customer 9 has one order: filtered out by HAVING, never in the table.
    assert table_rows(spark, root, CUSTOMERS) == select_rows(spark, root, CUSTOMERS_SQL)
    # Its second order is in the group, its removal drops the group again.
    spark.sql(f"INSERT INTO {orders} VALUES (501, 9, 'new', 2.0)")
    run(defs, instance, [CUSTOMERS])
    assert 9 in {r[0] for r in table_rows(spark, root, CUSTOMERS)}
    spark.sql(f"DELETE FROM {orders} WHERE order_id = 501")
    run(defs, instance, [CUSTOMERS])
    assert 9 not in {r[0] for r in table_rows(spark, root, CUSTOMERS)}
    assert table_rows(spark, root, CUSTOMERS) == select_rows(spark, root, CUSTOMERS_SQL)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{os.path.join(root, 'mart', 'repeat_customers')}` LIMIT 1").first()
    assert history["operation"] == "MERGE" and history["operationMetrics"]["numTargetRowsDeleted"] == "1"
