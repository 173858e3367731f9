"""The class-data archive that scripts/setup.sh built maps into the JVMs Spark starts here."""

import os
import subprocess

import pyspark

from assetlake_dagster.spark.install import archive_path


def test_setup_built_the_archive_and_spark_submits_jvm_maps_it_from_any_folder(tmp_path):
    path = archive_path()
    assert path is not None and os.path.isfile(path), f"no JVM archive at {path}: run scripts/setup.sh"
    spark_home = os.path.dirname(pyspark.__file__)
    # -Xshare:on: a JVM that cannot map the archive (another Java build, another class path)
    # refuses to start, where the default (auto) would quietly run without it.
    env = {**os.environ, "SPARK_HOME": spark_home, "SPARK_SUBMIT_OPTS": f"-XX:SharedArchiveFile={path} -Xshare:on"}
    # Not the folder the archive was built in (setup.sh builds it from the repo root): the
    # launcher's relative class-path entry (hive-jackson/*) names no file here either.
    done = subprocess.run(
        [os.path.join(spark_home, "bin", "spark-submit"), "--version"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"version {pyspark.__version__}" in done.stdout + done.stderr


def test_the_suites_own_session_was_started_with_the_archive(spark):
    jvm_options = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={archive_path()}" in jvm_options
