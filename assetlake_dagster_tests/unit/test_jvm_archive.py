"""The options assetlake gives the JVMs it starts: the class-data archive's (where they go,
and when they do not) and the throughput collector."""

import os
import re

import pyspark
import pytest

from assetlake_dagster.spark import jvm_archive
from assetlake_dagster.spark.connect_server import server_command
from assetlake_dagster.spark.install import JAVA_OPTIONS_CONF, THROUGHPUT_GC_OPTION, archive_path, with_archive, with_throughput_gc
from assetlake_dagster.spark.install import delta_version


@pytest.fixture
def archive(tmp_path, monkeypatch):
    path = tmp_path / "spark.jsa"
    path.write_bytes(b"x")
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(path))
    return str(path)


def test_the_archive_goes_first_so_the_callers_options_win(archive):
    conf = with_archive({JAVA_OPTIONS_CONF: "-Dlog4j2.configurationFile=file:/x", "spark.ui.enabled": "false"})
    options = conf[JAVA_OPTIONS_CONF].split()
    assert options[0] == f"-XX:SharedArchiveFile={archive}"
    assert options[-1] == "-Dlog4j2.configurationFile=file:/x"
    assert conf["spark.ui.enabled"] == "false"
    assert with_archive({})[JAVA_OPTIONS_CONF].startswith(f"-XX:SharedArchiveFile={archive} ")


def test_no_archive_file_or_off_leaves_the_options_alone(tmp_path, monkeypatch):
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(tmp_path / "missing.jsa"))
    assert with_archive({JAVA_OPTIONS_CONF: "-Dx=1"}) == {JAVA_OPTIONS_CONF: "-Dx=1"}
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, "off")
    assert archive_path() is None
    assert with_archive({}) == {}


def test_a_jvm_that_writes_an_archive_maps_none(archive):
    conf = {JAVA_OPTIONS_CONF: "-XX:ArchiveClassesAtExit=/tmp/new.jsa"}
    assert with_archive(conf) == conf


def test_the_default_path_names_the_spark_and_delta_it_serves(monkeypatch):
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    path = archive_path()
    name = path.rsplit("/", 1)[1]
    assert path.endswith(".jsa") and "/.cache/assetlake/jvm/" in path
    assert re.fullmatch(rf"spark-{re.escape(pyspark.__version__)}-delta-{re.escape(delta_version())}-home-[0-9a-f]{{8}}-build-[0-9a-f]{{12}}\.jsa", name)


def test_another_java_names_another_archive(tmp_path, monkeypatch):
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    before = archive_path()
    java_home = tmp_path / "jdk"
    (java_home / "bin").mkdir(parents=True)
    (java_home / "bin" / "java").write_bytes(b"another java")
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    assert archive_path() != before


def test_the_connect_server_maps_the_archive(archive):
    command = server_command(15002)
    options = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf" and command[i + 1].startswith(JAVA_OPTIONS_CONF)]
    assert options == [
        f"{JAVA_OPTIONS_CONF}=-XX:SharedArchiveFile={archive} -Xlog:cds=off -Xlog:cds+dynamic=off {THROUGHPUT_GC_OPTION}"
    ]


def test_the_connect_server_keeps_a_collector_the_user_chose(archive):
    command = server_command(15002, spark_conf={JAVA_OPTIONS_CONF: "-XX:+UseG1GC -Dx=1"})
    options = next(command[i + 1] for i, arg in enumerate(command) if arg == "--conf" and command[i + 1].startswith(JAVA_OPTIONS_CONF))
    assert options.endswith(" -XX:+UseG1GC -Dx=1") and THROUGHPUT_GC_OPTION not in options


@pytest.mark.parametrize("own", ["", "-Dx=1", "-Xmx1g -Dlog4j2.configurationFile=file:/x"])
def test_the_throughput_collector_goes_before_the_callers_options(own):
    conf = with_throughput_gc({JAVA_OPTIONS_CONF: own, "spark.ui.enabled": "false"} if own else {})
    assert conf[JAVA_OPTIONS_CONF] == f"{THROUGHPUT_GC_OPTION} {own}".strip()


@pytest.mark.parametrize("chosen", ["-XX:+UseG1GC", "-XX:+UseSerialGC", "-XX:+UseZGC -Xmx2g", "-XX:+UseShenandoahGC"])
def test_a_collector_the_caller_chose_is_kept_alone(chosen):
    """Two collectors and the JVM refuses to start ("multiple garbage collectors selected")."""
    assert with_throughput_gc({JAVA_OPTIONS_CONF: chosen}) == {JAVA_OPTIONS_CONF: chosen}


def _spark_install(root, *jars):
    (root / "jars").mkdir(parents=True)
    for name in jars:
        (root / "jars" / name).write_bytes(b"jar")
    return str(root)


def test_two_installs_of_the_same_versions_get_two_archives(tmp_path, monkeypatch):
    # CI failed on this: an archive built for one virtualenv's pyspark (another checkout's)
    # was kept for this one's, whose jars sit at other paths, so its JVMs refused it.
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    one = _spark_install(tmp_path / "one", "spark-core.jar", "delta.jar")
    other = _spark_install(tmp_path / "other", "spark-core.jar", "delta.jar")
    assert archive_path(one) != archive_path(other)
    assert archive_path(one) == archive_path(one)
    assert archive_path(one).rsplit("/", 1)[0] == archive_path(other).rsplit("/", 1)[0]


def test_a_reinstalled_jar_names_a_new_archive(tmp_path, monkeypatch):
    # The JVM refuses an archive whose jars changed since (size or modification time).
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    home = _spark_install(tmp_path / "spark", "spark-core.jar")
    before = archive_path(home)
    (tmp_path / "spark" / "jars" / "spark-core.jar").write_bytes(b"another jar")
    assert archive_path(home) != before


def test_a_build_removes_its_installs_earlier_archives_and_keeps_other_installs(tmp_path, monkeypatch):
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = _spark_install(tmp_path / "spark", "spark-core.jar")
    other_install = archive_path(_spark_install(tmp_path / "other", "spark-core.jar"))
    earlier = archive_path(home)
    (tmp_path / "spark" / "jars" / "spark-core.jar").write_bytes(b"upgraded")
    current = archive_path(home)
    folder = tmp_path / "home" / ".cache" / "assetlake" / "jvm"
    folder.mkdir(parents=True)
    legacy = folder / "spark-4.0.1-delta-4.0.1-java-2ca7b25a5dde.jsa"  # named before the install was
    for path in (other_install, earlier, legacy):
        open(path, "wb").close()
    monkeypatch.setattr(jvm_archive, "_write", lambda partial: open(partial, "wb").close())  # no JVM here

    assert jvm_archive.build(current, spark_home=home) == current
    assert sorted(p.name for p in folder.iterdir()) == sorted(os.path.basename(p) for p in (other_install, current, f"{current}.home"))
    assert (folder / f"{os.path.basename(current)}.home").read_text() == os.path.realpath(home)


def test_a_build_of_a_named_archive_removes_nothing(tmp_path, monkeypatch):
    named = tmp_path / "spark.jsa"
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(named))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    beside = tmp_path / "spark-4.0.1-delta-4.0.1-java-2ca7b25a5dde.jsa"
    beside.write_bytes(b"someone else's")
    monkeypatch.setattr(jvm_archive, "_write", lambda partial: open(partial, "wb").close())  # no JVM here

    assert jvm_archive.build() == str(named)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([beside.name, named.name])


def test_a_new_archive_removes_those_of_installs_that_are_gone(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / ".cache" / "assetlake" / "jvm"
    folder.mkdir(parents=True)
    live_home = tmp_path / "venv" / "pyspark"
    (live_home / "jars").mkdir(parents=True)

    def archive(name, home=None):
        (folder / name).write_bytes(b"x")
        if home is not None:
            (folder / f"{name}{jvm_archive.HOME_SUFFIX}").write_text(str(home))
        return name

    gone = archive("spark-4.0.1-delta-4.0.1-home-aaaaaaaa-build-000000000000.jsa", tmp_path / "deleted-clone")
    live = archive("spark-4.0.1-delta-4.0.1-home-bbbbbbbb-build-000000000000.jsa", live_home)
    unknown = archive("spark-4.0.1-delta-4.0.1-home-cccccccc-build-000000000000.jsa")
    new = archive("spark-4.0.1-delta-4.0.1-home-dddddddd-build-111111111111.jsa", live_home)

    jvm_archive._remove_earlier_builds(str(folder / new))

    assert sorted(os.listdir(folder)) == sorted([live, f"{live}.home", unknown, new, f"{new}.home"])
    assert gone not in os.listdir(folder)
