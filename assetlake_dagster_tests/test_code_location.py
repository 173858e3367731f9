"""Layer 5: the code location loads, and the `dagster` CLI materializes the demo."""

import importlib
import os
import subprocess
import sys

import dagster as dg

from assetlake_dagster.demo import DEMO_PROJECT_DIR

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DAGSTER = os.path.join(os.path.dirname(sys.executable), "dagster")
PIPELINE = os.path.join(os.path.dirname(__file__), "projects", "pipeline")
DEMO_KEYS = {
    "raw/customers",
    "raw/orders",
    "staging/orders",
    "analytics/customers",
    "analytics/dim_customer",
    "analytics/fct_orders",
    "analytics/customer_revenue",
    "analytics/top_customers",
    "ops/load_log",
}


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


def test_dagster_cli_materializes_the_demo(tmp_path):
    """`dagster asset materialize -m assetlake_dagster.definitions --select '*'`, as a user runs it."""
    import deltalake

    env = dict(os.environ, DAGSTER_HOME=str(tmp_path / "home"), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("ASSETLAKE_PROJECT_DIR", None)
    env.pop("ASSETLAKE_LAKE_ROOT", None)
    os.makedirs(env["DAGSTER_HOME"])
    proc = subprocess.run(
        [DAGSTER, "asset", "materialize", "-m", "assetlake_dagster.definitions", "--select", "*"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "RUN_SUCCESS" in proc.stderr + proc.stdout
    lake = tmp_path / ".assetlake" / "lake"
    # Another Delta reader (delta-rs) sees the tables Spark wrote.
    top = deltalake.DeltaTable(str(lake / "analytics" / "top_customers")).to_pyarrow_table()
    assert top.num_rows >= 20
    assert sorted(top.column_names) == ["customer_id", "name", "revenue", "revenue_rank", "tier"]
    customers = deltalake.DeltaTable(str(lake / "analytics" / "customers"))
    assert customers.to_pyarrow_table().num_rows == 200
    assert deltalake.DeltaTable(str(lake / "ops" / "load_log")).to_pyarrow_table().num_rows == 1

    # The SCD2 dimension after its first run: one open version per customer.
    dim = deltalake.DeltaTable(str(lake / "analytics" / "dim_customer")).to_pyarrow_table().to_pylist()
    assert len(dim) == 200
    assert all(r["is_current"] and r["valid_to"] is None for r in dim)
    tier_of = {r["customer_id"]: (r["tier"], r["country"]) for r in dim}
    # The as-of fact table: every staging order exactly once, each joined to one version
    # (the dimension starts in 2026, the orders are from 2024: the first version is
    # treated as open since the beginning, so none is left without a tier).
    staging = deltalake.DeltaTable(str(lake / "staging" / "orders")).to_pyarrow_table()
    facts = deltalake.DeltaTable(str(lake / "analytics" / "fct_orders")).to_pyarrow_table().to_pylist()
    assert len(facts) == staging.num_rows == 5000
    assert sorted(r["order_id"] for r in facts) == sorted(staging.column("order_id").to_pylist())
    assert all(r["tier_at_order"] is not None and r["country_at_order"] is not None for r in facts)
    assert all((r["tier_at_order"], r["country_at_order"]) == tier_of[r["customer_id"]] for r in facts)
