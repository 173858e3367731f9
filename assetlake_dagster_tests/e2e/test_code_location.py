"""Layer 5: the code location loads, and a new user's CLI flow backfills and materializes the demo."""

import datetime as dt
import importlib
import os
import subprocess

import dagster as dg
from pyspark.sql import functions as F

from assetlake_dagster.delta_sql import read
from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster.demo.project.sources import order_rows
from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster.writes.slices import partition_predicate
from assetlake_dagster_tests.helpers import (
    DAGSTER,
    DEMO_EXTERNAL_KEYS,
    DEMO_KEYS,
    PROJECTS,
    REPO,
    cli_env,
    delta_history as history,
    files_by_partition,
    run_cli,
)

PIPELINE = os.path.join(PROJECTS, "pipeline")
RAW_KEYS = {"raw/customers", "raw/orders"}
PARTITIONED_KEYS = {"staging/orders", "analytics/monthly_revenue", "staging/payments", "analytics/payment_reconciliation"}


def _load(monkeypatch, **env):
    for name in ("ASSETLAKE_PROJECT_DIR", "ASSETLAKE_LAKE_ROOT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    import assetlake_dagster.definitions as module

    return importlib.reload(module).defs


def _keys(defs):
    return {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}


def test_code_location_defaults_to_the_demo(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    defs = _load(monkeypatch)
    assert _keys(defs) == DEMO_KEYS
    assert defs.resources["spark"].lake.root == os.path.realpath(tmp_path / ".assetlake" / "lake")
    assert isinstance(defs.executor, dg.ExecutorDefinition) and defs.executor.name == "in_process"


def test_code_location_reads_the_environment(monkeypatch, tmp_path):
    defs = _load(monkeypatch, ASSETLAKE_PROJECT_DIR=PIPELINE, ASSETLAKE_LAKE_ROOT=str(tmp_path / "lk"))
    assert "mart/people_clean" in _keys(defs)
    assert defs.resources["spark"].lake.root == os.path.realpath(tmp_path / "lk")


def test_workspace_points_at_the_code_location():
    with open(os.path.join(REPO, "workspace.yaml")) as f:
        assert "module_name: assetlake_dagster.definitions" in f.read()
    assert os.path.isdir(DEMO_PROJECT_DIR)


def _cli(tmp_path, env, *args):
    proc = subprocess.run(list(args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{args}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout + proc.stderr


def test_cli_backfills_and_materializes_the_demo(spark, tmp_path, monkeypatch, capsys):
    """A new user's command-line flow on the partitioned demo, with the table checks.

    The raw sources, then 60 days of staging/orders with `assetlake backfill` in batches of
    31 days (2 runs, 2 commits; the demo's own batch=91 would make it one), the monthly
    roll-up, the unpartitioned rest with `dagster asset materialize` (`--select '*'` refuses a
    selection with partitioned assets), then one day again. `dagster asset materialize` runs
    as the user runs it (a process on the warm engine); `assetlake backfill` runs in this
    process, with the same working folder and DAGSTER_HOME (its own process boundary is
    tested with `assetlake engine`).
    """
    import deltalake

    home = tmp_path / "home"
    env = cli_env(DAGSTER_HOME=str(home))
    for name in ("ASSETLAKE_PROJECT_DIR", "ASSETLAKE_LAKE_ROOT"):
        env.pop(name, None)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    os.makedirs(home)
    materialize = [DAGSTER, "asset", "materialize", "-m", "assetlake_dagster.definitions", "--select"]
    lake = tmp_path / ".assetlake" / "lake"
    orders_path = str(lake / "staging" / "orders")

    _cli(tmp_path, env, *materialize, "raw/customers,raw/orders")
    code, out, err = run_cli(capsys, "backfill", "staging/orders", "--from", "2024-01-01", "--to", "2024-02-29", "--batch", "31")
    assert code == 0, err
    assert "staging/orders, 60 partitions in 2 runs" in out and "2 runs succeeded, 0 failed" in out
    # One Delta commit per batch (Jan 1-31, Feb 1-29).
    assert history(spark, orders_path) == [(1, "WRITE"), (0, "WRITE")]
    code, out, err = run_cli(capsys, "backfill", "analytics/monthly_revenue")
    assert code == 0, err
    _cli(tmp_path, env, *materialize, ",".join(sorted(DEMO_KEYS - PARTITIONED_KEYS - RAW_KEYS - DEMO_EXTERNAL_KEYS)))

    # staging/orders holds exactly the Jan-Feb orders of the source, each in its day's partition.
    jan_feb = sorted(r[0] for r in order_rows() if r[4] < dt.datetime(2024, 3, 1))
    staging = read(spark, orders_path)
    assert sorted(r.order_id for r in staging.select("order_id").collect()) == jan_feb
    assert staging.where(f"{PARTITION_COLUMN} <> CAST(order_date AS STRING)").count() == 0
    assert staging.select(PARTITION_COLUMN).distinct().count() == 60
    # Dagster recorded every partition as materialized (what the UI shows).
    with dg.DagsterInstance.get() as instance:  # DAGSTER_HOME is `home` (set above)
        done = instance.get_materialized_partitions(dg.AssetKey(["staging", "orders"]))
        assert done == {(dt.date(2024, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(60)}
        monthly_done = instance.get_materialized_partitions(dg.AssetKey(["analytics", "monthly_revenue"]))
        assert monthly_done == {"2024-01-01", "2024-02-01", "2024-03-01"}

    # The monthly roll-up agrees with the daily orders (March has none yet: an empty partition).
    monthly = deltalake.DeltaTable(str(lake / "analytics" / "monthly_revenue")).to_pyarrow_table().to_pylist()
    by_month = {}
    for r in monthly:
        assert r["_partition"] == r["month"].isoformat()
        by_month[r["_partition"]] = by_month.get(r["_partition"], 0) + r["orders"]
    expected = staging.groupBy(F.date_format("ordered_at", "yyyy-MM-01").alias("m")).count().collect()
    assert by_month == {r.m: r["count"] for r in expected}
    assert set(by_month) == {"2024-01-01", "2024-02-01"}
    assert len(history(spark, str(lake / "analytics" / "monthly_revenue"))) == 1  # 3 months, one batch

    # Another Delta reader (delta-rs) sees the tables Spark wrote.
    top = deltalake.DeltaTable(str(lake / "analytics" / "top_customers")).to_pyarrow_table()
    assert top.num_rows >= 20
    assert sorted(top.column_names) == ["customer_id", "name", "revenue", "revenue_rank", "tier"]
    customers = deltalake.DeltaTable(str(lake / "analytics" / "customers"))
    assert customers.to_pyarrow_table().num_rows == 200
    log = deltalake.DeltaTable(str(lake / "ops" / "load_log")).to_pyarrow_table().to_pylist()
    assert len(log) == 1 and log[0]["orders"] == len(jan_feb)

    # The SCD2 dimension after its first run: one open version per customer.
    dim = deltalake.DeltaTable(str(lake / "analytics" / "dim_customer")).to_pyarrow_table().to_pylist()
    assert len(dim) == 200
    assert all(r["is_current"] and r["valid_to"] is None for r in dim)
    tier_of = {r["customer_id"]: (r["tier"], r["country"]) for r in dim}
    # The as-of fact table: every staging order exactly once (the materialized partitions
    # only), each joined to one version (the dimension starts today, the orders are from
    # 2024: the first version is treated as open since the beginning, so none lacks a tier).
    facts = deltalake.DeltaTable(str(lake / "analytics" / "fct_orders")).to_pyarrow_table().to_pylist()
    assert sorted(r["order_id"] for r in facts) == jan_feb
    assert all(r["tier_at_order"] is not None and r["country_at_order"] is not None for r in facts)
    assert all((r["tier_at_order"], r["country_at_order"]) == tier_of[r["customer_id"]] for r in facts)

    # One day again: the same rows, one more commit, and only that day's files change.
    day = "2024-01-15"

    def rows_of_day():
        return sorted(tuple(r) for r in read(spark, orders_path).where(f"{PARTITION_COLUMN} = '{day}'").collect())

    before_rows, before_files = rows_of_day(), files_by_partition(spark, orders_path)
    assert len(before_rows) > 0
    _cli(tmp_path, env, *materialize, "staging/orders", "--partition", day)
    after_files = files_by_partition(spark, orders_path)
    assert rows_of_day() == before_rows
    (last,) = spark.sql(f"DESCRIBE HISTORY delta.`{orders_path}` LIMIT 1").collect()
    assert (last.version, last.operation) == (2, "WRITE")
    assert last.operationParameters["predicate"] == partition_predicate([day])  # that day only
    assert after_files[day].isdisjoint(before_files[day])
    assert {p: f for p, f in after_files.items() if p != day} == {p: f for p, f in before_files.items() if p != day}
