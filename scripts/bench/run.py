"""The write benchmarks of ``docs/performance.md`` (B1, B2, B3, B6, B7, B8, B9), side by side in one process and
one SparkSession. Run through ``bash scripts/bench.sh [B1 B2 B3 B6 B7] [options]``, which sets up the
venv (.venv-bench: dbt-core + dbt-spark and the product in one interpreter) and calls::

    .venv-bench/bin/python scripts/bench/run.py [B1 B2 B3 B6 B7 B8 B9] [--rows N] [--shape all] [--b3-rows N ...]
                                                [--reps N] [--out bench_results.json] [...; see --help]

Prints one line per benchmark on stdout (``B1 ratio=0.43 goal<=0.40 MISSED commits=1/1/1 ...``; B7 one
per shape, ``--shape random|clustered|unchanged|identical|all``: ``B7-random ratio=... goal<=1.05 ...``),
progress lines on stderr, and writes every figure as JSON to ``--out``. Everything is written
in a fresh temp folder (``--workdir`` to keep it), removed at the end.

Exit code: 0 when every goal is met, 1 when one is missed, 2 on an error (unequal outputs, a
failed write or dbt run, Ctrl-C).
"""

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import BenchError, progress, spark_session, write_json  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMPLEMENTED = ("B1", "B2", "B3", "B6", "B7", "B8", "B9")
#: The table properties of a table the product creates with SparkDeltaResource(deletion_vectors=True).
DELETION_VECTORS = {"delta.enableDeletionVectors": "true"}
LATER = {"B4": "scripts/bench_load.py, which scripts/bench.sh B4 runs",
         "B5": "scripts/bench_engine.py --only B5, which scripts/bench.sh B5 runs"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("benchmarks", nargs="*", help=f"default: all implemented ({' '.join(IMPLEMENTED)})")
    parser.add_argument("--out", default=os.path.join(REPO, "bench_results.json"))
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per variant (after a warm-up; default 5)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="B7 target rows (source: a tenth)")
    parser.add_argument("--b7-reps", type=int, default=None, help="B7 repetitions (default --reps)")
    parser.add_argument("--shape", choices=["random", "clustered", "unchanged", "identical", "all"], default="random",
                        help="B7's shape: random (B7-random, ours/bare <= 1.05), clustered (B7-clustered: target "
                        "clustered by key, changes in 3 key ranges; ours/dbt <= 0.5), unchanged (B7-unchanged: "
                        "the random merge rerun, each variant's first run untimed; ours/dbt <= 0.3, 0 commits), "
                        "identical (B7-identical: a never-merged source identical to the target's rows; no goal), "
                        "or all four in sequence")
    parser.add_argument("--b3-rows", type=int, nargs="+", default=[10_000], help="B3 sizes, e.g. 10000 1000000")
    parser.add_argument("--b3-reps-large", type=int, default=3, help="B3 repetitions at >= 1M rows")
    parser.add_argument("--b3-strategies", nargs="+", default=None,
                        help="B3 subset: replace merge append partition_replace history")
    parser.add_argument("--b1-rows", type=int, default=1_000_000, help="B1 keys (history: N current + N closed)")
    parser.add_argument("--b1-reps", type=int, default=None, help="B1 repetitions (default --reps)")
    parser.add_argument("--b2-days", type=int, default=365, help="B2 days backfilled (1..1000)")
    parser.add_argument("--b2-rows-per-day", type=int, default=10_000, help="B2 source rows per day")
    parser.add_argument("--b2-reps", type=int, default=None, help="B2 repetitions of ours (default --reps)")
    parser.add_argument("--b2-anchor-reps", type=int, default=1,
                        help="B2 repetitions of the 365 single-partition runs and of dbt microbatch (slow: minutes each)")
    parser.add_argument("--b6-rows", type=int, default=100_000, help="B6 keys (default 100k: 24 cells x 3 variants)")
    parser.add_argument("--b6-churns", type=float, nargs="+", default=[0, 0.1, 1, 10], help="B6 churns, %% of the keys")
    parser.add_argument("--b6-histories", type=int, nargs="+", default=[1, 10, 30], help="B6 history lengths (runs)")
    parser.add_argument("--b6-reps", type=int, default=3, help="B6 repetitions per cell")
    parser.add_argument("--b6-dvs", nargs="+", choices=["off", "on"], default=["off", "on"], help="B6 deletion vectors")
    parser.add_argument("--b6-png", default=os.path.join(REPO, "docs", "img", "b6_churn.png"), help="B6 plot ('' = none)")
    parser.add_argument("--b8-reps", type=int, default=None,
                        help="B8 repetitions, each on a fresh lake (default: --reps if given, else 1; minutes each)")
    parser.add_argument("--b9-rows", type=int, default=10_000_000, help="B9 rows of the upstream raw/events")
    parser.add_argument("--b9-reps", type=int, default=None,
                        help="B9 repetitions, each a new batch of changes (default: --reps if given, else 1; minutes each)")
    parser.add_argument("--b9-warmup", action=argparse.BooleanOptionalAction, default=True,
                        help="B9: one untimed round (a batch of changes, both runs) before the timed ones (default: on)")
    parser.add_argument("--ours-deletion-vectors", action=argparse.BooleanOptionalAction, default=True,
                        help="B1, B7: ours (and bare) start from a table with deletion vectors, as the product "
                        "creates it with SparkDeltaResource(deletion_vectors=True) (default: on)")
    parser.add_argument("--deletion-vectors", action="store_true", help="B7: the base target (so dbt's table too) has deletion vectors on; ours and bare always get the product's table properties")
    parser.add_argument("--workdir", default=None, help="keep the lakes here (default: a temp folder, removed)")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    b8_reps = args.b8_reps or args.reps or 1  # B8: minutes per repetition
    b9_reps = args.b9_reps or args.reps or 1  # B9: minutes per repetition at 10M rows
    args.reps = args.reps or 5
    chosen = [b.upper() for b in args.benchmarks] or list(IMPLEMENTED)
    unknown = [b for b in chosen if b not in IMPLEMENTED]
    if unknown:
        for b in unknown:
            print(f"{b} not implemented here ({LATER.get(b, 'unknown benchmark')})", file=sys.stderr)
        return 2
    workdir = args.workdir or tempfile.mkdtemp(prefix="assetlake-bench-")
    os.makedirs(workdir, exist_ok=True)
    results: dict = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0]},
        "command": " ".join(sys.argv), "benchmarks": {},
    }
    code = 0
    try:
        progress(f"starting Spark (workdir {workdir})")
        spark = spark_session(workdir, args.cores)
        from importlib.metadata import PackageNotFoundError, version

        def installed(package: str) -> str:
            try:
                return version(package)
            except PackageNotFoundError:  # B6 runs without dbt (e.g. from the product venv)
                return "not installed"

        results["versions"] = {p: installed(p) for p in ("pyspark", "delta-spark", "dagster", "dbt-core", "dbt-spark")}
        ours_props = DELETION_VECTORS if args.ours_deletion_vectors else None
        for name in chosen:
            if name == "B1":
                import b1_scd2

                res = b1_scd2.run(spark, workdir, args.b1_rows, args.b1_reps or args.reps, table_properties=ours_props)
                results["benchmarks"]["B1"] = res
                print(res["line"], flush=True)
                code = max(code, 0 if res["ok"] else 1)
            elif name == "B2":
                import b2_backfill

                res = b2_backfill.run(spark, workdir, args.b2_days, args.b2_rows_per_day,
                                      args.b2_reps or args.reps, args.b2_anchor_reps)
                results["benchmarks"]["B2"] = res
                print(res["line"], flush=True)
                code = max(code, 0 if res["ok"] else 1)
            elif name == "B6":
                import b6_churn

                res = b6_churn.run(spark, workdir, args.b6_rows, args.b6_churns, args.b6_histories, args.b6_reps,
                                   out_png=args.b6_png or None, dvs=[d == "on" for d in args.b6_dvs])
                results["benchmarks"]["B6"] = res
                print(res["line"], flush=True)
                code = max(code, 0 if res["ok"] else 1)
            elif name == "B7":
                import b7_merge

                shapes = b7_merge.SHAPES if args.shape == "all" else (args.shape,)
                for shape in shapes:
                    res = b7_merge.run(spark, workdir, args.rows, args.b7_reps or args.reps,
                                       deletion_vectors=args.deletion_vectors, table_properties=ours_props,
                                       shape=shape)
                    results["benchmarks"][res["benchmark"]] = res
                    print(res["line"], flush=True)
                    code = max(code, 0 if res["ok"] else 1)
                    write_json(args.out, results)
            elif name == "B8":
                import b8_unchanged

                res = b8_unchanged.run(spark, workdir, b8_reps)
                results["benchmarks"]["B8"] = res
                print(res["line"], flush=True)
                code = max(code, 0 if res["ok"] else 1)
            elif name == "B9":
                import b9_change_feed

                res = b9_change_feed.run(spark, workdir, args.b9_rows, b9_reps, warmup=args.b9_warmup)
                results["benchmarks"]["B9"] = res
                print(res["line"], flush=True)
                code = max(code, 0 if res["ok"] else 1)
            elif name == "B3":
                import b3_overhead

                for res in b3_overhead.run(spark, workdir, args.b3_rows, args.reps, args.b3_reps_large,
                                           args.b3_strategies):
                    results["benchmarks"][res["id"]] = res
                    print(res["line"], flush=True)
                    code = max(code, 0 if res["ok"] else 1)
            write_json(args.out, results)
    except (BenchError, Exception, KeyboardInterrupt) as exc:  # noqa: BLE001
        results["error"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
        print(f"error: {results['error']}", file=sys.stderr)
        code = 2
    finally:
        results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        results["exit_code"] = code
        write_json(args.out, results)
        print(f"results: {os.path.abspath(args.out)}", flush=True)
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
