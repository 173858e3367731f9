#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite against real local Spark + Delta.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with s3  # the S3 lane (e2e/test_s3_lake.py) needs S3A
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
# Two workers (pytest-xdist), a test file each at a time (the e2e files as one unit, so two
# never run at once: conftest.py): the Spark and Dagster tests wait on JVMs, subprocesses and
# daemons much of the time, so two share the 2 cores well. Each worker has its own in-process
# Spark session and its own warm engine. Units are handed out in conftest's order (the longest
# layers first), not re-sorted by test count.
# ASSETLAKE_TEST_WORKERS=0 runs everything in this process.
exec .venv/bin/python -m pytest -n "${ASSETLAKE_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
