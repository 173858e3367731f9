#!/usr/bin/env bash
# Set up everything on a fresh machine: a virtualenv in .venv with the package and its
# test extras, and the Delta jars fetched from Maven Central into ~/.cache/assetlake/jars.
# Idempotent: a second run only checks.
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

# The jars' versions and folders, from one Python start (each start imports Dagster: 5-6 s of
# wall while the bytecode compiles beside it).
{ read -r delta_version; read -r jars_dir; read -r hadoop_version; read -r s3_dir; } < <(.venv/bin/python -c '
from assetlake_dagster.spark.install import delta_jars_dir, delta_version, hadoop_version, s3_jars_dir
print(delta_version(), delta_jars_dir(), hadoop_version(), s3_jars_dir(), sep="\n")') || true
[ -n "$s3_dir" ] || { echo "setup: could not read the jars' versions and folders from assetlake_dagster.spark.install" >&2; exit 1; }
# The Delta jars must match the installed delta-spark exactly.
for artifact in "io.delta:delta-spark_2.13:${delta_version}" "io.delta:delta-storage:${delta_version}"; do
  name=$(echo "$artifact" | cut -d: -f2)
  if [ ! -f "$jars_dir/${name}-${delta_version}.jar" ]; then
    if command -v mvn >/dev/null 2>&1; then
      mvn -q -B dependency:copy -Dartifact="${artifact}:jar" -DoutputDirectory="$jars_dir" \
        || echo "setup: mvn could not fetch ${artifact}; Spark will resolve it itself at start" >&2
    else
      echo "setup: mvn not found; Spark will resolve ${artifact} from Maven Central at start" >&2
    fi
  fi
done

# S3A: hadoop-aws must be the exact Hadoop version PySpark ships, and the AWS SDK bundle the
# version that Hadoop release was built with (its hadoop-project POM names it). The JVM archive
# below holds no S3A class (only s3a:// lakes put these jars on the class path), so the ~560 MB
# download runs beside its build, the only Maven then running (the Delta jars' came first).
with_s3=
s3_pid=
case ",$with," in
  *,s3,*)
    with_s3=1
    if ! ls "$s3_dir"/hadoop-aws-*.jar "$s3_dir"/bundle-*.jar >/dev/null 2>&1; then
      (
        set -euo pipefail
        mkdir -p "$s3_dir"
        mvn -q -B dependency:copy -Dartifact="org.apache.hadoop:hadoop-aws:${hadoop_version}:jar" -DoutputDirectory="$s3_dir"
        pom_dir=$(mktemp -d)
        mvn -q -B dependency:copy -Dartifact="org.apache.hadoop:hadoop-project:${hadoop_version}:pom" -DoutputDirectory="$pom_dir"
        project_pom="$pom_dir/hadoop-project-${hadoop_version}.pom"
        sdk_version=$(sed -n 's:.*<aws-java-sdk-v2.version>\(.*\)</aws-java-sdk-v2.version>.*:\1:p' "$project_pom" | head -n 1)
        [ -n "$sdk_version" ] || { echo "setup: no AWS SDK version in $project_pom" >&2; exit 1; }
        rm -rf "$pom_dir"
        mvn -q -B dependency:copy -Dartifact="software.amazon.awssdk:bundle:${sdk_version}:jar" -DoutputDirectory="$s3_dir"
      ) &
      s3_pid=$!
    fi
    ;;
esac

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
if ! archive=$(SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python -m assetlake_dagster.spark.jvm_archive); then
  archive="setup: the JVM archive could not be built; Spark starts without it"
  echo "$archive" >&2
fi
[ -z "$bytecode_pid" ] || wait "$bytecode_pid"
if [ -n "$with_s3" ]; then
  if [ -n "$s3_pid" ] && ! wait "$s3_pid"; then
    echo "setup: could not fetch the S3A jars (hadoop-aws ${hadoop_version} and the AWS SDK bundle) into $s3_dir" >&2
    exit 1
  fi
  echo "setup: S3A jars in $s3_dir"
fi
echo "setup: ok (.venv ready; Delta ${delta_version} jars in ${jars_dir}; Spark Connect client and server ready; ${archive})"
