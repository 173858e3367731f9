"""The class-data archive that scripts/setup.sh built maps into the JVMs Spark starts here."""

import os
import subprocess

import pyspark
import pytest

from assetlake_dagster.spark.install import archive_path, class_path_env, class_path_jars, s3_jar_conf, with_delta_jars


@pytest.mark.parametrize("connectors", ["delta", "delta and s3a"])
def test_setup_built_the_archive_and_spark_submits_jvm_maps_it_from_any_folder(tmp_path, connectors):
    path = archive_path()
    assert path is not None and os.path.isfile(path), f"no JVM archive at {path}: run scripts/setup.sh"
    spark_home = os.path.dirname(pyspark.__file__)
    # The class path a local engine gets: Delta's jars, and for an s3a:// lake S3A's after them.
    conf = with_delta_jars(s3_jar_conf() if "s3a" in connectors else {})
    conf, jars = class_path_jars(conf, "local[*]")
    assert "spark.jars" not in conf and len(jars) == (4 if "s3a" in connectors else 2), jars
    # -Xshare:on: a JVM that cannot map the archive (another Java build, another class path)
    # refuses to start, where the default (auto) would quietly run without it.
    env = {**os.environ, "SPARK_HOME": spark_home, "SPARK_SUBMIT_OPTS": f"-XX:SharedArchiveFile={path} -Xshare:on"}
    env.update(class_path_env(jars, {}))
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


def test_the_suites_own_session_has_delta_on_its_class_path_and_copies_no_jar(spark):
    """A local JVM reads its jars where they are: Spark would copy each jar of spark.jars into
    a temporary folder per start (540 MB with S3A's SDK), left behind when the JVM is killed."""
    from pyspark import SparkFiles

    system_loader = spark._jvm.java.lang.ClassLoader.getSystemClassLoader()
    assert system_loader.loadClass("io.delta.sql.DeltaSparkSessionExtension") is not None
    assert "delta-spark" in spark._jvm.java.lang.System.getProperty("java.class.path")
    copied = [name for name in os.listdir(SparkFiles.getRootDirectory()) if name.endswith(".jar")]
    assert copied == []


def test_the_suites_own_session_runs_the_throughput_collector(spark):
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    assert sorted(bean.getName() for bean in beans) == ["PS MarkSweep", "PS Scavenge"]
