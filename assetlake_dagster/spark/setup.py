"""``assetlake setup``: what the lake's Spark needs on disk, fetched once per install.

* the **Delta jars** matching the installed delta-spark (``delta-spark_2.13`` and
  ``delta-storage``), into :func:`~assetlake_dagster.spark.install.delta_jars_dir`: without
  them each Spark start resolves them through Spark's own Maven resolver;
* with ``--with s3``, **Hadoop's S3A connector** for ``s3a://`` lakes: ``hadoop-aws`` of the
  Hadoop PySpark ships and the AWS SDK bundle that Hadoop release was built with (its
  ``hadoop-project`` POM names the version; ~560 MB), into
  :func:`~assetlake_dagster.spark.install.s3_jars_dir`;
* the **JVM class-data archive** (:mod:`~assetlake_dagster.spark.jvm_archive`): each Spark
  start maps the classes it would otherwise load and verify.

Jars come from Maven Central over HTTPS (``ASSETLAKE_MAVEN_REPO`` names a mirror), each checked
against the repository's SHA-1 and renamed into place only when whole, so an interrupted
download leaves nothing a Spark start would pick up. Idempotent: what is on disk is kept.
``--check`` reports what is there and what is missing, and downloads nothing.

Example:
    >>> report = setup(with_s3=False, check=True)  # doctest: +SKIP
    >>> report.missing  # doctest: +SKIP
    ['io.delta:delta-spark_2.13:4.0.1']
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.spark.install import delta_jars_dir, delta_version, hadoop_version, s3_jars_dir

#: The Maven repository jars come from (a mirror's URL replaces it).
MAVEN_REPO_ENV = "ASSETLAKE_MAVEN_REPO"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
#: The POM property naming the AWS SDK version a Hadoop release was built with.
_SDK_VERSION = re.compile(r"<aws-java-sdk-v2\.version>\s*([^<\s]+)\s*</aws-java-sdk-v2\.version>")
_CHUNK = 1 << 20


class SetupError(AssetlakeError):
    """A jar could not be fetched or checked (the message says which, and what to do)."""


@dataclass(frozen=True)
class Artifact:
    """One Maven artifact: ``group:name:version``, its packaging (``jar`` or ``pom``)."""

    group: str
    name: str
    version: str
    packaging: str = "jar"

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.name}:{self.version}"

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.version}.{self.packaging}"

    def url(self, repo: str) -> str:
        """Its URL in the repository ``repo``.

        Example:
            >>> Artifact("io.delta", "delta-storage", "4.0.1").url("https://repo1.maven.org/maven2")
            'https://repo1.maven.org/maven2/io/delta/delta-storage/4.0.1/delta-storage-4.0.1.jar'
        """
        return "/".join([repo.rstrip("/"), *self.group.split("."), self.name, self.version, self.file_name])


@dataclass
class SetupReport:
    """What a setup found, fetched and left missing, in the order it went."""

    lines: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)

    def say(self, line: str, out: Callable[[str], None]) -> None:
        self.lines.append(line)
        out(f"setup: {line}")


def maven_repo() -> str:
    """The repository jars are fetched from: ``$ASSETLAKE_MAVEN_REPO``, else Maven Central."""
    return os.environ.get(MAVEN_REPO_ENV) or MAVEN_CENTRAL


def delta_artifacts() -> list[Artifact]:
    """The Delta jars the installed delta-spark needs (their version must match exactly)."""
    version = delta_version()
    return [Artifact("io.delta", "delta-spark_2.13", version), Artifact("io.delta", "delta-storage", version)]


def setup(
    with_s3: bool = False,
    check: bool = False,
    archive: bool = True,
    out: Callable[[str], None] = print,
) -> SetupReport:
    """Fetch what is missing (or, with ``check``, only report it) and build the JVM archive.

    Raises:
        SetupError: a download failed or did not match its checksum (nothing partial is left).
    """
    report = SetupReport()
    repo = maven_repo()
    _ensure(report, delta_artifacts(), delta_jars_dir(), repo, check, out)
    if with_s3:
        _ensure_s3(report, repo, check, out)
    if archive:
        _archive(report, check, out)
    return report


def _ensure(
    report: SetupReport, artifacts: list[Artifact], folder: str, repo: str, check: bool, out: Callable[[str], None]
) -> None:
    for artifact in artifacts:
        path = os.path.join(folder, artifact.file_name)
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            report.say(f"{artifact.coordinates} is in {folder}", out)
        elif check:
            report.missing.append(artifact.coordinates)
            report.say(f"{artifact.coordinates} is missing from {folder}", out)
        else:
            download(artifact, folder, repo, out)
            report.fetched.append(artifact.coordinates)
            report.say(f"{artifact.coordinates} fetched into {folder}", out)


def _ensure_s3(report: SetupReport, repo: str, check: bool, out: Callable[[str], None]) -> None:
    """hadoop-aws of PySpark's Hadoop and the AWS SDK bundle its ``hadoop-project`` POM names."""
    folder, hadoop = s3_jars_dir(), hadoop_version()
    aws = Artifact("org.apache.hadoop", "hadoop-aws", hadoop)
    bundles = [f for f in os.listdir(folder) if f.startswith("bundle-") and f.endswith(".jar")] if os.path.isdir(folder) else []
    if bundles:
        report.say(f"the AWS SDK {bundles[0]} is in {folder}", out)
        _ensure(report, [aws], folder, repo, check, out)
        return
    if check:
        report.missing.append("software.amazon.awssdk:bundle")
        report.say(f"the AWS SDK bundle (for hadoop-aws {hadoop}) is missing from {folder}", out)
        _ensure(report, [aws], folder, repo, check, out)
        return
    _ensure(report, [aws], folder, repo, check, out)
    with tempfile.TemporaryDirectory(prefix="assetlake-setup-") as scratch:
        pom = download(Artifact("org.apache.hadoop", "hadoop-project", hadoop, "pom"), scratch, repo, out)
        with open(pom, encoding="utf-8") as handle:
            found = _SDK_VERSION.search(handle.read())
    if found is None:
        raise SetupError(f"hadoop-project {hadoop}'s POM names no AWS SDK version (aws-java-sdk-v2.version); "
                         "put hadoop-aws and the SDK bundle in the folder yourself.")
    _ensure(report, [Artifact("software.amazon.awssdk", "bundle", found.group(1))], folder, repo, check, out)


def _archive(report: SetupReport, check: bool, out: Callable[[str], None]) -> None:
    from assetlake_dagster.spark.install import archive_path

    path = archive_path()
    if path is None:
        report.say("the JVM archive is off (ASSETLAKE_JVM_ARCHIVE=off)", out)
    elif os.path.isfile(path):
        report.say(f"the JVM archive is in {path}", out)
    elif check:
        report.missing.append("JVM archive")
        report.say(f"the JVM archive is missing ({path}); Spark starts without it", out)
    else:
        from assetlake_dagster.spark.jvm_archive import build

        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the build's server runs on loopback
        report.say("building the JVM archive (about a minute; Spark then starts faster)", out)
        built = build(path)
        report.say(f"the JVM archive is built: {built}", out)


def download(artifact: Artifact, folder: str, repo: str, out: Callable[[str], None] = print) -> str:
    """Fetch ``artifact`` into ``folder`` and return its path: streamed to a partial file,
    checked against the repository's ``.sha1``, then renamed into place.

    Raises:
        SetupError: the repository cannot be reached, lacks it, or its bytes do not match.
    """
    url = artifact.url(repo)
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, artifact.file_name)
    partial = f"{target}.{os.getpid()}.partial"
    try:
        expected = _read_url(url + ".sha1").decode("ascii", "replace").split()[0].strip().lower()
        digest = hashlib.sha1()
        with _open_url(url) as response, open(partial, "wb") as sink:
            total = int(response.headers.get("Content-Length") or 0)
            done, shown = 0, -1
            while True:
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                sink.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                step = done * 10 // total if total else -1
                if total > 8 * _CHUNK and step > shown:  # progress on the large ones
                    shown = step
                    out(f"setup: {artifact.file_name}: {done >> 20} of {total >> 20} MB")
        if digest.hexdigest() != expected:
            raise SetupError(
                f"{url} does not match its checksum (sha1 {digest.hexdigest()}, the repository says {expected}); "
                "nothing was kept. Run `assetlake setup` again."
            )
        os.replace(partial, target)
        return target
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _open_url(url: str):
    try:
        return urllib.request.urlopen(url, timeout=60)  # noqa: S310 - an https (or mirror) URL we build
    except OSError as exc:
        raise SetupError(
            f"could not fetch {url}: {exc}. Check the network, or set {MAVEN_REPO_ENV} to a Maven mirror "
            "you can reach."
        ) from None


def _read_url(url: str) -> bytes:
    with _open_url(url) as response:
        return response.read()


def main(with_s3: bool, check: bool, archive: bool = True) -> int:
    """The command's body: 0 when everything is there (or was fetched), 1 when ``check`` finds
    something missing, 2 on a failed download (said on stderr)."""
    try:
        report = setup(with_s3=with_s3, check=check, archive=archive)
    except SetupError as exc:
        print(f"setup: {exc}", file=sys.stderr)
        return 2
    if report.missing:
        print(f"setup: missing: {', '.join(report.missing)}. Run `assetlake setup{' --with s3' if with_s3 else ''}` to fetch them.")
        return 1
    print("setup: ok")
    return 0
