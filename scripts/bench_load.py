"""Benchmark B4 of ``docs/performance.md``: the definitions load of 1000 annotated SQL files against
dagster-dbt loading a 1000-model manifest of the same DAG.

Generates (seeded, in a fresh temp folder) one DAG twice: as an annotated SQL project (``--files``
models over ``--files/20`` external ``raw.src_<i>`` tables; replace, ``key=`` merge, append and
``partitioned daily`` files, data tests, group/owner/tags/description lines, joins, CTEs and
aggregates) and as a dbt project (the same models with ``ref()``/``source()``, the tests in
``schema.yml``, the daily ones tagged ``daily``), whose ``target/manifest.json`` ``dbt parse``
builds once, untimed. It checks both load into the same asset graph (same models, same
dependencies, same data tests) before any timing counts, then times, each in a fresh subprocess
(imports count), one warm-up each, then ``--reps`` rounds interleaved A/B/A/B (the order of the
first three rotated each round, so no variant always follows the same one; dbt parse last):

    ours-warm: ``build_definitions(project)`` + ``get_repository_def()`` (the asset graph
        resolved), product python (``.venv``); the product's caches as the last run left them.
    ours-cold: the same after clearing every cache the product could have written: anything in the
        project folder that the generator did not write, an empty ``XDG_CACHE_HOME``, and each
        ``--cold-clear PATH``. The product's parse cache (``project/parse_cache.py``) lives under
        ``XDG_CACHE_HOME``, so a cold run parses every file and a warm one none.
    dagster-dbt: ``@dbt_assets(manifest=…)`` (unpartitioned models; the ``daily`` ones in a second
        ``@dbt_assets`` with the same ``DailyPartitionsDefinition``) + ``Definitions`` +
        ``get_repository_def()``, in the baseline venv (``.venv-bench``).
    dbt-parse: ``dbt parse --no-partial-parse`` (a fresh target folder), the cold path of dbt.

Each figure is the whole process's wall time (spawn to exit; the child leaves with ``os._exit``
right after the graph is resolved, so interpreter teardown is not counted), also the time from
the child's first line, and ours' phases: import dagster, import the product, discover/read/
parse/check the files (``load_project``), build the Definitions, resolve the repository.

    .venv/bin/python scripts/bench_load.py [--files 1000] [--reps 5] [--out FILE.json] [--profile 30]
                                           [--product-rev HEAD]

The product measured is the work tree as it is, or with ``--product-rev REV`` a copy of
``assetlake_dagster`` as committed at REV (first on ``PYTHONPATH``: a work tree in mid-edit
cannot break the run). ``--profile N`` runs ours once more under cProfile (inside the child, from
its first line to the resolved graph) and prints the top N by cumulative time.

The baseline venv: created by this script when missing (``python3.11 -m venv .venv-bench`` +
``pip install -r scripts/bench_requirements.txt``, ~20 s); ``--no-setup`` prints that command
instead. ``.venv-bench`` is not the product's venv and is never committed.

Goals (B4): ours-warm / dagster-dbt <= 0.6; ours-cold / dagster-dbt <= 1.3;
ours-cold / (dbt parse + dagster-dbt) <= 0.4. Exit code: 0 when every goal is met, 1 when one is
missed, 2 on an error (a load failed, the two graphs differ, Ctrl-C).
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS_PYTHON = sys.executable  # run as .venv/bin/python: the product's venv
DEFAULT_BENCH_VENV = os.path.join(REPO, ".venv-bench")
REQUIREMENTS = os.path.join(REPO, "scripts", "bench_requirements.txt")
GOALS = {"warm": 0.6, "cold": 1.3, "cold_vs_parse": 0.4}
COLUMNS = ("id", "customer_id", "event_date", "amount", "status", "region")
STATUSES = ("new", "paid", "refunded", "cancelled")
DOMAINS = 10
START = "2024-01-01"


class BenchError(Exception):
    """A benchmark could not produce a valid figure (a failed load, unequal graphs)."""


# -- the DAG, written twice ------------------------------------------------------------------
def make_dag(files: int, seed: int) -> dict:
    """The models: name, domain, inputs (earlier models or sources), strategy, shape, tests."""
    rng = random.Random(seed)
    sources = [f"src_{i}" for i in range(max(1, files // 20))]
    models = []
    for i in range(files):
        domain = f"dom_{i * DOMAINS // files}"
        inputs: list[tuple[str, str]] = []  # ("source"|"model", name)
        for _ in range(rng.choice((1, 1, 2, 2, 3))):
            if i == 0 or rng.random() < 0.2:
                pick = ("source", rng.choice(sources))
            else:
                pick = ("model", f"m_{rng.randrange(max(0, i - 150), i)}")
            if pick not in inputs:
                inputs.append(pick)
        r = rng.random()
        strategy = "replace" if r < 0.55 else "merge" if r < 0.80 else "append" if r < 0.85 else "daily"
        keyed = strategy == "merge" or (strategy == "daily" and rng.random() < 0.5)
        shape = "join" if len(inputs) > 1 else ("aggregate" if rng.random() < 0.25 else "filter")
        tests = []
        if rng.random() < 0.35:
            pool = [("unique", "id"), ("not_null", "customer_id"), ("accepted_values", "status")]
            model_inputs = [name for kind, name in inputs if kind == "model"]
            if model_inputs:
                pool.append(("relationships", model_inputs[0]))
            tests = rng.sample(pool, rng.randint(1, min(3, len(pool))))
        models.append({
            "name": f"m_{i}", "domain": domain, "inputs": inputs, "strategy": strategy, "keyed": keyed,
            "shape": shape, "cte": rng.random() < 0.2, "factor": round(rng.uniform(0.5, 2.0), 2),
            "layer": ("staging", "core", "mart")[min(2, i * 3 // files)], "tests": tests,
        })
    return {"sources": sources, "models": models}


def _body(model: dict, ref, daily_filter: str) -> str:
    """The model's SELECT; ``ref(kind, name)`` spells a table; ``daily_filter`` its window."""
    tables = [ref(kind, name) for kind, name in model["inputs"]]
    first = tables[0]
    lines = []
    if model["cte"]:
        lines += ["WITH base AS (",
                  f"  SELECT {', '.join(COLUMNS)}",
                  f"  FROM {first}",
                  "  WHERE amount IS NOT NULL",
                  ")"]
        first = "base"
    where = []
    if model["strategy"] == "daily":
        where.append(daily_filter.format(col="a.event_date" if model["shape"] == "join" else "event_date"))
    if model["shape"] == "filter":
        lines += [f"SELECT id, customer_id, event_date, round(amount * {model['factor']}, 2) AS amount, status, region",
                  f"FROM {first}"]
        where.append("status <> 'cancelled'")
        lines.append("WHERE " + " AND ".join(where))
    elif model["shape"] == "aggregate":
        lines += ["SELECT min(id) AS id, customer_id, max(event_date) AS event_date, sum(amount) AS amount,",
                  "       max(status) AS status, region",
                  f"FROM {first}"]
        if where:
            lines.append("WHERE " + " AND ".join(where))
        lines.append("GROUP BY customer_id, region")
    else:
        extra = "coalesce(c.orders, 0)" if len(tables) > 2 else "0"
        lines += ["SELECT a.id, a.customer_id, a.event_date,",
                  f"       a.amount + coalesce(b.amount, 0) + {extra} AS amount,",
                  "       coalesce(a.status, b.status) AS status, coalesce(b.region, a.region) AS region",
                  f"FROM {first} a",
                  f"LEFT JOIN {tables[1]} b ON a.id = b.id"]
        if len(tables) > 2:
            lines += [f"LEFT JOIN (SELECT customer_id, count(*) AS orders FROM {tables[2]} GROUP BY customer_id) c",
                      "  ON a.customer_id = c.customer_id"]
        if where:
            lines.append("WHERE " + " AND ".join(where))
    return "\n".join(lines) + "\n"


def _description(model: dict) -> str:
    reads = ", ".join(name for _, name in model["inputs"])
    return f"{model['shape'].capitalize()} of {reads}, {model['strategy']}{' on id' if model['keyed'] else ''}."


def write_sql_project(dag: dict, root: str) -> list[str]:
    """The annotated SQL project; the files it wrote (relative paths)."""
    schema_of = {m["name"]: m["domain"] for m in dag["models"]}
    ref = lambda kind, name: f"raw.{name}" if kind == "source" else f"{schema_of[name]}.{name}"  # noqa: E731
    written = []
    for model in dag["models"]:
        option = " key=id" if model["keyed"] else " append" if model["strategy"] == "append" else ""
        header = [f"-- materialize delta://{model['domain']}/{model['name']}{option}"]
        if model["strategy"] == "daily":
            header.append(f"-- partitioned daily start={START}")
        header += [f"-- group {model['domain']}", f"-- owner team:{model['domain'].replace('_', '-')}",
                   f"-- tags layer={model['layer']}", f"-- description {_description(model)}"]
        for test, arg in model["tests"]:
            header.append({
                "unique": "-- data_test unique id",
                "not_null": "-- data_test not_null customer_id",
                "accepted_values": f"-- data_test accepted_values status = {','.join(STATUSES)}",
                "relationships": f"-- data_test relationships customer_id -> delta://{schema_of.get(arg)}/{arg}.customer_id",
            }[test])
        body = _body(model, ref, "{col} >= {{partition_start}} AND {col} < {{partition_end}}")
        rel = os.path.join(model["domain"], f"{model['name']}.sql")
        os.makedirs(os.path.join(root, model["domain"]), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write("\n".join(header) + "\n\n" + body)
        written.append(rel)
    return written


def write_dbt_project(dag: dict, root: str) -> None:
    """The same DAG as a dbt project (models/<domain>/<model>.sql + schema.yml, sources.yml)."""
    ref = lambda kind, name: "{{ source('raw', '%s') }}" % name if kind == "source" else "{{ ref('%s') }}" % name  # noqa: E731
    daily = "{col} >= CAST('{{{{ var(\"partition_start\", \"%s\") }}}}' AS TIMESTAMP) " \
            "AND {col} < CAST('{{{{ var(\"partition_end\", \"%s\") }}}}' AS TIMESTAMP)" % (START, "2024-01-02")
    os.makedirs(os.path.join(root, "models"))
    domains = sorted({m["domain"] for m in dag["models"]})
    with open(os.path.join(root, "dbt_project.yml"), "w") as f:
        f.write("name: bench\nversion: '1.0'\nconfig-version: 2\nprofile: bench\nmodel-paths: [models]\n"
                "models:\n  bench:\n    +file_format: delta\n"
                + "".join(f"    {d}:\n      +schema: {d}\n" for d in domains))
    with open(os.path.join(root, "profiles.yml"), "w") as f:  # parse opens no connection
        f.write("bench:\n  target: dev\n  outputs:\n    dev:\n      type: spark\n      method: session\n"
                "      host: NA\n      schema: analytics\n")
    with open(os.path.join(root, "models", "sources.yml"), "w") as f:
        f.write("version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n"
                + "".join(f"      - name: {s}\n" for s in dag["sources"]))
    by_domain: dict[str, list[dict]] = {}
    for model in dag["models"]:
        by_domain.setdefault(model["domain"], []).append(model)
        if model["strategy"] == "replace":
            config = "materialized='table'"
        elif model["strategy"] == "append":
            config = "materialized='incremental', incremental_strategy='append'"
        elif model["strategy"] == "merge":
            config = "materialized='incremental', incremental_strategy='merge', unique_key='id'"
        else:
            config = ("materialized='incremental', incremental_strategy='merge', unique_key='id'" if model["keyed"]
                      else "materialized='incremental', incremental_strategy='insert_overwrite'")
            config += ", partition_by=['event_date'], tags=['daily']"
        folder = os.path.join(root, "models", model["domain"])
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{model['name']}.sql"), "w") as f:
            f.write("{{ config(%s) }}\n\n" % config + _body(model, ref, daily))
    for domain, models in by_domain.items():
        lines = ["version: 2", "models:"]
        for model in models:
            lines += [f"  - name: {model['name']}",
                      f"    description: \"{_description(model)}\"",
                      "    config:",
                      f"      tags: ['layer_{model['layer']}']",
                      "      meta:",
                      f"        dagster: {{group: {domain}, owners: ['team:{domain.replace('_', '-')}']}}"]
            columns: dict[str, list[str]] = {}
            for test, arg in model["tests"]:
                columns.setdefault({"unique": "id", "accepted_values": "status"}.get(test, "customer_id"), []).append({
                    "unique": "unique",
                    "not_null": "not_null",
                    "accepted_values": "accepted_values: {arguments: {values: [%s]}}" % ", ".join(STATUSES),
                    "relationships": "relationships: {arguments: {to: \"ref('%s')\", field: customer_id}}" % arg,
                }[test])
            if columns:
                lines.append("    columns:")
                for column, tests in columns.items():
                    lines += [f"      - name: {column}", "        data_tests:"] + [f"          - {t}" for t in tests]
        with open(os.path.join(root, "models", domain, "schema.yml"), "w") as f:
            f.write("\n".join(lines) + "\n")


# -- the children: one fresh process per measurement ----------------------------------------
# Both end with os._exit right after the graph is resolved: teardown is no part of a load.
#: Both children write the graph they loaded (deps, checks...) for check_same_graph().
DUMP_GRAPH = '''if dump != "-":
    deps = {}
    for key in graph.get_all_asset_keys():
        deps[key.path[-1]] = sorted(p.path[-1] for p in graph.get(key).parent_keys)
    checks = sorted([k.asset_key.path[-1], k.name] for k in graph.asset_check_keys)
    materializable = sorted(k.path[-1] for k in graph.get_all_asset_keys() if graph.get(k).is_materializable)
    partitioned = sorted(k.path[-1] for k in graph.get_all_asset_keys() if graph.get(k).partitions_def is not None)
    with open(dump, "w") as f:
        json.dump({"deps": deps, "checks": checks, "materializable": materializable, "partitioned": partitioned}, f)
'''

OURS_CHILD = r'''
import time
T0 = time.perf_counter()
import json, os, sys
PROFILE = os.environ.get("BENCH_LOAD_PROFILE")
if PROFILE:  # cProfile inside: os._exit below would lose `python -m cProfile`'s output
    import cProfile
    PROFILER = cProfile.Profile()
    PROFILER.enable()
project_dir, lake_root, dump = sys.argv[1], sys.argv[2], sys.argv[3]
import dagster as dg
T1 = time.perf_counter()
from assetlake_dagster.defs import build as _build
from assetlake_dagster.project import load as _project
T2 = time.perf_counter()
phases = {}

def _timed(module, name, label):
    original = getattr(module, name)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            phases[label] = phases.get(label, 0.0) + time.perf_counter() - start
    setattr(module, name, wrapper)

# load_project's parts, each where load_project looks it up (cumulative over the files).
_timed(_build, "load_project", "load_project")
for name, label in (("discover_sql_files", "discover"), ("_read", "read"), ("parse_header", "parse_headers"),
                    ("_build_spec", "parse_files"), ("_check_query", "check_queries"),
                    ("import_python_files", "import_python_files"), ("check_project", "check_project")):
    if hasattr(_project, name):
        _timed(_project, name, label)
defs = _build.build_definitions(project_dir, lake_root=lake_root)
T3 = time.perf_counter()
repo = defs.get_repository_def()
graph = repo.asset_graph
T4 = time.perf_counter()
result = {"import_dagster": T1 - T0, "import_product": T2 - T1, "build_definitions": T3 - T2,
          "resolve": T4 - T3, "total": T4 - T0, "phases": phases, "assets": len(graph.get_all_asset_keys()),
          "checks": len(graph.asset_check_keys)}
__DUMP_GRAPH__
if PROFILE:
    PROFILER.disable()
    PROFILER.dump_stats(PROFILE)
print("RESULT " + json.dumps(result), flush=True)
os._exit(0)
'''.replace("__DUMP_GRAPH__\n", DUMP_GRAPH)

DBT_CHILD = r'''
import time
T0 = time.perf_counter()
import json, os, sys
from pathlib import Path
manifest, project_dir, dump, dbt_exe = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
import dagster as dg
T1 = time.perf_counter()
from dagster_dbt import DbtCliResource, dbt_assets
T2 = time.perf_counter()

@dbt_assets(manifest=manifest, exclude="tag:daily")
def bench_models(context: dg.AssetExecutionContext, dbt: DbtCliResource):
    yield from dbt.cli(["build"], context=context).stream()

@dbt_assets(manifest=manifest, select="tag:daily", name="bench_daily_models",
            partitions_def=dg.DailyPartitionsDefinition(start_date="2024-01-01"))
def bench_daily_models(context: dg.AssetExecutionContext, dbt: DbtCliResource):
    window = context.partition_time_window
    dbt_vars = {"partition_start": window.start.isoformat(), "partition_end": window.end.isoformat()}
    yield from dbt.cli(["build", "--vars", json.dumps(dbt_vars)], context=context).stream()

defs = dg.Definitions(assets=[bench_models, bench_daily_models],
                      resources={"dbt": DbtCliResource(project_dir=project_dir, dbt_executable=dbt_exe)})
T3 = time.perf_counter()
repo = defs.get_repository_def()
graph = repo.asset_graph
T4 = time.perf_counter()
result = {"import_dagster": T1 - T0, "import_dagster_dbt": T2 - T1, "build_definitions": T3 - T2,
          "resolve": T4 - T3, "total": T4 - T0, "assets": len(graph.get_all_asset_keys()),
          "checks": len(graph.asset_check_keys)}
__DUMP_GRAPH__
print("RESULT " + json.dumps(result), flush=True)
os._exit(0)
'''.replace("__DUMP_GRAPH__\n", DUMP_GRAPH)


def _run(cmd: list[str], env: dict, cwd: str, log_path: str, timeout: float = 600) -> tuple[float, str]:
    """Run ``cmd`` to completion: (wall seconds, stdout). Raises BenchError on a failure."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise BenchError(f"{' '.join(cmd)}: no exit after {timeout:.0f}s") from err
    elapsed = time.perf_counter() - start
    with open(log_path, "a") as log:
        log.write(f"$ {' '.join(cmd)}  # {elapsed:.2f}s exit {proc.returncode}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
        raise BenchError(f"{' '.join(cmd)} failed (exit {proc.returncode}); log {log_path}:\n{tail}")
    return elapsed, proc.stdout


def _child_result(stdout: str) -> dict:
    for line in reversed(stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise BenchError(f"the child printed no RESULT line:\n{stdout[-2000:]}")


class Bench:
    """The temp folder, the two projects, the environments and one method per variant."""

    def __init__(self, tmp: str, files: int, seed: int, bench_python: str, cold_clear: list[str]):
        self.tmp, self.files, self.bench_python = tmp, files, bench_python
        self.sql_dir, self.dbt_dir = os.path.join(tmp, "sql_project"), os.path.join(tmp, "dbt_project")
        self.log = os.path.join(tmp, "children.log")
        self.cold_clear = [os.path.abspath(p) for p in cold_clear]
        self.ours_child, self.dbt_child = os.path.join(tmp, "ours_load.py"), os.path.join(tmp, "dbt_load.py")
        for path, text in ((self.ours_child, OURS_CHILD), (self.dbt_child, DBT_CHILD)):
            with open(path, "w") as f:
                f.write(text)
        self.dag = make_dag(files, seed)
        os.makedirs(self.sql_dir)
        self.generated = set(write_sql_project(self.dag, self.sql_dir)) | {m["domain"] for m in self.dag["models"]}
        write_dbt_project(self.dag, self.dbt_dir)
        home = os.path.join(tmp, "dagster_home")
        os.makedirs(home)
        with open(os.path.join(home, "dagster.yaml"), "w") as f:
            f.write("telemetry:\n  enabled: false\n")
        self.xdg_cache = os.path.join(tmp, "xdg_cache")
        env = dict(os.environ, DAGSTER_HOME=home, XDG_CACHE_HOME=self.xdg_cache, DAGSTER_DISABLE_TELEMETRY="1",
                   DBT_SEND_ANONYMOUS_USAGE_STATS="false", DO_NOT_TRACK="1", PYTHONDONTWRITEBYTECODE="")
        # The parse cache then lives under XDG_CACHE_HOME, which the cold runs clear.
        for name in ("ASSETLAKE_PROJECT_DIR", "ASSETLAKE_LAKE_ROOT", "SPARK_REMOTE", "ASSETLAKE_SPARK_REMOTE",
                     "ASSETLAKE_CACHE_DIR", "ASSETLAKE_PARSE_CACHE",
                     "PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME", "DBT_PARTIAL_PARSE"):
            env.pop(name, None)
        self.env = self.ours_env = env
        self.lake = os.path.join(tmp, "lake")
        self.manifest = os.path.join(self.dbt_dir, "target", "manifest.json")
        self.dbt = os.path.join(os.path.dirname(bench_python), "dbt")

    # -- the variants -----------------------------------------------------------------------
    def use_product_rev(self, rev: str) -> str:
        """Measure the product as committed at ``rev`` (a copy on ``PYTHONPATH``), not the work tree."""
        src = os.path.join(self.tmp, "product_src")
        os.makedirs(src)
        archive = subprocess.run(["git", "-C", REPO, "archive", rev, "assetlake_dagster"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", src], input=archive.stdout, check=True)
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", rev], capture_output=True, text=True, check=True)
        self.ours_env = dict(self.env, PYTHONPATH=src)
        return commit.stdout.strip()

    def ours(self, cold: bool = False, dump: str = "-", profile: str = "") -> dict:
        if cold:
            self.clear_caches()
        env = dict(self.ours_env, BENCH_LOAD_PROFILE=profile) if profile else self.ours_env
        wall, out = _run([OURS_PYTHON, self.ours_child, self.sql_dir, self.lake, dump], env, self.tmp, self.log)
        return dict(_child_result(out), wall=wall)

    def dagster_dbt(self, dump: str = "-") -> dict:
        wall, out = _run([self.bench_python, self.dbt_child, self.manifest, self.dbt_dir, dump, self.dbt],
                         self.env, self.tmp, self.log)
        return dict(_child_result(out), wall=wall)

    def dbt_parse(self, target: str = "") -> dict:
        """``dbt parse`` from scratch: no partial parse, an empty target folder."""
        target = target or os.path.join(self.tmp, "parse_target")
        shutil.rmtree(target, ignore_errors=True)
        wall, _ = _run([self.dbt, "parse", "--no-partial-parse", "--project-dir", self.dbt_dir, "--profiles-dir",
                        self.dbt_dir, "--target-path", target, "--log-path", os.path.join(self.tmp, "dbt_logs")],
                       self.env, self.dbt_dir, self.log)
        return {"wall": wall}

    def clear_caches(self) -> list[str]:
        """Remove whatever the product could have cached: every path in the project folder that
        the generator did not write (a cache kept beside the files), XDG_CACHE_HOME's contents and
        each ``--cold-clear`` path. What it removed (empty while the product caches nothing)."""
        removed = []
        for folder, dirs, files in os.walk(self.sql_dir, topdown=True):
            rel_folder = os.path.relpath(folder, self.sql_dir)
            for name in list(dirs) + files:
                rel = os.path.normpath(os.path.join(rel_folder, name))
                if rel not in self.generated:
                    path = os.path.join(folder, name)
                    shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
                    removed.append(path)
                    if name in dirs:
                        dirs.remove(name)
        for path in [self.xdg_cache, *self.cold_clear]:
            if os.path.lexists(path):
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
                removed.append(path)
        return removed


# -- checks before timing -------------------------------------------------------------------
def check_same_graph(bench: Bench, ours_dump: str, dbt_dump: str) -> dict:
    """Both loads hold the same models, dependencies, partitioned models and data tests."""
    with open(ours_dump) as f:
        ours = json.load(f)
    with open(dbt_dump) as f:
        theirs = json.load(f)
    models = {m["name"] for m in bench.dag["models"]}
    expect_deps = {m["name"]: sorted(name for _, name in m["inputs"]) for m in bench.dag["models"]}
    problems = []
    for side, graph in (("ours", ours), ("dagster-dbt", theirs)):
        deps = {k: v for k, v in graph["deps"].items() if k in models}
        if deps != expect_deps:
            wrong = sorted(k for k in models if deps.get(k) != expect_deps[k])[:5]
            problems.append(f"{side}: {len(wrong)}+ models with other dependencies than generated, e.g. "
                            + "; ".join(f"{k}: {deps.get(k)} vs {expect_deps[k]}" for k in wrong))
        if not models <= set(graph["materializable"]):
            problems.append(f"{side}: models not materializable: {sorted(models - set(graph['materializable']))[:5]}")
    daily = sorted(m["name"] for m in bench.dag["models"] if m["strategy"] == "daily")
    for side, graph in (("ours", ours), ("dagster-dbt", theirs)):
        if sorted(k for k in graph["partitioned"] if k in models) != daily:
            problems.append(f"{side}: the partitioned models are not the {len(daily)} daily ones")
    tests = sum(len(m["tests"]) for m in bench.dag["models"])
    counts = {"ours": len(ours["checks"]), "dagster-dbt": len(theirs["checks"])}
    per_model = {side: {} for side in counts}
    for side, graph in (("ours", ours), ("dagster-dbt", theirs)):
        for asset, _name in graph["checks"]:
            per_model[side][asset] = per_model[side].get(asset, 0) + 1
    expect_checks = {m["name"]: len(m["tests"]) for m in bench.dag["models"] if m["tests"]}
    # dagster-dbt drops the relationships test of an unpartitioned model to a daily one: dbt's
    # `exclude tag:daily` (the unpartitioned @dbt_assets) also excludes a test with an excluded
    # parent, while `select tag:daily` keeps a test with a selected parent (eager indirect selection).
    is_daily = {m["name"]: m["strategy"] == "daily" for m in bench.dag["models"]}
    split = {m["name"]: sum(1 for t, arg in m["tests"] if t == "relationships" and is_daily[arg] and not is_daily[m["name"]])
             for m in bench.dag["models"]}
    expect = {"ours": expect_checks,
              "dagster-dbt": {k: n - split[k] for k, n in expect_checks.items() if n - split[k]}}
    for side in counts:
        if per_model[side] != expect[side]:
            problems.append(f"{side}: {counts[side]} asset checks, expected {sum(expect[side].values())} on the generated models")
    if problems:
        raise BenchError("the two loads differ from the generated DAG:\n  " + "\n  ".join(problems))
    return {"models": len(models), "sources": len(bench.dag["sources"]), "edges": sum(map(len, expect_deps.values())),
            "daily": len(daily), "checks": counts, "tests": tests,
            "assets": {"ours": len(ours["deps"]), "dagster-dbt": len(theirs["deps"])}}


# -- the baseline venv ----------------------------------------------------------------------
def setup_command(venv: str) -> str:
    return f"python3.11 -m venv {venv} && {venv}/bin/pip install -r {REQUIREMENTS}"


def ensure_bench_venv(venv: str, setup: bool) -> str:
    """The baseline venv's python, created (``setup``) when it lacks dagster-dbt or dbt."""
    python = os.path.join(venv, "bin", "python")
    probe = "import dagster, dagster_dbt, dbt.version, dbt.adapters.spark; print(dagster.__version__, dagster_dbt.__version__, dbt.version.__version__)"

    def versions() -> str:
        if not os.path.exists(python):
            return ""
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    found = versions()
    if not found:
        if not setup:
            raise BenchError(f"the baseline venv {venv} lacks dagster-dbt/dbt; create it with:\n  {setup_command(venv)}")
        print(f"creating the baseline venv: {setup_command(venv)}", flush=True)
        base = shutil.which("python3.11") or sys.executable
        subprocess.run([base, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "-r", REQUIREMENTS], check=True)
        found = versions()
        if not found:
            raise BenchError(f"{venv}: dagster-dbt still not importable after the install")
    dagster_v, dagster_dbt_v, dbt_v = found.split()
    import dagster  # the product's, for the version check only

    note = "" if dagster_v == dagster.__version__ else f" (WARNING: the product's dagster is {dagster.__version__})"
    print(f"baseline venv {venv}: dagster {dagster_v}{note}, dagster-dbt {dagster_dbt_v}, dbt-core {dbt_v}", flush=True)
    return python


# -- main ------------------------------------------------------------------------------------
def _summary(times: list[float]) -> dict:
    return {"times_s": times, "median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def _fmt(s: dict) -> str:
    return f"{s['median_s']:.2f}s ({s['min_s']:.2f}–{s['max_s']:.2f})"


def _median_dict(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def print_profile(path: str, top: int) -> list[str]:
    import io
    import pstats

    buf = io.StringIO()
    pstats.Stats(path, stream=buf).sort_stats("cumulative").print_stats(top)
    text = buf.getvalue()
    print(text, flush=True)
    return text.splitlines()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1000, help="annotated SQL files = dbt models (default 1000)")
    parser.add_argument("--reps", type=int, default=5, help="timed rounds after the warm-up (default 5)")
    parser.add_argument("--parse-reps", type=int, default=None, help="timed dbt parse runs (default: --reps)")
    parser.add_argument("--seed", type=int, default=4, help="the generator's seed (default 4)")
    parser.add_argument("--out", help="the JSON file of all figures (default: bench_load.json in the temp folder)")
    parser.add_argument("--bench-venv", default=DEFAULT_BENCH_VENV, help="the baseline venv (default .venv-bench)")
    parser.add_argument("--no-setup", action="store_true", help="do not create the baseline venv: print the command")
    parser.add_argument("--cold-clear", action="append", default=[], metavar="PATH",
                        help="also remove PATH before each cold run of ours (a product cache kept elsewhere)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="after the timings, run ours once under cProfile and print the top N by cumulative time")
    parser.add_argument("--product-rev", metavar="REV",
                        help="measure assetlake_dagster as committed at REV (default: the work tree as it is)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (it is kept on an error anyway)")
    args = parser.parse_args()
    if args.reps < 1 or args.files < 2:
        parser.error("--reps must be at least 1 and --files at least 2")
    parse_reps = args.reps if args.parse_reps is None else args.parse_reps
    tmp = tempfile.mkdtemp(prefix="bench_load.")
    out = os.path.abspath(args.out) if args.out else os.path.join(tmp, "bench_load.json")
    report: dict = {"files": args.files, "reps": args.reps, "seed": args.seed, "temp_folder": tmp,
                    "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(), "goals": GOALS}
    code = 0
    try:
        bench_python = ensure_bench_venv(os.path.abspath(args.bench_venv), not args.no_setup)
        print(f"temp folder {tmp}; generating {args.files} SQL files and {args.files} dbt models (seed {args.seed})",
              flush=True)
        bench = Bench(tmp, args.files, args.seed, bench_python, args.cold_clear)
        if args.product_rev:
            report["product"] = f"commit {bench.use_product_rev(args.product_rev)} (a copy of its assetlake_dagster)"
        else:
            head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
            dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "assetlake_dagster"],
                                   capture_output=True, text=True).stdout.strip()
            report["product"] = f"work tree at {head}{' with uncommitted changes' if dirty else ''}"
        print(f"product measured: {report['product']}", flush=True)
        parse = bench.dbt_parse(os.path.join(bench.dbt_dir, "target"))  # the prebuilt manifest, untimed
        print(f"dbt parse (builds the manifest, untimed) {parse['wall']:.1f}s", flush=True)

        # Warm-ups, each once (untimed), dumping both graphs to check them against the DAG.
        dumps = os.path.join(tmp, "ours_graph.json"), os.path.join(tmp, "dbt_graph.json")
        warm = {"ours": bench.ours(dump=dumps[0]), "dagster-dbt": bench.dagster_dbt(dump=dumps[1]),
                "dbt-parse": bench.dbt_parse()}
        shape = check_same_graph(bench, *dumps)
        report["dag"] = shape
        print(f"warm-up ours={warm['ours']['wall']:.2f}s dagster-dbt={warm['dagster-dbt']['wall']:.2f}s "
              f"dbt-parse={warm['dbt-parse']['wall']:.2f}s (untimed)", flush=True)
        print(f"loads checked: {shape['models']} models over {shape['sources']} sources, {shape['edges']} edges, "
              f"{shape['daily']} daily-partitioned, {shape['tests']} data tests (asset checks: ours {shape['checks']['ours']}, "
              f"dagster-dbt {shape['checks']['dagster-dbt']}: its `exclude tag:daily` drops the relationships tests to daily models); "
              f"the same models and dependencies in both, "
              f"zero load errors (assets in the graph: ours {shape['assets']['ours']}, "
              f"dagster-dbt {shape['assets']['dagster-dbt']})", flush=True)
        report["warmup"] = warm

        runs: dict[str, list[dict]] = {"ours-warm": [], "dagster-dbt": [], "ours-cold": [], "dbt-parse": []}
        removed_any = []
        order = ["ours-warm", "dagster-dbt", "ours-cold"]
        for rep in range(1, args.reps + 1):  # A/B/A/B, the order rotated each round; dbt parse last
            shift = (rep - 1) % len(order)
            for name in order[shift:] + order[:shift]:
                if name == "dagster-dbt":
                    runs[name].append(bench.dagster_dbt())
                    continue
                if name == "ours-cold":
                    removed_any += bench.clear_caches()
                runs[name].append(bench.ours())
            line = (f"rep {rep}/{args.reps} ours-warm={runs['ours-warm'][-1]['wall']:.2f}s "
                    f"dagster-dbt={runs['dagster-dbt'][-1]['wall']:.2f}s ours-cold={runs['ours-cold'][-1]['wall']:.2f}s")
            if rep <= parse_reps:
                runs["dbt-parse"].append(bench.dbt_parse())
                line += f" dbt-parse={runs['dbt-parse'][-1]['wall']:.2f}s"
            print(line, flush=True)
        if not runs["dbt-parse"]:
            runs["dbt-parse"].append(warm["dbt-parse"])
        report["runs"] = runs
        report["caches_removed_before_cold_runs"] = removed_any

        wall = {name: _summary([r["wall"] for r in rs]) for name, rs in runs.items()}
        inner = {name: _summary([r["total"] for r in rs]) for name, rs in runs.items() if name != "dbt-parse"}
        report["wall"], report["in_process"] = wall, inner
        parse_plus_load = statistics.median(wall["dbt-parse"]["times_s"]) + wall["dagster-dbt"]["median_s"]
        ratios = {
            "warm": wall["ours-warm"]["median_s"] / wall["dagster-dbt"]["median_s"],
            "cold": wall["ours-cold"]["median_s"] / wall["dagster-dbt"]["median_s"],
            "cold_vs_parse": wall["ours-cold"]["median_s"] / parse_plus_load,
        }
        inner_ratios = {"warm": inner["ours-warm"]["median_s"] / inner["dagster-dbt"]["median_s"],
                        "cold": inner["ours-cold"]["median_s"] / inner["dagster-dbt"]["median_s"]}
        report["ratios"], report["in_process_ratios"] = ratios, inner_ratios
        report["ok"] = {k: ratios[k] <= GOALS[k] for k in GOALS}

        print(f"\nwall time of the whole process, median (min–max) of {args.reps}:", flush=True)
        for name in ("ours-warm", "ours-cold", "dagster-dbt"):
            print(f"  {name:<12} {_fmt(wall[name])}   from the child's first line {_fmt(inner[name])}", flush=True)
        print(f"  {'dbt-parse':<12} {_fmt(wall['dbt-parse'])}   (n={len(runs['dbt-parse'])}); "
              f"dbt parse + dagster-dbt = {parse_plus_load:.2f}s", flush=True)
        ours_runs = runs["ours-warm"] + runs["ours-cold"]
        phases = sorted({p for r in ours_runs for p in r["phases"]})
        breakdown = {k: _median_dict(ours_runs, k) for k in ("import_dagster", "import_product", "build_definitions", "resolve", "total")}
        breakdown["interpreter_start_and_exit"] = statistics.median(r["wall"] - r["total"] for r in ours_runs)
        breakdown["phases"] = {p: statistics.median(r["phases"].get(p, 0.0) for r in ours_runs) for p in phases}
        lp = breakdown["phases"].get("load_project", 0.0)
        breakdown["build_definitions_without_load_project"] = breakdown["build_definitions"] - lp
        dbt_bd = {k: _median_dict(runs["dagster-dbt"], k) for k in ("import_dagster", "import_dagster_dbt", "build_definitions", "resolve", "total")}
        dbt_bd["interpreter_start_and_exit"] = statistics.median(r["wall"] - r["total"] for r in runs["dagster-dbt"])
        report["breakdown"] = {"ours": breakdown, "dagster-dbt": dbt_bd}
        print("ours, medians of all its runs (warm and cold):", flush=True)
        print(f"  interpreter start + exit   {breakdown['interpreter_start_and_exit']:.2f}s\n"
              f"  import dagster             {breakdown['import_dagster']:.2f}s\n"
              f"  import assetlake_dagster   {breakdown['import_product']:.2f}s\n"
              f"  load_project (the files)   {lp:.2f}s", flush=True)
        for p in phases:
            if p != "load_project":
                print(f"    {p:<24} {breakdown['phases'][p]:.3f}s", flush=True)
        print(f"  build Definitions (rest)   {breakdown['build_definitions_without_load_project']:.2f}s\n"
              f"  get_repository_def()       {breakdown['resolve']:.2f}s", flush=True)
        print("dagster-dbt, medians:", flush=True)
        print(f"  interpreter start + exit   {dbt_bd['interpreter_start_and_exit']:.2f}s\n"
              f"  import dagster             {dbt_bd['import_dagster']:.2f}s\n"
              f"  import dagster_dbt         {dbt_bd['import_dagster_dbt']:.2f}s\n"
              f"  @dbt_assets + Definitions  {dbt_bd['build_definitions']:.2f}s\n"
              f"  get_repository_def()       {dbt_bd['resolve']:.2f}s", flush=True)
        if not removed_any:
            print("note: the product wrote no cache (nothing to clear before the cold runs): "
                  "ours-warm and ours-cold are the same load; they differ by noise only", flush=True)
        print("", flush=True)
        labels = {"warm": "B4 warm ratio", "cold": "B4 cold ratio", "cold_vs_parse": "B4 cold/(dbt parse+load) ratio"}
        for key, label in labels.items():
            print(f"{label}={ratios[key]:.2f} goal<={GOALS[key]:.2f} {'ok' if report['ok'][key] else 'MISSED'}",
                  flush=True)
        code = 0 if all(report["ok"].values()) else 1

        if args.profile:
            prof = os.path.join(tmp, "ours.prof")
            bench.ours(profile=prof)
            print(f"\ncProfile of one ours load (top {args.profile} by cumulative time; {prof}):", flush=True)
            report["profile_top"] = print_profile(prof, args.profile)
    except BenchError as err:
        print(f"ERROR: {err}", file=sys.stderr, flush=True)
        report["error"], code = str(err), 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr, flush=True)
        report["error"], code = "interrupted", 2
    finally:
        report["loadavg_end"] = os.getloadavg()
        with open(out, "w") as f:
            json.dump(report, f, indent=2)
        print(f"figures: {out}", flush=True)
        if code != 2 and not args.keep and not os.path.commonpath([out, tmp]) == tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
