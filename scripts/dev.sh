#!/usr/bin/env bash
# Set up (idempotent) and start `dagster dev` on the demo code location (workspace.yaml).
# Open http://127.0.0.1:3000 and click "Materialize all". Ctrl-C (or SIGTERM) stops it; the
# warm Spark engine its runs shared stops after its idle timeout or `.venv/bin/assetlake engine stop`.
set -euo pipefail
cd "$(dirname "$0")/.."
case "$(printf '%s' "${ASSETLAKE_LAKE_ROOT:-}" | tr '[:upper:]' '[:lower:]')" in
  s3a://*|s3://*|s3n://*) bash scripts/setup.sh --with s3 ;;  # a lake in a bucket: S3A's jars too
  *) bash scripts/setup.sh ;;
esac
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.assetlake/dagster_home}"
mkdir -p "$DAGSTER_HOME"
[ -f "$DAGSTER_HOME/dagster.yaml" ] || cp scripts/dagster.yaml "$DAGSTER_HOME/dagster.yaml"

# The code location: the bundled demo as workspace.yaml names it, or your project
# (ASSETLAKE_PROJECT_DIR) under ASSETLAKE_LOCATION_NAME (default: the folder's name).
workspace=workspace.yaml
if [ -n "${ASSETLAKE_PROJECT_DIR:-}" ] || [ -n "${ASSETLAKE_LOCATION_NAME:-}" ]; then
  default_name=assetlake_demo
  if [ -n "${ASSETLAKE_PROJECT_DIR:-}" ]; then
    default_name=$(basename "$(cd "$ASSETLAKE_PROJECT_DIR" && pwd)" | tr -c 'A-Za-z0-9_\n' '_')
  fi
  workspace="$DAGSTER_HOME/workspace.yaml"
  cat >"$workspace" <<EOF
load_from:
  - python_module:
      module_name: assetlake_dagster.definitions
      location_name: ${ASSETLAKE_LOCATION_NAME:-$default_name}
      working_directory: $PWD
EOF
fi
if [ -z "${ASSETLAKE_PROJECT_DIR:-}" ]; then
  # The demo's external landing table, watched by a sensor: seeded once (January and
  # February), so that the first "Materialize all" finds it. A no-op once it exists.
  .venv/bin/assetlake demo land --seed
fi
exec .venv/bin/python scripts/dagster_dev.py -w "$workspace" -h 127.0.0.1 -p "${PORT:-3000}" "$@"
