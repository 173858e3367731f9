#!/usr/bin/env bash
# UI smoke test: a real headless Chromium drives the Dagster UI of the demo project.
#
#   bash scripts/ui_smoke.sh [screenshot dir]      (default: docs/img)
#
# Installs what it needs, idempotently (Debian's chromium through apt-get when
# /usr/bin/chromium is missing; playwright-core from npm into scripts/ui/node_modules;
# the Python side through scripts/setup.sh), starts `dagster dev` on 127.0.0.1 with a
# throwaway DAGSTER_HOME (with the repo's scripts/dagster.yaml: up to 4 runs at once on one warm Spark engine) and lake
# (the user's .assetlake/ is never touched), seeding the lake's external landing table
# (landing/payments, January and February) first as scripts/dev.sh does, and runs
# scripts/ui_smoke.mjs: the asset keys (12 materializable + the external landing/payments)
# are listed, "Materialize all…" is clicked, then "All" and "Launch backfill" in the dialog
# Dagster opens for partitioned assets (anchored on staging/payments, the only partitioned
# root); the daemon's batch runs must all succeed and every partition be materialized. Then
# a run of raw/customers + analytics/customers with a duplicate customer in its run config
# (launched as the launchpad does) must fail on the data test unique_customer_id with nothing
# written (the table keeps the backfill's materialization), the asset's Checks tab show the
# check failed, and "Execute all" there run the checks on their own against the committed
# table, passing. Then the automation: the dim_customer schedule and both sensors RUNNING
# (GraphQL and the Automation page), the group jobs listed; and, without a click,
# `assetlake demo land` appends a day to the landing table: the watch sensor must run
# staging/payments for exactly that day and the automation sensor then
# analytics/payment_reconciliation for that day, nothing else. docs/img/asset_graph.png,
# backfill.png, asset_metadata.png, asset_lineage.png, asset_partitions.png, asset_graph_materialized.png,
# failed_check.png, automation.png and landing_runs.png are written. `dagster dev` is always
# stopped at the end. Exits non-zero on any failure; the temp dir (dagster log, failure
# screenshots) is then kept.
#
# Environment: UI_SMOKE_LAKE=s3 (the lake in a bucket: a moto S3 server on 127.0.0.1, the
# standard AWS variables pointing at it, ASSETLAKE_LAKE_ROOT=s3a://ui-smoke/lake; the same
# flow, and every demo table read back from the bucket by delta-rs at the end),
# UI_SMOKE_PORT (default: a free port), UI_SMOKE_RUN_TIMEOUT_S (the backfill's
# time limit, default 900), UI_SMOKE_STEP_TIMEOUT_S (each later single run's, and the landing
# flow's, default 600),
# UI_SMOKE_SKIP_SETUP=1 (skip scripts/setup.sh), UI_SMOKE_SETUP_ONLY=1 (install what it needs,
# then stop), UI_SMOKE_KEEP_TMP=1.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shot_dir=${1:-$repo/docs/img} # a relative path is relative to the caller's directory
shot_dir=$(mkdir -p "$shot_dir" && cd "$shot_dir" && pwd)
cd "$repo"
start=$(date +%s)
say() { echo "[ui_smoke.sh +$(($(date +%s) - start))s] $*"; }

# --- 1. What it needs, installed the way a fresh CI machine would (idempotent). ---------
if [ ! -x /usr/bin/chromium ]; then
  say "installing Debian's chromium"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium
fi
/usr/bin/chromium --version 2>/dev/null | head -1 || true

# playwright-core in scripts/ui/node_modules, pinned by scripts/ui/package-lock.json. It
# never downloads a browser (the script uses /usr/bin/chromium); the variable makes sure.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
ui="$repo/scripts/ui"
if [ ! -f "$ui/node_modules/playwright-core/package.json" ] \
  || [ ! -f "$ui/node_modules/.package-lock.json" ] \
  || [ "$ui/package-lock.json" -nt "$ui/node_modules/.package-lock.json" ]; then
  say "installing playwright-core (npm ci in scripts/ui)"
  (cd "$ui" && npm ci --no-audit --no-fund --loglevel=error)
fi

lake_kind=${UI_SMOKE_LAKE:-local}
case "$lake_kind" in
  local) setup_args=() ;;
  s3) setup_args=(--with s3) ;;
  *) echo "UI_SMOKE_LAKE=$lake_kind: not a lake kind. Use local (the default) or s3." >&2; exit 2 ;;
esac
if [ "${UI_SMOKE_SKIP_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh "${setup_args[@]}"
fi
if [ "${UI_SMOKE_SETUP_ONLY:-0}" = 1 ]; then
  say "set up (UI_SMOKE_SETUP_ONLY=1): not running the smoke test"
  exit 0
fi

# --- 2. dagster dev on 127.0.0.1, throwaway DAGSTER_HOME and lake. ----------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/assetlake-ui-smoke.XXXXXX")
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$repo/.venv/bin/python"
export DAGSTER_HOME="$tmp/dagster_home"
# The engine's JVM compiles with C1 alone (unless the caller chose its options): the demo's
# tables are tiny, and C2 compiling the code the engine passes through was most of its CPU
# (measured in CI: 114 of 177 CPU-s after 16 minutes; docs/ci-time.md). With C1 alone the JVM
# reserves a 48 MB code cache, which fills and is swept over and over: 240 MB, as with C2.
# Users' engines keep C2.
export SPARK_SUBMIT_OPTS="${SPARK_SUBMIT_OPTS:--XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m}"
# The bundled demo on the warm engine of the throwaway lake, whatever the caller's shell says.
unset ASSETLAKE_PROJECT_DIR ASSETLAKE_ENGINE_DIR ASSETLAKE_SPARK_MODE ASSETLAKE_SPARK_REMOTE ASSETLAKE_SPARK_MASTER
mkdir -p "$DAGSTER_HOME"
free_port() {
  "$repo/.venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
s3_pid=""
if [ "$lake_kind" = s3 ]; then
  # A throwaway bucket on loopback, reached through the standard AWS variables only, as a
  # user's lake on S3 would be (an endpoint on an IP address: path-style, plain HTTP).
  s3_port=$(free_port)
  "$repo/.venv/bin/moto_server" -H 127.0.0.1 -p "$s3_port" >"$tmp/moto.log" 2>&1 &
  s3_pid=$!
  trap 'kill "$s3_pid" 2>/dev/null' EXIT  # until cleanup's trap below replaces it
  export AWS_ENDPOINT_URL="http://127.0.0.1:$s3_port" AWS_REGION=us-east-1
  export AWS_ACCESS_KEY_ID=ui-smoke AWS_SECRET_ACCESS_KEY=ui-smoke-secret
  unset AWS_SESSION_TOKEN AWS_PROFILE
  for _ in $(seq 60); do
    curl -sf --max-time 2 "$AWS_ENDPOINT_URL" >/dev/null 2>&1 && break
    sleep 0.5
  done
  "$repo/.venv/bin/python" -c 'import boto3; boto3.client("s3").create_bucket(Bucket="ui-smoke")'
  export ASSETLAKE_LAKE_ROOT="s3a://ui-smoke/lake"
else
  export ASSETLAKE_LAKE_ROOT="$tmp/lake"
  mkdir -p "$ASSETLAKE_LAKE_ROOT"
fi
say "lake: $ASSETLAKE_LAKE_ROOT"
# The instance scripts/dev.sh gives users: several runs at once on the lake's one warm
# Spark engine, no telemetry.
cp scripts/dagster.yaml "$DAGSTER_HOME/dagster.yaml"
# The watch sensor polls the external tables' Delta logs every 5 s instead of its default 30:
# the smoke lands a day of payments and waits for the sensor's run, so each second of
# polling interval is a second of CI time. (Read by the code server that dagster dev starts.)
export ASSETLAKE_WATCH_INTERVAL_S=5

port=${UI_SMOKE_PORT:-$(free_port)}
url="http://127.0.0.1:$port"
dagster_log="$tmp/dagster_dev.log"

dagster_pid=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$dagster_pid" ] && kill -0 -- "-$dagster_pid" 2>/dev/null; then
    say "stopping dagster dev (process group $dagster_pid)"
    # SIGINT, as Ctrl-C would: dagster dev stops its webserver, daemon and code server.
    kill -INT -- "-$dagster_pid" 2>/dev/null || true
    for _ in $(seq 30); do
      kill -0 -- "-$dagster_pid" 2>/dev/null || break
      sleep 1
    done
    if kill -0 -- "-$dagster_pid" 2>/dev/null; then
      say "dagster dev still running after 30 s: SIGKILL to its process group"
      kill -KILL -- "-$dagster_pid" 2>/dev/null || true
    fi
  fi
  # The warm Spark engine the runs shared outlives dagster dev by design; stop it.
  "$repo/.venv/bin/assetlake" engine stop --lake-root "$ASSETLAKE_LAKE_ROOT" || true
  if [ -n "$s3_pid" ]; then kill "$s3_pid" 2>/dev/null || true; fi
  if [ "$rc" = 0 ] && [ "${UI_SMOKE_KEEP_TMP:-0}" != 1 ]; then
    rm -rf "$tmp"
  else
    echo "--- last lines of $dagster_log ---" >&2
    tail -n 40 "$dagster_log" >&2 2>/dev/null || true
    say "kept $tmp (dagster log, DAGSTER_HOME, lake, failure screenshots)" >&2
  fi
  say "exit $rc after $(($(date +%s) - start))s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The demo's external landing table must exist before "Materialize all" (staging/payments
# reads it): seeded with January and February, as scripts/dev.sh does. This starts the
# lake's warm Spark engine, which dagster dev's runs then share (cleanup stops it).
say "seeding the landing table: assetlake demo land --seed"
"$repo/.venv/bin/assetlake" demo land --seed

say "starting dagster dev on $url (log: $dagster_log)"
# In its own session and process group, so that the webserver, the daemon, the code server
# and the run workers (with their Spark JVMs) are stopped together. A background job of a
# non-interactive shell starts with SIGINT ignored, and Python then never turns SIGINT into
# KeyboardInterrupt, which is how `dagster dev` shuts down: the launcher restores the
# default SIGINT/SIGTERM handling before exec.
"$repo/.venv/bin/python" -c '
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
os.setsid()
os.execv(sys.argv[1], sys.argv[1:])
' "$repo/.venv/bin/dagster" dev -w workspace.yaml -h 127.0.0.1 -p "$port" \
  >"$dagster_log" 2>&1 </dev/null &
dagster_pid=$!

for i in $(seq 120); do
  if curl -sf --max-time 2 "$url/server_info" >/dev/null 2>&1; then
    say "webserver up after ${i}s: $(curl -s --max-time 2 "$url/server_info")"
    break
  fi
  if ! kill -0 "$dagster_pid" 2>/dev/null; then
    say "dagster dev exited before its webserver answered" >&2
    exit 1
  fi
  if [ "$i" = 120 ]; then
    say "webserver did not answer within 120 s" >&2
    exit 1
  fi
  sleep 1
done

# --- 3. The browser. --------------------------------------------------------------------
UI_SMOKE_DEBUG_DIR="$tmp" node "$repo/scripts/ui_smoke.mjs" "$url" "$shot_dir"
say "screenshots in $shot_dir: $(cd "$shot_dir" && ls asset_graph.png backfill.png asset_metadata.png asset_lineage.png asset_partitions.png asset_graph_materialized.png failed_check.png automation.png landing_runs.png | tr '\n' ' ')"
if [ "$lake_kind" = s3 ]; then
  # Every table of the demo, read back from the bucket by another Delta reader (delta-rs).
  "$repo/.venv/bin/python" - <<'PY'
import os
import sys

import boto3
import deltalake

from assetlake_dagster.lake.storage import S3Settings

keys = boto3.client("s3").get_paginator("list_objects_v2").paginate(Bucket="ui-smoke", Prefix="lake/")
tables = sorted({k["Key"].split("/_delta_log/")[0] for page in keys for k in page.get("Contents", []) if "/_delta_log/" in k["Key"]})
options = S3Settings.from_env(os.environ).storage_options(os.environ)
for table in tables:
    delta = deltalake.DeltaTable(f"s3://ui-smoke/{table}", storage_options=options)
    rows = delta.to_pyarrow_table().num_rows
    print(f"[ui_smoke.sh] delta-rs reads s3://ui-smoke/{table}: version {delta.version()}, {rows} rows")
    assert rows > 0, table
    # One commit per run, the first one too: no header changed here, so no table has a
    # metadata-only commit (a description or layout set after its first write).
    operations = [h["operation"] for h in delta.history()]
    after = {"SET TBLPROPERTIES", "CHANGE COLUMN", "CHANGE COLUMNS", "CLUSTER BY"} & set(operations)
    assert not after, f"{table}: metadata-only commits {sorted(after)} in {operations}"
assert len(tables) == 14, f"expected the demo's 14 tables in the bucket, found {len(tables)}: {tables}"
# Every check passed. Leave without the interpreter's teardown: in one CI run (77c7de2) this
# process aborted there, after all the tables were read ("terminate called without an active
# exception", exit 134, from a native runtime's threads).
sys.stdout.flush()
os._exit(0)
PY
fi
