#!/usr/bin/env bash
# Set up (idempotent) and start `dagster dev` on the demo code location (workspace.yaml).
# Open http://127.0.0.1:3000 and click "Materialize all". Ctrl-C (or SIGTERM) stops it; the
# warm Spark engine its runs shared stops after its idle timeout or `.venv/bin/assetlake engine stop`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.assetlake/dagster_home}"
mkdir -p "$DAGSTER_HOME"
[ -f "$DAGSTER_HOME/dagster.yaml" ] || cp scripts/dagster.yaml "$DAGSTER_HOME/dagster.yaml"
exec .venv/bin/python scripts/dagster_dev.py -w workspace.yaml -h 127.0.0.1 -p "${PORT:-3000}" "$@"
