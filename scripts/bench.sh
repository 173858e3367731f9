#!/usr/bin/env bash
# The benchmarks of BENCHMARKS.md that compare writes side by side (today B1, B3 and B7), in one
# process and one SparkSession:
#
#   bash scripts/bench.sh [B1 B3 B7] [--rows 1000000] [--b3-rows 10000 1000000] [--reps 5]
#                         [--b7-reps N] [--out bench_results.json] [--deletion-vectors]
#
# Default: every implemented benchmark (B1 at 1M+1M rows, B3 at 10k rows, B7 at 1M/100k rows, 5 repetitions).
# Prints one line per benchmark (`B7 ratio=0.62 goal<=0.70 ok commits=1/1/1 ...`) on stdout,
# progress on stderr, and writes every figure to --out (default ./bench_results.json).
# Exit code: 0 every goal met, 1 one missed, 2 error. B2 and B6 are not implemented yet;
# B4 is scripts/bench_load.py and B5 scripts/bench_engine.py --only B5 (product venv).
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
exec .venv-bench/bin/python scripts/bench/run.py "$@"
