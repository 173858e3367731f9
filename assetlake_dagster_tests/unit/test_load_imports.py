"""Loading definitions leaves PySpark (and, from a warm parse cache, sqlglot) unimported.

A code location loads its definitions in every `dagster` process, code server and run; the
engines' libraries are for runs. Importing PySpark alone cost about a third of a second
of B4's warm load (scripts/bench_load.py measures the load; no timing is asserted here).
"""

import json
import os
import subprocess
import sys

from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster_tests.helpers import REPO, load_script

HEAVY = ("pyspark", "sqlglot", "pandas", "numpy", "pyarrow", "delta", "deltalake")
CHILD = """
import json, sys
from assetlake_dagster.build import build_definitions
defs = build_definitions(sys.argv[1], lake_root=sys.argv[2])
assert defs.get_repository_def().asset_graph.get_all_asset_keys()
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[3].split(",")))))
"""


def _imported_by_a_load(project_dir: str, tmp_path) -> list[str]:
    env = dict(os.environ, ASSETLAKE_CACHE_DIR=str(tmp_path / "cache"))
    args = [sys.executable, "-c", CHILD, project_dir, str(tmp_path / "lake"), ",".join(HEAVY)]
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_warm_load_imports_no_engine_library(tmp_path):
    bench = load_script("bench_load")
    project_dir = str(tmp_path / "project")
    # B4's generator: replace, merge, append and partitioned files, data tests, external tables.
    bench.write_sql_project(bench.make_dag(40, seed=4), project_dir)
    # Cold: sqlglot parses the files (and nothing else heavy loads).
    assert _imported_by_a_load(project_dir, tmp_path) == ["sqlglot"]
    # Warm: every file comes from the parse cache.
    assert _imported_by_a_load(project_dir, tmp_path) == []


def test_the_demo_loads_without_pyspark(tmp_path):
    # Its custom data test's SQL is parsed on every load (sqlglot); its tables are not read.
    assert "pyspark" not in _imported_by_a_load(DEMO_PROJECT_DIR, tmp_path)
