"""Layer 5: the code location loads (a new user's CLI flow on the demo is
``e2e/test_s3_lake.py``'s, on a lake in a bucket)."""

import importlib
import os

import dagster as dg

from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster_tests.helpers import DEMO_KEYS, PROJECTS, REPO

PIPELINE = os.path.join(PROJECTS, "pipeline")


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
    groups = {node.group_name for node in defs.resolve_asset_graph().asset_nodes}
    assert groups == {"raw", "sales", "customers", "ops", "payments", "ref", "external"}
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

