"""What is installed for Spark here: PySpark's Spark, the Delta and S3A jars, the JVM archive.

The facts every Spark starter needs (the in-process session, the Connect server, the warm
engine, the archive builder), kept below all of them: nothing here starts a JVM. The jars
come from ``scripts/setup.sh`` (Delta always, S3A with ``--with s3``) into
``~/.cache/assetlake/jars``; the class-data archive from
``python -m assetlake_dagster.spark.jvm_archive`` (see that module for what it is).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import re
import shutil
from collections.abc import Mapping
from importlib import metadata
from typing import Optional

from assetlake_dagster.errors import ConfigError

DELTA_EXTENSIONS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

#: Delta's session default for the deletion vectors of new tables (see
#: ``SparkDeltaResource.deletion_vectors``).
DELETION_VECTORS_CONF = "spark.databricks.delta.properties.defaults.enableDeletionVectors"
#: Delta's session default for the change data feed of new tables (see
#: ``SparkDeltaResource.change_data_feed``).
CHANGE_DATA_FEED_CONF = "spark.databricks.delta.properties.defaults.enableChangeDataFeed"

#: Defaults for the embedded local session; each can be overridden through ``spark_conf``.
EMBEDDED_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Small local data: 200 shuffle partitions would mean 200 tiny tasks per shuffle.
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.session.timeZone": "UTC",
    # pandas -> Spark through Arrow only: the non-Arrow path turns missing strings into 'NaN'.
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.driver.memory": "2g",
    # Delta rebuilds a version's file list with this many tasks on first read (default 50):
    # on small local tables, 4 cut the metadata read-back of a merge from ~3.5 s to ~1 s.
    "spark.databricks.delta.snapshotPartitions": "4",
    # Spark keeps the classes it generates and compiles per query plan shape, 100 by default; a
    # session serving many runs' small queries evicted and compiled again. 1000 (a few MB): the
    # in-process tests took about 9 % fewer CPU-seconds (docs/ci-time.md). Static: set at start.
    "spark.sql.codegen.cache.maxEntries": "1000",
}


def delta_version() -> str:
    """The installed delta-spark version; its jars must match it exactly."""
    return metadata.version("delta-spark")


def pyspark_home() -> str:
    """The Spark install PySpark ships (its ``bin/``, ``jars/``): the one assetlake's JVMs run."""
    import pyspark  # here, as this module imports pyspark lazily throughout

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def delta_jars_dir() -> str:
    """Where ``assetlake setup`` puts the Delta jars (``ASSETLAKE_JARS_DIR`` overrides)."""
    default = os.path.join(os.path.expanduser("~"), ".cache", "assetlake", "jars", delta_version())
    return os.environ.get("ASSETLAKE_JARS_DIR", default)


def delta_jar_conf() -> dict[str, str]:
    """Spark conf that puts the Delta jars on the classpath.

    Prefers jars already on disk (no resolver, no network, ~1 s faster per start); falls
    back to Spark's own Maven resolver through ``spark.jars.packages``.
    """
    version = delta_version()
    jars = sorted(glob.glob(os.path.join(delta_jars_dir(), "*.jar")))
    names = {os.path.basename(j) for j in jars}
    if f"delta-spark_2.13-{version}.jar" in names and f"delta-storage-{version}.jar" in names:
        return {"spark.jars": ",".join(jars)}
    return {"spark.jars.packages": f"io.delta:delta-spark_2.13:{version}"}


def with_delta_jars(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` with the Delta jars added to its ``spark.jars`` (or ``spark.jars.packages``).

    Other jars in ``conf`` (the object-store connectors, a user's own) are kept beside
    Delta's rather than replacing them.

    Example:
        >>> with_delta_jars({"spark.jars": "/x/hadoop-aws.jar"})["spark.jars"].startswith("/x/hadoop-aws.jar,")
        True
    """
    merged = dict(conf)
    for key, value in delta_jar_conf().items():
        merged[key] = ",".join(v for v in (merged.get(key), value) if v)
    return merged


#: The launcher appends this variable's entries to the JVM's class path, after Spark's jars.
CLASS_PATH_ENV = "SPARK_DIST_CLASSPATH"


def class_path_jars(conf: Mapping[str, str], master: str) -> tuple[dict[str, str], list[str]]:
    """Move the local jar files of a local-master JVM from ``spark.jars`` to its class path.

    Spark's local executor fetches every jar of ``spark.jars`` into a new temporary folder
    at each start, as a remote executor would: 540 MB for the S3 connector's SDK bundle,
    left behind in ``/tmp`` whenever the JVM is killed. On a local master the driver is the
    executor, so the JVM's class path serves instead, with no copy. The launcher puts
    :data:`CLASS_PATH_ENV` after Spark's own jars, and Delta's go first among these, so the
    class path of a JVM with more jars (S3A) still begins with the class-data archive's.
    Any other master keeps ``spark.jars``: its executors need the jars sent to them.

    Returns:
        ``conf`` without the moved jars, and the jars in class-path order.

    Example:
        >>> class_path_jars({"spark.jars": "/j/a.jar,https://x/b.jar"}, "local[2]")
        ({'spark.jars': 'https://x/b.jar'}, ['/j/a.jar'])
        >>> class_path_jars({"spark.jars": "/j/a.jar"}, "spark://h:7077")
        ({'spark.jars': '/j/a.jar'}, [])
    """
    rest = dict(conf)
    if not master.startswith("local"):
        return rest, []
    listed = [jar for jar in rest.pop("spark.jars", "").split(",") if jar]
    moved = [jar for jar in listed if "://" not in jar or jar.startswith("file://")]
    kept = [jar for jar in listed if jar not in moved]
    if kept:
        rest["spark.jars"] = ",".join(kept)
    delta_dir = delta_jars_dir()
    moved.sort(key=lambda jar: not jar.removeprefix("file://").startswith(delta_dir))
    return rest, [jar.removeprefix("file://") for jar in moved]


def class_path_env(jars: list[str], env: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The launcher's :data:`CLASS_PATH_ENV` with ``jars`` appended to any value ``env`` has.

    Example:
        >>> class_path_env(["/j/a.jar"], {})
        {'SPARK_DIST_CLASSPATH': '/j/a.jar'}
    """
    env = os.environ if env is None else env
    entries = [e for e in env.get(CLASS_PATH_ENV, "").split(os.pathsep) if e] + jars
    return {CLASS_PATH_ENV: os.pathsep.join(entries)} if entries else {}


def hadoop_version() -> str:
    """The Hadoop version PySpark ships (its ``hadoop-client-api-<version>.jar``)."""
    for jar in glob.glob(os.path.join(pyspark_home(), "jars", "hadoop-client-api-*.jar")):
        return os.path.basename(jar)[len("hadoop-client-api-") : -len(".jar")]
    raise ConfigError(f"no hadoop-client-api jar in {pyspark_home()}/jars: PySpark's install is incomplete. Reinstall pyspark.")


def s3_jars_dir() -> str:
    """Where ``assetlake setup --with s3`` puts ``hadoop-aws`` and the AWS SDK bundle
    matching PySpark's Hadoop (``ASSETLAKE_S3_JARS_DIR`` overrides)."""
    default = os.path.join(os.path.expanduser("~"), ".cache", "assetlake", "jars", f"hadoop-aws-{hadoop_version()}")
    return os.environ.get("ASSETLAKE_S3_JARS_DIR", default)


def s3_jar_conf(spark_conf: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """Spark conf that puts S3A (``hadoop-aws`` and the AWS SDK) on the classpath.

    Raises:
        ConfigError: the jars are not on disk and ``spark_conf`` does not bring them
            either; the message says how to get them.
    """
    conf = spark_conf or {}
    if "hadoop-aws" in conf.get("spark.jars.packages", "") + conf.get("spark.jars", ""):
        return {}  # the user brings their own
    folder = s3_jars_dir()
    jars = sorted(glob.glob(os.path.join(folder, "*.jar")))
    names = " ".join(os.path.basename(j) for j in jars)
    if "hadoop-aws-" not in names or "bundle-" not in names:
        raise ConfigError(
            f"an s3a:// lake needs Hadoop's S3A connector (hadoop-aws {hadoop_version()} and the AWS SDK "
            f"bundle), and {folder} does not hold them. Run `assetlake setup --with s3` (fetches them "
            f"from Maven Central), or set spark_conf spark.jars.packages=org.apache.hadoop:hadoop-aws:{hadoop_version()}."
        )
    return {"spark.jars": ",".join(jars)}


ARCHIVE_ENV = "ASSETLAKE_JVM_ARCHIVE"
JAVA_OPTIONS_CONF = "spark.driver.extraJavaOptions"
#: JIT options for a short or light JVM: C1 alone (C2 spends more compiling than it saves on
#: tiny tables), with C2's 240 MB code cache (C1 alone gets 48 MB, which a long-lived JVM
#: fills and sweeps over and over). The archive's build runs with them (a quarter less CPU,
#: docs/performance.md); the test suite's engines too (docs/ci-time.md).
C1_ONLY_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"

#: The JVM's own notes on the archive (a class it skips, a class path that does not match)
#: are not the user's business: the archive is an optimisation, and the JVM runs without it.
QUIET_ARCHIVE_OPTIONS = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def archive_path(spark_home: Optional[str] = None) -> Optional[str]:
    """The archive file of a Spark install (existing or not); ``None`` when turned off.

    Args:
        spark_home: the install's folder (the one holding ``jars/``); PySpark's by default,
            the one assetlake's JVMs run.

    Example:
        >>> archive_path()  # doctest: +SKIP
        '/home/ann/.cache/assetlake/jvm/spark-4.0.1-delta-4.0.1-home-5d41402a-build-3f2a9c81d0e4.jsa'
    """
    chosen = os.environ.get(ARCHIVE_ENV, "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return os.path.abspath(os.path.expanduser(chosen))
    from pyspark import __version__ as pyspark_version

    home = os.path.realpath(spark_home or pyspark_home())
    name = f"{_install_prefix(pyspark_version, home)}{_build_id(home)}.jsa"
    return os.path.join(default_archive_folder(), name)


def default_archive_folder() -> str:
    return os.path.join(os.path.expanduser("~"), ".cache", "assetlake", "jvm")


def _install_prefix(pyspark_version: str, home: str) -> str:
    home_id = hashlib.sha256(home.encode()).hexdigest()[:8]
    return f"spark-{pyspark_version}-delta-{delta_version()}-home-{home_id}-build-"


def with_archive(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` for a JVM started on this machine, mapping the archive when there is one.

    The archive's options go first in ``spark.driver.extraJavaOptions``, so options of the
    caller's own (another ``-XX:SharedArchiveFile`` included) come later and win.

    Example:
        >>> with_archive({"spark.driver.extraJavaOptions": "-Dx=1"})  # doctest: +SKIP
        {'spark.driver.extraJavaOptions': '-XX:SharedArchiveFile=/home/ann/.cache/... -Dx=1'}
    """
    own = conf.get(JAVA_OPTIONS_CONF, "").strip()
    path = archive_path()
    if path is None or not os.path.isfile(path) or "-XX:ArchiveClassesAtExit" in own:
        return dict(conf)  # none, or this JVM writes one (it may not map one then)
    options = f"-XX:SharedArchiveFile={path} {QUIET_ARCHIVE_OPTIONS}"
    return {**conf, JAVA_OPTIONS_CONF: f"{options} {own}".strip()}


#: The collector of the JVMs assetlake starts (its engine, its in-process session): the
#: throughput collector. A driver on small local data spends about half of its CPU compiling
#: code, and G1's write barriers make every compiled method bigger: on this project's spark
#: tests the same work took 7 % fewer CPU-seconds with it (docs/engine.md).
THROUGHPUT_GC_OPTION = "-XX:+UseParallelGC"
_COLLECTOR_OPTION = re.compile(r"-XX:[+]Use\w*GC\b")


def with_throughput_gc(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` with :data:`THROUGHPUT_GC_OPTION` in ``spark.driver.extraJavaOptions``, unless
    the caller's own options choose a collector (a JVM given two refuses to start).

    Example:
        >>> with_throughput_gc({})
        {'spark.driver.extraJavaOptions': '-XX:+UseParallelGC'}
        >>> with_throughput_gc({"spark.driver.extraJavaOptions": "-XX:+UseG1GC"})
        {'spark.driver.extraJavaOptions': '-XX:+UseG1GC'}
    """
    own = conf.get(JAVA_OPTIONS_CONF, "").strip()
    if _COLLECTOR_OPTION.search(own):
        return dict(conf)
    return {**conf, JAVA_OPTIONS_CONF: f"{THROUGHPUT_GC_OPTION} {own}".strip()}


def _build_id(home: str) -> str:
    """Identifies what the JVM checks an archive against, hashed: the ``java`` Spark's launcher
    runs (``$JAVA_HOME/bin/java``, else the one on ``PATH``: its real path, size and time) and
    the install's jars (names, sizes and times)."""
    # The layout of the class path (Delta's jars after Spark's): an archive built before it
    # lacks Delta's classes, so a new one is built rather than kept.
    parts = ["class-path:2", f"java:{_file_stamp(_java())}"]
    with contextlib.suppress(OSError), os.scandir(os.path.join(home, "jars")) as jars:
        # One listing: the install's folder is already a real path, and its jars are files.
        stats = sorted((jar.name, jar.stat()) for jar in jars)
        parts += [f"{name}:{st.st_size}:{st.st_mtime_ns}" for name, st in stats]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _java() -> Optional[str]:
    java_home = os.environ.get("JAVA_HOME")
    return os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")


def _file_stamp(path: Optional[str]) -> str:
    if not path or not os.path.exists(path):
        return "none"
    real = os.path.realpath(path)
    st = os.stat(real)
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"
