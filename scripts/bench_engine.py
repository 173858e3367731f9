"""Benchmarks of the warm shared Spark engine: one-asset latency, the demo's "Materialize all…", B5.

Protocol of ``docs/performance.md``: a warm-up first, interleaved variants, the outputs compared
before any timing counts, median and spread reported. Everything runs in a fresh temp folder
(lakes, ``DAGSTER_HOME``, the engine's state folder, logs); the engine and every process this
script started are stopped at the end, also on Ctrl-C or SIGTERM::

    .venv/bin/python scripts/bench_engine.py [--reps N] [--only one-asset|demo-all|B5|first-write] [--out FILE.json]

Benchmarks (goals from the issue, warm engine, 2-core machine):
    one-asset: ``dagster asset materialize --select analytics/customers`` on the demo, wall time
        of the whole command; goal <= 10 s.
    demo-all: the backfill "Materialize all…" launches in ``dagster dev`` (all the demo's
        materializable assets, all partitions; its landing table seeded first, untimed), launch
        to completion; goal <= 180 s. One repetition unless ``--reps`` says.
    first-write: the first materialization of a 20M-row table (``SELECT id, sha2(...) FROM
        range(N)``) with ``dagster asset materialize`` on the warm engine: its wall time, and
        that it succeeded with every row in the table (no time goal; it used to fail after
        its commit while registering the table).
    B5: a 10-asset chain of tiny SQL assets, ours (warm engine, in-process executor) against
        10 plain ``@dg.asset``s on ``PySparkResource`` under the default multiprocess executor;
        goal median(ours) / median(anchor) <= 0.12.

Exit code: 0 when every goal is met, 1 when one is missed, 2 on an error (a failed run, unequal
outputs, Ctrl-C).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)  # run as .venv/bin/python: the venv's dagster and assetlake
DAGSTER, ASSETLAKE = os.path.join(BIN, "dagster"), os.path.join(BIN, "assetlake")
MATERIALIZE = [DAGSTER, "asset", "materialize"]
GOALS = {"one-asset": 10.0, "demo-all": 180.0, "B5": 0.12}
DEFAULT_REPS = {"one-asset": 5, "demo-all": 1, "B5": 5, "first-write": 1}  # demo-all: minutes per run
#: Rows of the first-write benchmark's table (issue 28: 8M and 20M failed after their commit).
FIRST_WRITE_ROWS = int(os.environ.get("ASSETLAKE_BENCH_FIRST_WRITE_ROWS", "20000000"))
CHAIN = 10
ASSET_NODES = "{ assetNodes { assetKey { path } isMaterializable } }"
LAUNCH = """mutation($sel: [AssetKeyInput!]) {
  launchPartitionBackfill(backfillParams: {assetSelection: $sel, allPartitions: true}) {
    __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
STATUS = "query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }"

_children: list[subprocess.Popen] = []  # every process started here, stopped by _stop_all


class BenchError(Exception):
    """A benchmark could not produce a valid figure (a failed run, unequal outputs)."""


# -- processes -----------------------------------------------------------------------------
def _spawn(cmd: list[str], env: dict, cwd: str, log_path: str) -> subprocess.Popen:
    """Start ``cmd`` in a session of its own, output to ``log_path``.

    Its own session keeps the terminal's Ctrl-C away from it (we stop it ourselves, in order)
    and lets us signal its whole process group: step subprocesses and their JVMs included.
    """
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    _children.append(proc)
    return proc


def _stop(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM the process group (up to four times, ``scripts/dagster_dev.py`` escalates on
    the fourth), then SIGKILL it."""
    for _ in range(4):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # leftovers of a group whose leader exited
    except ProcessLookupError:
        pass
    proc.wait()


def _stop_all() -> None:
    """Stop every process started here, newest first."""
    while _children:
        _stop(_children.pop())


def _tail(path: str, lines: int = 30) -> str:
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def _timed(cmd: list[str], env: dict, cwd: str, log_path: str, timeout: float = 900) -> float:
    """Run ``cmd`` to completion; its wall time in seconds.

    Raises:
        BenchError: it failed or hung past ``timeout`` (then it is stopped); with the log tail.
    """
    start = time.perf_counter()
    proc = _spawn(cmd, env, cwd, log_path)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    elapsed = time.perf_counter() - start
    _stop(proc)
    _children.remove(proc)
    if code != 0:
        why = f"exit {code}" if code is not None else f"no exit after {timeout:.0f}s: stopped"
        raise BenchError(f"{' '.join(cmd)} failed ({why}); log {log_path}:\n{_tail(log_path)}")
    return elapsed


# -- environment ---------------------------------------------------------------------------
def _base_env(tmp: str) -> dict:
    """The environment of every child: the warm engine in our own state folder, our instance."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               DAGSTER_HOME=os.path.join(tmp, "dagster_home"),
               ASSETLAKE_ENGINE_DIR=os.path.join(tmp, "engine"), ASSETLAKE_SPARK_MODE="engine")
    # A Spark Connect URL from the caller's shell would bypass the engine we measure.
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "ASSETLAKE_SPARK_REMOTE",
                 "ASSETLAKE_PROJECT_DIR", "ASSETLAKE_LAKE_ROOT"):
        env.pop(name, None)
    # Bounded, so an engine whose starter was killed mid-start (Ctrl-C) does not outlive us long;
    # above the command timeout, so it never idles out during one run of the other variant.
    env.setdefault("ASSETLAKE_ENGINE_IDLE_TIMEOUT", "1200")
    os.makedirs(env["DAGSTER_HOME"])
    shutil.copy(os.path.join(REPO, "scripts", "dagster.yaml"), env["DAGSTER_HOME"])
    return env


def _summary(times: list[float]) -> dict:
    return {"times_s": times, "median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


# -- 1. one-asset --------------------------------------------------------------------------
def bench_one_asset(tmp: str, env: dict, reps: int) -> dict:
    """Wall time of a one-asset ``dagster asset materialize`` of the demo, warm engine."""
    work = os.path.join(tmp, "one_asset")
    os.makedirs(work)
    env = dict(env, ASSETLAKE_LAKE_ROOT=os.path.join(work, "lake"))
    select = [*MATERIALIZE, "-m", "assetlake_dagster.definitions", "--select"]
    log = os.path.join(work, "runs.log")
    sources = _timed([*select, "raw/customers,raw/orders"], env, work, log)
    print(f"one-asset setup raw/customers,raw/orders {sources:.1f}s (untimed; starts the engine)", flush=True)
    warmup = _timed([*select, "analytics/customers"], env, work, log)
    print(f"one-asset warm-up {warmup:.1f}s (untimed)", flush=True)
    times = []
    for rep in range(1, reps + 1):
        times.append(_timed([*select, "analytics/customers"], env, work, log))
        print(f"one-asset rep {rep}/{reps} {times[-1]:.2f}s", flush=True)
    result = dict(_summary(times), warmup_s=warmup, goal_s=GOALS["one-asset"])
    result["ok"] = result["median_s"] <= GOALS["one-asset"]
    print(f"one-asset median={result['median_s']:.1f}s min={result['min_s']:.1f}s max={result['max_s']:.1f}s "
          f"n={reps} goal<={GOALS['one-asset']:.0f}s {_verdict(result['ok'])}", flush=True)
    return result


# -- 2. demo-all ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def _wait_for_assets(proc: subprocess.Popen, port: int, log_path: str, timeout: float = 600) -> list:
    """The demo's asset keys once ``dagster dev`` answers GraphQL with its code location loaded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"dagster dev exited ({proc.returncode}); log {log_path}:\n{_tail(log_path)}")
        try:
            nodes = (_graphql(port, ASSET_NODES).get("data") or {}).get("assetNodes") or []
            if nodes:  # "Materialize all…" launches the materializable ones (not external tables)
                return [n["assetKey"]["path"] for n in nodes if n["isMaterializable"]]
        except (OSError, ValueError):  # not listening yet, or not answering JSON yet
            pass
        time.sleep(1)
    raise BenchError(f"dagster dev did not serve the demo within {timeout:.0f}s; log {log_path}")


def _demo_asset_keys() -> list:
    """The demo's materializable asset keys, from its definitions (its external tables left out)."""
    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.demo import DEMO_PROJECT_DIR

    graph = build_definitions(DEMO_PROJECT_DIR, lake_root=tempfile.mkdtemp()).resolve_asset_graph()
    return sorted(key.path for key in graph.get_all_asset_keys() if graph.get(key).is_materializable)


def _backfill_once(tmp: str, env: dict, rep: int) -> tuple[float, str]:
    """One "Materialize all…" on a fresh lake in a fresh ``dagster dev``: (seconds, backfill id)."""
    work = os.path.join(tmp, "demo_all", f"rep{rep}")
    os.makedirs(work)
    env = dict(env, ASSETLAKE_LAKE_ROOT=os.path.join(work, "lake"))
    port, log = _free_port(), os.path.join(work, "dagster_dev.log")
    # The demo's landing table is external: seeded first, as scripts/dev.sh does (untimed).
    _timed([ASSETLAKE, "demo", "land", "--seed"], env, work, os.path.join(work, "land.log"))
    # workspace.yaml is relative to the repo root; the wrapper turns SIGTERM into a clean stop.
    proc = _spawn([sys.executable, os.path.join(REPO, "scripts", "dagster_dev.py"), "-w", "workspace.yaml",
                   "-h", "127.0.0.1", "-p", str(port)], env, REPO, log)
    try:
        keys = _wait_for_assets(proc, port, log)
        expected = _demo_asset_keys()
        if sorted(keys) != expected:
            raise BenchError(f"expected the demo's {len(expected)} asset keys {expected}, dagster dev serves {sorted(keys)}")
        start = time.perf_counter()
        launched = _graphql(port, LAUNCH, {"sel": [{"path": k} for k in keys]})
        result = (launched.get("data") or {}).get("launchPartitionBackfill") or {}
        if result.get("__typename") != "LaunchBackfillSuccess":
            raise BenchError(f"launchPartitionBackfill failed: {launched}")
        backfill_id, status = result["backfillId"], "REQUESTED"
        while status == "REQUESTED":  # 1 s polls: the resolution of the figure
            time.sleep(1)
            status = _graphql(port, STATUS, {"id": backfill_id})["data"]["partitionBackfillOrError"]["status"]
            if time.perf_counter() - start > 3600:
                raise BenchError(f"backfill {backfill_id} still {status} after an hour")
        elapsed = time.perf_counter() - start
        if status != "COMPLETED_SUCCESS":
            raise BenchError(f"backfill {backfill_id} ended {status}; runs' logs via dagster dev, log {log}")
        return elapsed, backfill_id
    finally:
        _stop(proc, grace=60)
        _children.remove(proc)


def bench_demo_all(tmp: str, env: dict, reps: int) -> dict:
    """Launch-to-completion time of the demo's whole backfill, run by ``dagster dev``'s daemon."""
    print(f"demo-all: {reps} repetition(s), each on a fresh lake and a fresh dagster dev"
          f"{' (a run takes minutes; --reps N for more)' if reps == 1 else ''}", flush=True)
    # Warm the engine first (untimed): the goal is for a warm engine, as after any earlier run.
    warm = _timed([ASSETLAKE, "engine", "start", "--lake-root", os.path.join(tmp, "demo_all")], env, tmp,
                  os.path.join(tmp, "engine_start.log"))
    print(f"demo-all engine start {warm:.1f}s (untimed)", flush=True)
    times, ids = [], []
    for rep in range(1, reps + 1):
        elapsed, backfill_id = _backfill_once(tmp, env, rep)
        times.append(elapsed)
        ids.append(backfill_id)
        print(f"demo-all rep {rep}/{reps} {elapsed:.1f}s backfill {backfill_id} COMPLETED_SUCCESS", flush=True)
    result = dict(_summary(times), backfill_ids=ids, goal_s=GOALS["demo-all"])
    result["ok"] = result["median_s"] <= GOALS["demo-all"]
    spread = f" min={result['min_s']:.1f}s max={result['max_s']:.1f}s" if reps > 1 else ""
    print(f"demo-all {result['median_s']:.1f}s{spread} n={reps} goal<={GOALS['demo-all']:.0f}s "
          f"{_verdict(result['ok'])}", flush=True)
    return result


# -- 3. B5 ---------------------------------------------------------------------------------
def _write_chain_sql(project: str) -> None:
    """The chain as annotated SQL files: c0 from range(1000), then c{i} = c{i-1} with v + 1."""
    os.makedirs(project)
    for i in range(CHAIN):
        source = "SELECT id, id * 2 AS v FROM range(1000)" if i == 0 else f"SELECT id, v + 1 AS v FROM b.c{i - 1}"
        with open(os.path.join(project, f"c{i}.sql"), "w") as f:
            f.write(f"-- materialize delta://b/c{i}\n\n{source}\n")


def _write_chain_anchor(path: str, lake: str) -> None:
    """The same chain as 10 plain ``@dg.asset``s on ``PySparkResource``, Delta tables by path."""
    lines = [
        '"""B5 anchor (generated by scripts/bench_engine.py): the chain on PySparkResource."""',
        "import dagster as dg",
        "from dagster_pyspark import PySparkResource",
        "from assetlake_dagster.spark.install import DELTA_EXTENSIONS, delta_jar_conf",
        "",
        f"LAKE = {lake!r}",
        'SPARK = PySparkResource(spark_config={**DELTA_EXTENSIONS, **delta_jar_conf(), "spark.master": "local[*]"})',
    ]
    for i in range(CHAIN):
        deps = f", deps=[c{i - 1}]" if i else ""
        if i == 0:
            read = 'spark.sql("SELECT id, id * 2 AS v FROM range(1000)")'
        else:
            read = f'spark.read.format("delta").load(f"{{LAKE}}/b/c{i - 1}").selectExpr("id", "v + 1 AS v")'
        lines += ["", "", f'@dg.asset(key_prefix="b"{deps})', f"def c{i}(pyspark: PySparkResource) -> None:",
                  "    spark = pyspark.spark_session",
                  f'    {read}.write.format("delta").mode("overwrite").save(f"{{LAKE}}/b/c{i}")']
    # No executor given: Dagster's default multiprocess executor, one process (and JVM) per step.
    lines += ["", "", f"defs = dg.Definitions(assets=[{', '.join(f'c{i}' for i in range(CHAIN))}], "
              'resources={"pyspark": SPARK})', ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def _check_equal_c9(ours: str, anchor: str) -> int:
    """Fail loudly unless both c9 tables hold the same rows (and the expected ones); their count."""
    from deltalake import DeltaTable  # imported here: only B5 needs it

    tables = [DeltaTable(p).to_pyarrow_table().sort_by("id") for p in (ours, anchor)]
    names = [t.column_names for t in tables]
    rows = [t.to_pylist() for t in tables]
    if names[0] != names[1] or rows[0] != rows[1]:
        raise BenchError(f"B5: c9 differs: ours {names[0]} {len(rows[0])} rows, anchor {names[1]} {len(rows[1])} rows "
                         f"(first rows {rows[0][:3]} vs {rows[1][:3]}); {ours} vs {anchor}")
    expected = [{"id": i, "v": 2 * i + CHAIN - 1} for i in range(1000)]
    if rows[0] != expected:
        raise BenchError(f"B5: c9 is equal in both but not the expected v = 2*id + {CHAIN - 1}: {rows[0][:3]}")
    return len(rows[0])


def bench_b5(tmp: str, env: dict, reps: int) -> dict:
    """End-to-end time of the 10-asset chain: ours against the PySparkResource anchor, interleaved."""
    work = os.path.join(tmp, "b5")
    project, anchor_file = os.path.join(work, "project"), os.path.join(work, "anchor.py")
    ours_lake, anchor_lake = os.path.join(work, "lake_ours"), os.path.join(work, "lake_anchor")
    _write_chain_sql(project)
    _write_chain_anchor(anchor_file, anchor_lake)
    ours_env = dict(env, ASSETLAKE_PROJECT_DIR=project, ASSETLAKE_LAKE_ROOT=ours_lake)
    variants = {
        "ours": ([*MATERIALIZE, "-m", "assetlake_dagster.definitions", "--select", "*"], ours_env),
        "anchor": ([*MATERIALIZE, "-f", anchor_file, "--select", "*"], env),
    }

    def run(name: str) -> float:
        cmd, variant_env = variants[name]
        return _timed(cmd, variant_env, work, os.path.join(work, f"{name}.log"))

    # Warm-ups: ours starts (or finds) the engine; the anchor's first run warms the OS caches.
    warmup = {name: run(name) for name in variants}
    print(f"B5 warm-up ours={warmup['ours']:.1f}s anchor={warmup['anchor']:.1f}s (untimed)", flush=True)
    c9 = [os.path.join(lake, "b", "c9") for lake in (ours_lake, anchor_lake)]
    rows = _check_equal_c9(*c9)  # before any timing counts
    print(f"B5 c9 equal in ours and anchor ({rows} rows)", flush=True)
    times: dict[str, list[float]] = {"ours": [], "anchor": []}
    for rep in range(1, reps + 1):
        for name in variants:  # A/B/A/B
            times[name].append(run(name))
        print(f"B5 rep {rep}/{reps} ours={times['ours'][-1]:.2f}s anchor={times['anchor'][-1]:.2f}s", flush=True)
    _check_equal_c9(*c9)  # the timed runs wrote the same tables again
    ours, anchor = _summary(times["ours"]), _summary(times["anchor"])
    ratio = ours["median_s"] / anchor["median_s"]
    result = {"ours": ours, "anchor": anchor, "warmup_s": warmup, "ratio": ratio, "c9_rows": rows,
              "goal_ratio": GOALS["B5"], "ok": ratio <= GOALS["B5"]}
    print(f"B5 ratio={ratio:.2f} ours={ours['median_s']:.2f}s anchor={anchor['median_s']:.2f}s n={reps} "
          f"goal<={GOALS['B5']:.2f} {_verdict(result['ok'])}", flush=True)
    return result


# -- main ----------------------------------------------------------------------------------
# -- 4. first-write -------------------------------------------------------------------------
def bench_first_write(tmp: str, env: dict, reps: int) -> dict:
    """A first materialization of a FIRST_WRITE_ROWS-row table, each rep on a new lake root."""
    import deltalake

    work = os.path.join(tmp, "first_write")
    project = os.path.join(work, "project")
    os.makedirs(project)
    with open(os.path.join(project, "big.sql"), "w") as f:
        f.write("-- materialize delta://big/hashes\n\n"
                f"SELECT id, sha2(CAST(id AS STRING), 256) AS h FROM range({FIRST_WRITE_ROWS})\n")
    select = [*MATERIALIZE, "-m", "assetlake_dagster.definitions", "--select", "big/hashes"]
    log = os.path.join(work, "runs.log")
    times = []
    for rep in range(1, reps + 1):
        lake = os.path.join(work, f"lake{rep}")
        run_env = dict(env, ASSETLAKE_PROJECT_DIR=project, ASSETLAKE_LAKE_ROOT=lake)
        times.append(_timed(select, run_env, work, log, timeout=1800))
        table = deltalake.DeltaTable(os.path.join(lake, "big", "hashes"))
        rows = sum(table.get_add_actions(flatten=True).column("num_records").to_pylist())
        if (table.version(), rows) != (0, FIRST_WRITE_ROWS):
            raise BenchError(f"first-write rep {rep}: version {table.version()} with {rows} rows, "
                             f"not version 0 with {FIRST_WRITE_ROWS}")
        print(f"first-write rep {rep}/{reps} {times[-1]:.1f}s, version 0 with {rows} rows", flush=True)
    result = dict(_summary(times), rows=FIRST_WRITE_ROWS, ok=True)
    print(f"first-write rows={FIRST_WRITE_ROWS} median={result['median_s']:.1f}s n={reps} succeeded", flush=True)
    return result


BENCHMARKS = {"one-asset": bench_one_asset, "demo-all": bench_demo_all, "B5": bench_b5,
              "first-write": bench_first_write}


def _stop_engine(tmp: str, env: dict) -> None:
    """Stop the warm engine of our state folder (one for all lakes: ASSETLAKE_ENGINE_DIR)."""
    stop = subprocess.run([ASSETLAKE, "engine", "stop", "--lake-root", tmp], env=env, cwd=tmp,
                          capture_output=True, text=True, timeout=180)
    print((stop.stdout or stop.stderr).strip(), flush=True)


def _on_sigterm(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # the same clean-up path as Ctrl-C


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=None,
                        help="timed repetitions (default: 5; demo-all 1 as a run takes minutes)")
    parser.add_argument("--only", choices=list(BENCHMARKS), help="run only this benchmark")
    parser.add_argument("--out", help="the JSON file of all figures (default: bench_engine.json in the temp folder)")
    args = parser.parse_args()
    if args.reps is not None and args.reps < 1:
        parser.error("--reps must be at least 1")
    tmp = tempfile.mkdtemp(prefix="bench_engine.")
    out = os.path.abspath(args.out) if args.out else os.path.join(tmp, "bench_engine.json")
    env = _base_env(tmp)
    print(f"temp folder {tmp} (logs, lakes, DAGSTER_HOME, engine state)", flush=True)
    report = {"temp_folder": tmp, "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(), "benchmarks": {}}
    # A background job of a non-interactive shell starts with SIGINT ignored: restore Ctrl-C.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    code = 0
    try:
        for name, bench in BENCHMARKS.items():
            if args.only in (None, name):
                result = bench(tmp, env, args.reps or DEFAULT_REPS[name])
                report["benchmarks"][name] = result
                code = max(code, 0 if result["ok"] else 1)
    except BenchError as err:
        print(f"ERROR: {err}", file=sys.stderr, flush=True)
        report["error"], code = str(err), 2
    except KeyboardInterrupt:
        print("interrupted: stopping what this script started …", file=sys.stderr, flush=True)
        report["error"], code = "interrupted", 2
    finally:
        # A second Ctrl-C must not cut the clean-up short and leave JVMs behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _stop_all()
        _stop_engine(tmp, env)
        report["loadavg_end"] = os.getloadavg()
        with open(out, "w") as f:
            json.dump(report, f, indent=2)
        print(f"figures: {out}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
