#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite against real local Spark + Delta.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with s3  # the S3 lane (e2e/test_s3_lake.py) needs S3A
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
# Two workers (pytest-xdist) on units of test files (conftest.py): one worker runs the in-process
# Spark and Dagster files (one in-process JVM), the other the files of its warm engine (no
# in-process JVM); the files that start engines of their own and the unit lane fill in behind
# whichever is nearly done first. The tests wait on JVMs, subprocesses and daemons much of the
# time, so two workers share the 2 cores well. Units are handed out in conftest's order, not
# re-sorted by test count.
# ASSETLAKE_TEST_WORKERS=0 runs everything in this process.
exec .venv/bin/python -m pytest -n "${ASSETLAKE_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
