#!/usr/bin/env bash
# Every benchmark of docs/performance.md, each printing one result line on stdout:
#
#   bash scripts/bench.sh [B1 B2 B3 B4 B5 B6 B7 B8 B9] [--reps 5] [--out bench_results.json] [options]
#
# Default: all of them (a few hours on a 2-core machine: B2's 365 single-partition runs and 365
# dbt microbatches alone took 38 minutes; B9 at its default 10M rows, some minutes more). B1, B2,
# B3, B6 and B7 compare writes side by side (B8 and B9 run Dagster in-process, no dbt), all of them
# in one process and one SparkSession (scripts/bench/run.py, in .venv-bench, where dbt-spark
# runs in session mode on the same session; `scripts/bench/run.py --help` lists their options);
# B4 is scripts/bench_load.py (definitions load against dagster-dbt) and B5
# scripts/bench_engine.py --only B5 (a Dagster chain on the warm engine against PySparkResource),
# both whole processes run from the product venv. Progress goes to stderr, every figure of the
# write benchmarks to --out (default ./bench_results.json); B4 and B5 print where their JSON is.
# Exit code: 0 every goal met, 1 one missed, 2 error (the worst of the parts).
#
# Setup (idempotent): the product venv (scripts/setup.sh: .venv and the Delta jars), and the
# baseline venv .venv-bench (scripts/bench_requirements.txt: dagster, dbt-core, dbt-spark with
# its session extra, delta-spark...) with the product installed into it with --no-deps. The
# harness runs in .venv-bench: dbt-spark's `method: session` runs dbt in the process that owns
# the SparkSession, so dbt and the product must share one interpreter to share one session.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh >&2

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv-bench/bin/python ]; then
  "$PYTHON" -m venv .venv-bench
fi
stamp=.venv-bench/.assetlake-bench-installed
if [ ! -f "$stamp" ] || [ scripts/bench_requirements.txt -nt "$stamp" ] || [ setup.cfg -nt "$stamp" ]; then
  echo "bench: installing scripts/bench_requirements.txt and the product (--no-deps) into .venv-bench" >&2
  .venv-bench/bin/python -m pip install --quiet -r scripts/bench_requirements.txt
  .venv-bench/bin/python -m pip install --quiet --no-deps -e .
  touch "$stamp"
fi
# The product and dbt in one interpreter, with the product venv's pyspark/delta-spark pair.
.venv-bench/bin/python - <<'PY' >&2
from importlib.metadata import version
import assetlake_dagster.writes, dbt.cli.main, dbt.adapters.spark  # noqa: F401
print("bench: .venv-bench ready: " + ", ".join(f"{p} {version(p)}" for p in
      ("assetlake-dagster", "dagster", "dbt-core", "dbt-spark", "pyspark", "delta-spark")))
PY

export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}
export DBT_SEND_ANONYMOUS_USAGE_STATS=false

# Benchmark names choose what runs (default: all); everything else goes to run.py.
names=() options=()
for arg in "$@"; do
  case "${arg^^}" in
    B[1-9]) names+=("${arg^^}") ;;
    *) options+=("$arg") ;;
  esac
done
[ ${#names[@]} -gt 0 ] || names=(B1 B2 B3 B4 B5 B6 B7 B8 B9)
writes=() load=0 engine=0
for name in "${names[@]}"; do
  case "$name" in
    B4) load=1 ;;
    B5) engine=1 ;;
    *) writes+=("$name") ;;
  esac
done

# Exit code: the worst of the parts (0 every goal met, 1 one missed, 2 error).
code=0
worst() { if [ "$1" -gt "$code" ]; then code=$1; fi; }
if [ ${#writes[@]} -gt 0 ]; then
  rc=0
  .venv-bench/bin/python scripts/bench/run.py "${writes[@]}" ${options[@]+"${options[@]}"} || rc=$?
  worst "$rc"
fi
# B4 and B5 measure whole processes (definitions load; Dagster runs on the warm engine), so they
# run from the product venv in scripts of their own; their result lines are printed as they come.
# Their whole output goes to stderr, their result lines to stdout too.
part() {
  local pattern=$1; shift
  set +e
  "$@" | tee /dev/stderr | { grep "$pattern" || true; }
  local rc=${PIPESTATUS[0]}
  set -e
  worst "$rc"
}
if [ "$load" = 1 ]; then
  part '^B4' .venv/bin/python scripts/bench_load.py --files 1000 --reps 5
fi
if [ "$engine" = 1 ]; then
  part '^B5 ratio' .venv/bin/python scripts/bench_engine.py --only B5
fi
exit "$code"
