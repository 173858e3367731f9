"""The class-data archive's options: where they go in a JVM's options, and when they do not."""

import pyspark
import pytest

from assetlake_dagster import jvm_archive
from assetlake_dagster.connect_server import server_command
from assetlake_dagster.jvm_archive import JAVA_OPTIONS_CONF, archive_path, with_archive
from assetlake_dagster.spark_session import delta_version


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


def test_the_default_path_names_the_spark_delta_and_java_it_serves(monkeypatch):
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    path = archive_path()
    name = path.rsplit("/", 1)[1]
    assert path.endswith(".jsa") and "/.cache/assetlake/jvm/" in path
    prefix = f"spark-{pyspark.__version__}-delta-{delta_version()}-java-"
    assert name.startswith(prefix) and name != f"{prefix}none.jsa"  # the java of this machine


def test_the_connect_server_maps_the_archive(archive):
    command = server_command(15002)
    options = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf" and command[i + 1].startswith(JAVA_OPTIONS_CONF)]
    assert options == [f"{JAVA_OPTIONS_CONF}=-XX:SharedArchiveFile={archive} -Xlog:cds=off -Xlog:cds+dynamic=off"]
