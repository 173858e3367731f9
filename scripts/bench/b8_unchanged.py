"""B8 of ``docs/performance.md``: the demo's whole "Materialize all", a second time with nothing changed.

Per repetition, on a fresh lake root and a fresh ephemeral ``DagsterInstance`` under the
bench's workdir:

* the demo code location as the product builds it (``build_definitions(DEMO_PROJECT_DIR,
  spark=SparkDeltaResource(lake_root=..., mode="local"))``: the classic in-process session,
  i.e. the bench's own SparkSession), and its external landing table seeded as
  ``scripts/dev.sh`` does (``assetlake demo land --seed``: ``demo.landing.seed``);
* a warm-up of the session only (one small Spark query);
* "Materialize all" (timed): every materializable asset, every partition, as in-process runs
  of the implicit asset job. The runs are planned from the asset graph, not hard-coded: each
  step takes the assets whose upstreams are done, of one partitions definition
  (unpartitioned first), plus those of the same definition that only need the step's own
  assets; a partitioned step is one batch run over the whole partition range (the tags
  ``dagster/asset_partition_range_start``/``_end``, as ``assetlake backfill`` does). Every run
  must succeed (else ``BenchError``);
* the second "Materialize all" (timed), nothing changed, split so that Spark jobs and commits
  are attributed honestly: first the Python assets and seeds (the demo's roots: their function
  always runs, and a whole-table replace of identical rows commits nothing; goal 0 commits,
  their Spark jobs reported; run first, as in a real "Materialize all", so that a commit there
  would make the SQL assets below them run), then one pass over the skippable assets (the SQL
  files without a non-deterministic call, ``run_decision.non_deterministic_call``; goal: 0
  Spark jobs, 0 commits), then the SQL files that always run (``current_timestamp()``...:
  reported, no goal). The second time is the sum of the passes.

Spark jobs: the DAGScheduler's job counter (common's ``_jobs_started``); commits: every Delta
table under the lake root, its latest version (``lake.delta_log.latest_version``) before and
after. Per asset (and partition): whether its latest materialization says ``assetlake/skipped``,
``delta/committed``; for an asset not skipped, the run log lines saying why (``: runs, ``).

Goal: median(second) / median(first) <= 0.20, and 0 Spark jobs and 0 commits for the skippable
assets (and 0 commits for the Python assets and seeds).
"""

import os
import statistics
import time
from typing import Any, Optional

from common import BenchError, _jobs_started, progress

GOAL = 0.20
SKIPPED_KEY = "assetlake/skipped"
COMMITTED_KEY = "delta/committed"


# -- the demo location ---------------------------------------------------------------------------
def build_demo(spark, root: str):
    """The demo's definitions on a fresh lake under ``root``, its landing table seeded, and a
    fresh instance. Returns ``(defs, instance, lake_root, specs)``."""
    import dagster as dg

    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.demo import DEMO_PROJECT_DIR
    from assetlake_dagster.demo.landing import seed
    from assetlake_dagster.project.load import load_project
    from assetlake_dagster.defs.resources import SparkDeltaResource

    lake_root = os.path.join(root, "lake")
    os.makedirs(lake_root, exist_ok=True)
    resource = SparkDeltaResource(lake_root=lake_root, mode="local")
    defs = build_definitions(DEMO_PROJECT_DIR, spark=resource)
    landed = seed(spark, resource.lake)  # `assetlake demo land --seed`, as scripts/dev.sh runs it
    progress(f"B8 landing table seeded ({landed} rows)")
    instance = dg.DagsterInstance.ephemeral()
    specs = load_project(DEMO_PROJECT_DIR).assets
    return defs, instance, lake_root, specs


def plan_runs(defs, keys: set) -> list[tuple[list, Any]]:
    """The runs of a "Materialize all" of ``keys``: ``[(asset keys, partitions_def or None)]``
    in an order respecting the asset graph (see the module doc)."""
    graph = defs.resolve_asset_graph()
    materializable = set(graph.materializable_asset_keys)
    keys = set(keys) & materializable
    ups = {k: {p for p in graph.get(k).parent_keys if p in keys} for k in keys}
    parts = {k: graph.get(k).partitions_def for k in keys}
    done: set = set()
    runs: list[tuple[list, Any]] = []
    while len(done) < len(keys):
        ready = sorted((k for k in keys - done if ups[k] <= done), key=lambda k: k.to_user_string())
        if not ready:
            raise BenchError(f"B8: a cycle in the asset graph among {sorted(k.to_user_string() for k in keys - done)}")
        # Unpartitioned first, then partitioned definitions in a stable order.
        defs_ready = []
        for k in ready:
            if parts[k] not in defs_ready:
                defs_ready.append(parts[k])
        defs_ready.sort(key=lambda p: (p is not None, str(p)))
        chosen_def = defs_ready[0]
        step = {k for k in ready if parts[k] == chosen_def}
        grew = True
        while grew:  # same definition, needing only what is done or in this step
            more = {k for k in keys - done - step if parts[k] == chosen_def and ups[k] <= done | step}
            grew = bool(more)
            step |= more
        runs.append((sorted(step, key=lambda k: k.to_user_string()), chosen_def))
        done |= step
    return runs


def execute(defs, instance, runs: list[tuple[list, Any]], label: str) -> list[str]:
    """Run each planned run in process; every run must succeed. Returns the run ids."""
    from assetlake_dagster.defs.dagster_internals import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    run_ids = []
    for keys, partitions_def in runs:
        job = defs.resolve_implicit_job_def_def_for_assets(keys)
        tags = {}
        if partitions_def is not None:
            all_keys = list(partitions_def.get_partition_keys(dynamic_partitions_store=instance))
            tags = {ASSET_PARTITION_RANGE_START_TAG: all_keys[0], ASSET_PARTITION_RANGE_END_TAG: all_keys[-1]}
        t0 = time.perf_counter()
        result = job.execute_in_process(instance=instance, asset_selection=keys, tags=tags, raise_on_error=False)
        names = ", ".join(k.to_user_string() for k in keys)
        if not result.success:
            failures = [e.message for e in result.all_events if e.is_failure]
            raise BenchError(f"B8 {label}: the run of {names} failed: {failures[:3]}")
        run_ids.append(result.run_id)
        rng = f" [{tags[ASSET_PARTITION_RANGE_START_TAG]}..{tags[ASSET_PARTITION_RANGE_END_TAG]}]" if tags else ""
        progress(f"B8 {label}: {names}{rng} {time.perf_counter() - t0:.2f}s")
    return run_ids


def table_versions(lake_root: str) -> dict[str, int]:
    """Every Delta table under the lake root (``schema/table``) and its latest version."""
    from assetlake_dagster.lake.delta_log import latest_version

    out = {}
    for schema in sorted(os.listdir(lake_root)):
        folder = os.path.join(lake_root, schema)
        if not os.path.isdir(folder):
            continue
        for table in sorted(os.listdir(folder)):
            path = os.path.join(folder, table)
            if os.path.isdir(os.path.join(path, "_delta_log")):
                out[f"{schema}/{table}"] = latest_version(path)
    return out


def commits_between(before: dict, after: dict, keys: Optional[list] = None) -> dict[str, int]:
    """Per table, the commits between two :func:`table_versions` (only tables that moved)."""
    names = {"/".join(k.path) for k in keys} if keys is not None else set(after)
    return {t: after[t] - before.get(t, -1) for t in after if t in names and after[t] != before.get(t, -1)}


def timed_pass(spark, defs, instance, lake_root: str, runs, label: str) -> dict:
    keys = [k for ks, _ in runs for k in ks]
    before, jobs0 = table_versions(lake_root), _jobs_started(spark)
    t0 = time.perf_counter()
    run_ids = execute(defs, instance, runs, label)
    seconds = time.perf_counter() - t0
    jobs = None if jobs0 is None else _jobs_started(spark) - jobs0
    moved = commits_between(before, table_versions(lake_root), keys)
    return {"seconds": seconds, "spark_jobs": jobs, "commits": sum(moved.values()), "commits_per_table": moved,
            "runs": [[k.to_user_string() for k in ks] for ks, _ in runs], "run_ids": run_ids}


def materializations(instance, key, run_ids: list[str]) -> list:
    """The materializations of ``key`` recorded by the runs ``run_ids``."""
    import dagster as dg

    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1000).records
    return [r for r in records if r.run_id in run_ids]


def why_runs(instance, run_ids: list[str], table: str) -> list[str]:
    """The run log lines saying why ``table``'s run was not skipped (``: runs, ``)."""
    lines = []
    for run_id in run_ids:
        for entry in instance.all_logs(run_id):
            message = entry.message or ""
            if ": runs, " in message and table in message:
                lines.append(message[:300])
    return lines


def asset_outcomes(instance, keys: list, run_ids: list[str]) -> dict[str, dict]:
    """Per asset of the second pass: materializations, how many say skipped / committed nothing,
    and the reasons it ran."""
    out = {}
    for key in keys:
        records = materializations(instance, key, run_ids)
        metas = [r.asset_materialization.metadata for r in records if r.asset_materialization]
        skipped = sum(1 for m in metas if SKIPPED_KEY in m)
        not_committed = sum(1 for m in metas if COMMITTED_KEY in m and m[COMMITTED_KEY].value is False)
        name = key.to_user_string()
        entry = {"materializations": len(metas), "skipped": skipped, "not_committed": not_committed}
        if skipped < len(metas):
            entry["why_runs"] = why_runs(instance, run_ids, "delta://" + name)[:5]
        if metas and SKIPPED_KEY in metas[0]:
            entry["example"] = str(metas[0][SKIPPED_KEY].value)[:200]
        out[name] = entry
    return out


def one_rep(spark, workdir: str, rep: int) -> dict:
    import dagster as dg

    from assetlake_dagster.run.decision import non_deterministic_call

    root = os.path.join(workdir, "b8", f"rep{rep}")
    defs, instance, lake_root, specs = build_demo(spark, root)
    graph = defs.resolve_asset_graph()
    every = set(graph.materializable_asset_keys)
    sql_keys = {dg.AssetKey(s.uri.asset_key_path): s for s in specs}
    always = {k: non_deterministic_call(s) for k, s in sql_keys.items() if k in every and non_deterministic_call(s)}
    skippable = {k for k in sql_keys if k in every and k not in always}
    other = every - skippable - set(always)  # Python assets and seeds: their function always runs
    first_runs = plan_runs(defs, every)
    progress(f"B8 rep {rep}: {len(every)} assets in {len(first_runs)} runs; skippable {len(skippable)}, "
             f"python/seeds {len(other)}, always run {', '.join(f'{k.to_user_string()} ({c})' for k, c in always.items())}")
    spark.range(10).selectExpr("sum(id)").collect()  # warm-up of the session only
    first = timed_pass(spark, defs, instance, lake_root, first_runs, f"rep {rep} first")
    progress(f"B8 rep {rep} first: {first['seconds']:.2f}s jobs={first['spark_jobs']} commits={first['commits']}")
    passes = {}
    for name, keys in (("python", other), ("skippable", skippable), ("always_run", set(always))):
        if not keys:
            passes[name] = {"seconds": 0.0, "spark_jobs": 0, "commits": 0, "commits_per_table": {}, "runs": [],
                            "run_ids": []}
            continue
        passes[name] = timed_pass(spark, defs, instance, lake_root, plan_runs(defs, keys), f"rep {rep} second/{name}")
        passes[name]["assets"] = asset_outcomes(instance, sorted(keys, key=lambda k: k.to_user_string()),
                                                passes[name]["run_ids"])
        p = passes[name]
        progress(f"B8 rep {rep} second/{name}: {p['seconds']:.2f}s jobs={p['spark_jobs']} commits={p['commits']} "
                 f"{p['commits_per_table']}")
        for asset, o in p["assets"].items():
            progress(f"B8   {asset}: {o['skipped']}/{o['materializations']} skipped, "
                     f"{o['not_committed']} not committed" + (f"; why: {o['why_runs'][:2]}" if o.get("why_runs") else ""))
    second = sum(p["seconds"] for p in passes.values())
    return {"first": first, "second_seconds": second, "passes": passes,
            "always_run": {k.to_user_string(): c for k, c in always.items()}, "ratio": second / first["seconds"]}


def run(spark, workdir: str, reps: int) -> dict:
    reps_out = [one_rep(spark, workdir, r + 1) for r in range(max(1, reps))]
    first = statistics.median(r["first"]["seconds"] for r in reps_out)
    second = statistics.median(r["second_seconds"] for r in reps_out)
    ratio = second / first
    sk = [r["passes"]["skippable"] for r in reps_out]
    py = [r["passes"]["python"] for r in reps_out]
    al = [r["passes"]["always_run"] for r in reps_out]
    jobs_sk = max((p["spark_jobs"] or 0) for p in sk)
    commits_sk = max(p["commits"] for p in sk)
    commits_py = max(p["commits"] for p in py)
    last = reps_out[-1]
    outcomes = {**last["passes"]["skippable"].get("assets", {})}
    skipped_assets = sum(1 for o in outcomes.values() if o["materializations"] and o["skipped"] == o["materializations"])
    py_assets = last["passes"]["python"].get("assets", {})
    py_not_committed = sum(1 for o in py_assets.values() if o["materializations"] and o["not_committed"] == o["materializations"])
    always_text = ",".join(
        f"{name}(jobs={int(statistics.median((r['passes']['always_run']['spark_jobs'] or 0) for r in reps_out))},"
        f"commits={int(statistics.median(r['passes']['always_run']['commits_per_table'].get(name, 0) for r in reps_out))})"
        for name in last["always_run"]) or "none"
    ok = ratio <= GOAL and jobs_sk == 0 and commits_sk == 0 and commits_py == 0
    line = (
        f"B8 ratio={ratio:.2f} goal<={GOAL:.2f} {'ok' if ok else 'MISSED'} jobs_skippable={jobs_sk} "
        f"commits_skippable={commits_sk} skipped={skipped_assets}/{len(outcomes)} "
        f"python(jobs={int(statistics.median((p['spark_jobs'] or 0) for p in py))},commits={commits_py},"
        f"not_committed={py_not_committed}/{len(py_assets)}) always_run={always_text} "
        f"first={first:.1f}s second={second:.1f}s "
        f"(skippable={statistics.median(p['seconds'] for p in sk):.1f}s "
        f"python={statistics.median(p['seconds'] for p in py):.1f}s always={statistics.median(p['seconds'] for p in al):.1f}s)"
    )
    return {"benchmark": "B8", "line": line, "ok": ok, "ratio": ratio, "goal": GOAL, "first_seconds": first,
            "second_seconds": second, "jobs_skippable": jobs_sk, "commits_skippable": commits_sk,
            "commits_python": commits_py, "reps": reps_out}
