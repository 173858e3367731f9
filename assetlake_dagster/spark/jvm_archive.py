"""The class-data archive of Spark's JVM: a Spark start on about a fifth less CPU.

A JVM that runs Spark first loads, parses and verifies some twenty thousand classes of
Spark, Delta and their libraries: most of a start (here, a session and its first Delta
write took 33-39 CPU-seconds, 25-30 with the archive). A dynamic class-data-sharing archive (JDK 13+,
``-XX:ArchiveClassesAtExit``) keeps them parsed and verified in one file that each later
JVM maps instead.

``scripts/setup.sh`` builds it once per Java, PySpark and Delta install
(``python -m assetlake_dagster.spark.jvm_archive``, about 70 s): it starts a Spark Connect
server as the warm engine does, runs Delta writes, a merge and reads through it, and stops
it, which writes the archive of every class the server loaded. From then on each JVM that
assetlake starts on this machine (the warm engine, ``connect_server``, the in-process
session) is given it. Without the file they start as before. The JVM checks the archive against
its own build and class path and ignores one that does not match, so a stale archive
costs its benefit and nothing else. The JVM's working folder does not matter: the one
relative entry Spark's launcher puts on the class path (``hive-jackson/*``) names no file
unless that folder holds a ``hive-jackson/`` of jars, and an entry that names none is left out.

``ASSETLAKE_JVM_ARCHIVE`` names another file, or ``off`` turns the archive off. The default
is ``~/.cache/assetlake/jvm/spark-<pyspark>-delta-<delta>-home-<home>-build-<build>.jsa``
(about 200 MB). ``<home>`` identifies the Spark install (PySpark's folder: each virtualenv
has its own, and the JVM checks the class path's jars by path), ``<build>`` the ``java``
that Spark's launcher runs and the jars' sizes and times (a reinstall makes a new one).
Building an archive removes the install's earlier ones, and those of installs that are gone
(a deleted virtualenv or clone: each archive's ``.home`` file names its install's folder).

Example::

    python -m assetlake_dagster.spark.jvm_archive            # build it if missing
    python -m assetlake_dagster.spark.jvm_archive --force    # build it again
"""

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Optional

from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.spark.connect_server import free_port, start_connect_server
from assetlake_dagster.spark.install import ARCHIVE_ENV, JAVA_OPTIONS_CONF, QUIET_ARCHIVE_OPTIONS, archive_path, default_archive_folder
from assetlake_dagster.spark.install import C1_ONLY_OPTIONS, pyspark_home
from assetlake_dagster.spark.session import new_connect_session


#: Beside each archive in the default folder: the folder of the install it was built for.
HOME_SUFFIX = ".home"


class JvmArchiveError(AssetlakeError):
    """The archive could not be built (the message ends with the server's log tail)."""


def build(path: Optional[str] = None, *, force: bool = False, spark_home: Optional[str] = None) -> Optional[str]:
    """Build the archive (if missing, or ``force``) and return its path; ``None`` when off.

    ``spark_home`` is the install ``path`` serves (PySpark's by default), recorded beside it.

    Written beside its final name and renamed into place, so a JVM starting meanwhile
    maps either no archive or a whole one.
    """
    path = path or archive_path(spark_home)
    if path is None or (os.path.isfile(path) and not force):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    try:
        _write(partial)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(partial)
        raise
    os.replace(partial, path)
    if os.path.dirname(path) == default_archive_folder():
        with open(f"{path}{HOME_SUFFIX}", "w", encoding="utf-8") as home_file:
            home_file.write(os.path.realpath(spark_home or pyspark_home()))
    _remove_earlier_builds(path)
    return path


def _remove_earlier_builds(path: str) -> None:
    """Remove archives that ``path`` replaces: its install's earlier builds, and archives named
    the way releases before the install's folder was part of the name did (``-java-<id>.jsa``).

    A JVM that maps one of them keeps its mapping (the file goes when the last one exits).
    Only in the default folder: a file named with ``ASSETLAKE_JVM_ARCHIVE`` replaces nothing.
    """
    folder, name = os.path.split(path)
    if folder != default_archive_folder() or "-build-" not in name:
        return
    prefix = name[: name.rindex("-build-") + len("-build-")]
    for other in os.listdir(folder):
        if other == name or not other.endswith(".jsa"):
            continue
        earlier = other.startswith(prefix) or ("-java-" in other and "-home-" not in other)
        if earlier or _install_is_gone(os.path.join(folder, other)):
            for gone in (other, f"{other}{HOME_SUFFIX}"):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, gone))


def _install_is_gone(archive: str) -> bool:
    """Whether the install ``archive`` was built for no longer exists (its ``.home`` file names
    a folder without ``jars/``); an archive without the file (older releases) is kept."""
    try:
        with open(f"{archive}{HOME_SUFFIX}", encoding="utf-8") as home_file:
            home = home_file.read().strip()
    except OSError:
        return False
    return bool(home) and not os.path.isdir(os.path.join(home, "jars"))


def _write(partial: str) -> None:
    """Run the workload in a server that writes its archive to ``partial`` as it exits."""
    with tempfile.TemporaryDirectory(prefix="assetlake-jvm-archive-") as tmp:
        # C1 alone: the archive holds the classes loaded, whatever compiled them; it maps
        # into C2 JVMs alike (spark/test_jvm_archive_maps.py).
        conf = {JAVA_OPTIONS_CONF: f"-XX:ArchiveClassesAtExit={partial} {QUIET_ARCHIVE_OPTIONS} {C1_ONLY_OPTIONS}"}
        server = start_connect_server(
            free_port(), master="local[2]", spark_conf=conf, warehouse_dir=os.path.join(tmp, "warehouse"),
            log_path=os.path.join(tmp, "server.log"),
        )
        try:
            session = new_connect_session(server.url)
            try:
                _workload(session, os.path.join(tmp, "lake"))
            finally:
                session.stop()
        finally:
            server.stop(timeout=120)  # the JVM writes the archive as it exits
        if not os.path.isfile(partial):
            raise JvmArchiveError(f"the JVM wrote no archive at {partial}; its log:\n{server.log_tail()}")


def _workload(spark, lake: str) -> None:
    """What runs load the classes of: Delta's create, write, merge, partition replace and reads."""
    table = f"delta.`{lake}/t`"
    spark.sql(f"CREATE TABLE {table} (id INT, v STRING, d DATE) USING DELTA PARTITIONED BY (d)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a', DATE'2024-01-01'), (2, 'b', DATE'2024-01-02')")
    spark.sql(
        f"MERGE INTO {table} t USING (SELECT 1 AS id, 'z' AS v, DATE'2024-01-01' AS d) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql(f"INSERT INTO {table} REPLACE WHERE d = DATE'2024-01-02' SELECT 3, 'c', DATE'2024-01-02'")
    spark.sql(f"SELECT d, count(*) AS n, max(v) AS v FROM {table} GROUP BY d ORDER BY d").collect()
    spark.sql(f"DESCRIBE HISTORY {table}").collect()
    spark.createDataFrame([(1, "x")], "id INT, v STRING").write.format("delta").save(f"{lake}/df")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m assetlake_dagster.spark.jvm_archive [--force]``: build the archive if missing."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--force", action="store_true", help="build it again even if it exists")
    args = parser.parse_args(argv)
    path = archive_path()
    if path is None:
        print(f"the JVM archive is off ({ARCHIVE_ENV}=off)")
        return 0
    existed = os.path.isfile(path)
    build(path, force=args.force)
    print(f"JVM archive {'kept' if existed and not args.force else 'built'}: {path} ({os.path.getsize(path) // 2**20} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
