"""Layer 5: a generated folder of 1000 annotated files (B4's, from scripts/bench_load.py)
becomes definitions, and a second load answers every file from the parse cache with the
same graph. No timing is asserted: scripts/bench_load.py measures it."""

import dagster as dg

from assetlake_dagster.project import load as project
from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster_tests.helpers import load_script

FILES = 1000


def _graph(defs: dg.Definitions):
    graph = defs.resolve_asset_graph()
    return {
        key.to_user_string(): sorted(p.to_user_string() for p in graph.get(key).parent_keys)
        for key in graph.get_all_asset_keys()
    }


def test_a_thousand_files_load_and_a_warm_load_parses_none(tmp_path, monkeypatch):
    bench = load_script("bench_load")
    dag = bench.make_dag(FILES, seed=4)
    written = bench.write_sql_project(dag, str(tmp_path / "project"))
    assert len(written) == FILES
    monkeypatch.setenv("ASSETLAKE_CACHE_DIR", str(tmp_path / "cache"))
    parsed = []
    real = project._build_spec
    monkeypatch.setattr(project, "_build_spec", lambda path, text: parsed.append(path) or real(path, text))

    cold = build_definitions(str(tmp_path / "project"), lake_root=str(tmp_path / "lake"))
    assert len(parsed) == FILES
    warm = build_definitions(str(tmp_path / "project"), lake_root=str(tmp_path / "lake"))
    assert len(parsed) == FILES  # none parsed again

    graph = _graph(cold)
    assert graph == _graph(warm)
    sources = {f"raw/{name}" for name in dag["sources"]}
    assert len(graph) == FILES + len(dag["sources"]) and sources <= set(graph)
    edges = sum(len(model["inputs"]) for model in dag["models"])
    assert sum(len(parents) for parents in graph.values()) == edges
    checks = sum(len(model["tests"]) for model in dag["models"])
    assert len(list(warm.resolve_asset_graph().asset_check_keys)) == checks
