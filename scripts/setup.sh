#!/usr/bin/env bash
# Set up everything on a fresh machine: a virtualenv in .venv with the package and its
# test extras, then `assetlake setup` (the Delta jars from Maven Central into
# ~/.cache/assetlake/jars, and the JVM archive). Idempotent: a second run only checks.
#
# `--with s3` also fetches Hadoop's S3A connector for s3a:// lakes: hadoop-aws matching
# PySpark's Hadoop and the AWS SDK bundle it was built against (~560 MB), into
# ~/.cache/assetlake/jars/hadoop-aws-<version>. ASSETLAKE_SETUP_WITH=s3 does the same.
set -euo pipefail
cd "$(dirname "$0")/.."
with="${ASSETLAKE_SETUP_WITH:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --with) with="$with,${2:?--with needs a value: s3}"; shift 2 ;;
    --with=*) with="$with,${1#--with=}"; shift ;;
    *) echo "setup: unknown argument $1 (usage: scripts/setup.sh [--with s3])" >&2; exit 2 ;;
  esac
done

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.assetlake-installed
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  # uv (from PyPI) downloads in parallel: a cold install took 63 s against pip's 84 s here. It
  # uses the system's certificates and pip's find-links, like pip; if it fails, pip installs.
  if ! { .venv/bin/python -m pip install --quiet uv \
         && UV_NATIVE_TLS=1 .venv/bin/uv pip install --quiet --python .venv/bin/python \
              ${PIP_FIND_LINKS:+--find-links "$PIP_FIND_LINKS"} -e '.[test]'; }; then
    echo "setup: uv could not install; installing with pip" >&2
    .venv/bin/python -m pip install --quiet -e '.[test]'
  fi
  # uv's cache keeps every earlier build of PySpark's source distribution (about 1 GB each; the
  # second fresh clone here built it again): 73 GB after a day of fresh clones filled the disk.
  [ -x .venv/bin/uv ] && .venv/bin/uv cache prune --quiet 2>/dev/null || true
  touch "$stamp"
fi
# Bytecode for every installed module. uv writes none (its --compile-bytecode is opt-in; pip
# does compile), and where PYTHONDONTWRITEBYTECODE is set Python keeps none of what it
# compiles, so every process compiled each module it imported from source: 5.6 of a
# `dagster asset materialize`'s 9.3 CPU-s went to `compile`.
# Once per install (53 CPU-s here), in the background: the jars' downloads and the JVM archive's
# build below leave the cores half idle. Then the package's own modules, which change.
bytecode_stamp=.venv/.assetlake-bytecode
bytecode_pid=
if [ ! -f "$bytecode_stamp" ] || [ "$stamp" -nt "$bytecode_stamp" ]; then
  # A module that does not compile (a package's Python 2 test data) is left to the importer.
  { .venv/bin/python -m compileall -q -j 0 "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" >/dev/null \
      || echo "setup: some installed modules did not compile to bytecode; they compile when imported" >&2
    touch "$bytecode_stamp"; } &
  bytecode_pid=$!
fi
.venv/bin/python -m compileall -q -j 0 assetlake_dagster assetlake_dagster_tests scripts >/dev/null

# The Delta jars matching the installed delta-spark, and with `--with s3` Hadoop's S3A
# connector (hadoop-aws of PySpark's Hadoop and the AWS SDK bundle it was built with, ~560 MB):
# `assetlake setup`, the installed package's own command (assetlake_dagster/spark/setup.py),
# fetches them from Maven Central into ~/.cache/assetlake/jars, each checked against its SHA-1.
with_s3=
case ",$with," in
  *,s3,*) with_s3=1 ;;
esac
if ! .venv/bin/assetlake setup --no-archive ${with_s3:+--with s3}; then
  if [ -n "$with_s3" ]; then
    echo "setup: could not fetch the S3A jars (hadoop-aws and the AWS SDK bundle)" >&2
    exit 1
  fi
  echo "setup: the Delta jars were not fetched; Spark will resolve them itself at start" >&2
fi

# Spark Connect (SparkDeltaResource(remote=...), python -m assetlake_dagster.spark.connect_server):
# pyspark ships the server (jars/spark-connect_2.13-*.jar) and it needs only the Delta jars
# above, because assetlake drives Delta through SQL rather than the Delta Connect plugin.
# The client packages come with the `connect` extra, part of `test`.
.venv/bin/python - <<'PY'
import glob, os, sys
import pyspark
try:
    import pyspark.sql.connect.session  # noqa: F401  (needs grpcio, grpcio-status, ...)
except ImportError as exc:
    sys.exit(f"setup: the Spark Connect client is not installed ({exc}); run: .venv/bin/pip install -e .")
if not glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-connect_2.13-*.jar")):
    sys.exit("setup: this pyspark has no Spark Connect server jar (jars/spark-connect_2.13-*.jar)")
PY
# The class-data archive of Spark's JVM (assetlake_dagster/spark/jvm_archive.py): each Spark start
# after it maps the classes it would otherwise load and verify (about a fifth less CPU).
# Built once per Java/PySpark/Delta install (~70 s); without it Spark starts as before.
if ! SPARK_LOCAL_IP=127.0.0.1 .venv/bin/assetlake setup ${with_s3:+--with s3}; then
  echo "setup: the JVM archive could not be built; Spark starts without it" >&2
fi
[ -z "$bytecode_pid" ] || wait "$bytecode_pid"
echo "setup: ok (.venv ready; Spark Connect client and server ready)"
