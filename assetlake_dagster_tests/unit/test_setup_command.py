"""Layer 2: `assetlake setup` fetches the jars from a Maven repository, checked and once.

A Maven repository is served on loopback (`http.server`, real HTTP) from a folder laid out as
Maven Central's; `ASSETLAKE_MAVEN_REPO` points the command at it. The real repository is what
`scripts/setup.sh` (so every CI run) fetches from.
"""

import functools
import hashlib
import http.server
import os
import threading

import pytest

from assetlake_dagster.cli.main import main
from assetlake_dagster.spark.install import delta_version, hadoop_version

SDK = "2.99.1"


def publish(repo, group, name, version, body, packaging="jar", sha1=None):
    folder = os.path.join(repo, *group.split("."), name, version)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}-{version}.{packaging}")
    with open(path, "wb") as handle:
        handle.write(body)
    with open(path + ".sha1", "w") as handle:
        handle.write((sha1 or hashlib.sha1(body).hexdigest()) + "  " + os.path.basename(path) + "\n")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A Maven repository on loopback holding the Delta and S3A artifacts; the requests it served."""
    root = tmp_path / "repo"
    version, hadoop = delta_version(), hadoop_version()
    publish(root, "io.delta", "delta-spark_2.13", version, b"delta-spark" * 1000)
    publish(root, "io.delta", "delta-storage", version, b"delta-storage")
    publish(root, "org.apache.hadoop", "hadoop-aws", hadoop, b"hadoop-aws")
    pom = f"<project><properties><aws-java-sdk-v2.version>{SDK}</aws-java-sdk-v2.version></properties></project>"
    publish(root, "org.apache.hadoop", "hadoop-project", hadoop, pom.encode(), packaging="pom")
    publish(root, "software.amazon.awssdk", "bundle", SDK, os.urandom(9 << 20))  # large: progress lines
    served = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            served.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("ASSETLAKE_MAVEN_REPO", f"http://127.0.0.1:{server.server_address[1]}/")
    monkeypatch.setenv("ASSETLAKE_JARS_DIR", str(tmp_path / "jars"))
    monkeypatch.setenv("ASSETLAKE_S3_JARS_DIR", str(tmp_path / "s3"))
    yield root, served, tmp_path
    server.shutdown()


def test_setup_fetches_what_is_missing_once_and_check_reports_it(repo, capsys):
    root, served, tmp = repo
    version, hadoop = delta_version(), hadoop_version()
    assert main(["setup", "--check", "--with", "s3", "--no-archive"]) == 1
    out = capsys.readouterr().out
    assert f"setup: io.delta:delta-spark_2.13:{version} is missing from {tmp / 'jars'}" in out
    assert f"setup: the AWS SDK bundle (for hadoop-aws {hadoop}) is missing from {tmp / 's3'}" in out
    assert "Run `assetlake setup --with s3` to fetch them." in out and served == []
    assert main(["setup", "--with", "s3", "--no-archive"]) == 0
    out = capsys.readouterr().out
    assert f"setup: io.delta:delta-storage:{version} fetched into {tmp / 'jars'}" in out
    assert f"setup: software.amazon.awssdk:bundle:{SDK} fetched into {tmp / 's3'}" in out
    assert f"setup: bundle-{SDK}.jar: 9 of 9 MB" in out and out.rstrip().endswith("setup: ok")
    assert sorted(os.listdir(tmp / "s3")) == [f"bundle-{SDK}.jar", f"hadoop-aws-{hadoop}.jar"]
    assert (tmp / "jars" / f"delta-storage-{version}.jar").read_bytes() == b"delta-storage"
    # Again: everything is there, nothing is fetched.
    before = len(served)
    assert main(["setup", "--with", "s3", "--no-archive"]) == 0 and len(served) == before
    assert f"setup: the AWS SDK bundle-{SDK}.jar is in {tmp / 's3'}" in capsys.readouterr().out
    assert main(["setup", "--check", "--with", "s3", "--no-archive"]) == 0


def test_a_download_that_does_not_match_its_checksum_leaves_nothing(repo, capsys):
    root, _, tmp = repo
    publish(root, "io.delta", "delta-storage", delta_version(), b"delta-storage", sha1="0" * 40)
    assert main(["setup", "--no-archive"]) == 2
    err = capsys.readouterr().err
    assert "delta-storage" in err and "does not match its checksum" in err and "nothing was kept" in err
    assert os.listdir(tmp / "jars") == [f"delta-spark_2.13-{delta_version()}.jar"]  # no partial file


def test_an_unreachable_repository_says_how_to_use_a_mirror(repo, monkeypatch, capsys):
    monkeypatch.setenv("ASSETLAKE_MAVEN_REPO", "http://127.0.0.1:9/")  # discard port: nothing listens
    assert main(["setup", "--no-archive"]) == 2
    assert "set ASSETLAKE_MAVEN_REPO to a Maven mirror you can reach" in capsys.readouterr().err
