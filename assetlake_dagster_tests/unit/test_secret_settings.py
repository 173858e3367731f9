"""Secret settings: which ``spark_conf`` names are secrets, how they are kept off command lines
and out of texts, and the loopback addresses the warm engine holds. No Spark: the real
engine's processes are checked in ``e2e/test_engine.py``."""

import errno
import os
import socket
import stat
import subprocess
import sys

import pytest

from assetlake_dagster.spark.connect_server import server_command
from assetlake_dagster.spark.loopback import LoopbackGuard, localhost_addresses, unguarded_addresses
from assetlake_dagster.spark.secret_settings import (
    REDACTED,
    is_secret_setting,
    properties_text,
    redact,
    redact_url,
    split_secret_settings,
    write_private_file,
)


@pytest.mark.parametrize(
    "name",
    [
        "spark.hadoop.fs.s3a.secret.key",
        "spark.hadoop.fs.s3a.access.key",
        "spark.hadoop.fs.s3a.bucket.my-bucket.secret.key",
        "spark.hadoop.fs.s3a.session.token",
        "spark.sql.catalog.uc.token",
        "spark.hadoop.javax.jdo.option.ConnectionPassword",
        "spark.hadoop.fs.azure.account.auth.type",
        "spark.hadoop.fs.azure.account.oauth2.client.id.acct.dfs.core.windows.net",
        "spark.hadoop.google.cloud.auth.service.account.json.keyfile",
        "spark.hadoop.google.cloud.auth.type",
        "spark.hadoop.fs.gs.auth.service.account.email",
        "spark.authenticate.secret",
        "SPARK.ASSETLAKE.TEST.TOKEN",
        "spark.hadoop.aws.credentials.file",
        "spark.ssl.keyStorePassword",
    ],
)
def test_secret_names(name):
    assert is_secret_setting(name)


@pytest.mark.parametrize(
    "name",
    [
        "spark.sql.shuffle.partitions",
        "spark.hadoop.fs.s3a.endpoint",
        "spark.hadoop.fs.s3a.path.style.access",
        "spark.sql.catalog.uc",
        "spark.sql.catalog.uc.uri",
        "spark.driver.extraJavaOptions",
        "spark.jars.packages",
        "spark.hadoop.google.cloud.project.id",
    ],
)
def test_public_names(name):
    assert not is_secret_setting(name)


def test_split_and_redact_keep_the_names_and_hide_the_values():
    conf = {"spark.sql.shuffle.partitions": "4", "spark.hadoop.fs.s3a.secret.key": "abc/DEF+123"}
    public, secret = split_secret_settings(conf)
    assert public == {"spark.sql.shuffle.partitions": "4"}
    assert secret == {"spark.hadoop.fs.s3a.secret.key": "abc/DEF+123"}
    text = "s3a failed: key abc/DEF+123 refused; partitions 4"
    assert redact(text, conf) == f"s3a failed: key {REDACTED} refused; partitions 4"
    assert redact_url("sc://host:15002/;user_id=me;token=t0k3n") == f"sc://host:15002/;user_id=me;token={REDACTED}"
    assert redact_url("sc://host:15002") == "sc://host:15002"


def test_the_server_command_holds_no_secret_value():
    conf = {"spark.hadoop.fs.s3a.secret.key": "s3a-secret-f00d1e", "spark.sql.shuffle.partitions": "4"}
    command = " ".join(server_command(15002, spark_conf=conf))
    assert "s3a-secret-f00d1e" not in command
    assert "spark.hadoop.fs.s3a.secret.key" not in command
    assert "spark.sql.shuffle.partitions=4" in command


def test_a_private_properties_file_round_trips_through_java_properties_syntax(tmp_path):
    tricky = {"spark.x.token": "a=b:c #!\\ d\u00e9\nnext", "spark.y.password": " lead"}
    path = write_private_file(str(tmp_path), "secret", ".properties", properties_text(tricky))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # Java's own parser reads what Spark reads (java.util.Properties, UTF-8).
    java = os.path.join(os.environ.get("JAVA_HOME", "/usr"), "bin", "java")
    source = tmp_path / "Read.java"
    source.write_text(
        "import java.io.*; import java.nio.charset.StandardCharsets; import java.util.*;\n"
        "public class Read { public static void main(String[] a) throws Exception {\n"
        "  Properties p = new Properties();\n"
        "  p.load(new InputStreamReader(new FileInputStream(a[0]), StandardCharsets.UTF_8));\n"
        "  for (String k : new TreeSet<>(p.stringPropertyNames())) {\n"
        "    System.out.println(k); System.out.println(java.util.Base64.getEncoder().encodeToString(\n"
        "      p.getProperty(k).getBytes(StandardCharsets.UTF_8))); } } }\n"
    )
    out = subprocess.run([java, str(source), path], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    import base64

    lines = out.stdout.splitlines()
    read = {lines[i]: base64.b64decode(lines[i + 1]).decode("utf-8") for i in range(0, len(lines), 2)}
    assert read == tricky


def test_the_standalone_servers_cli_refuses_a_secret_on_its_command_line():
    """``python -m assetlake_dagster.spark.connect_server --conf spark.x.token=…`` would show the
    value in ``ps``: refused with the way to pass it, and the value is not echoed."""
    out = subprocess.run(
        [sys.executable, "-m", "assetlake_dagster.spark.connect_server", "--port", "1",
         "--conf", "spark.hadoop.fs.s3a.secret.key=s3a-secret-f00d1e"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 2
    assert "s3a-secret-f00d1e" not in out.stderr + out.stdout
    assert "--conf-file" in out.stderr and "spark.hadoop.fs.s3a.secret.key" in out.stderr, out.stderr


def test_localhost_includes_both_loopback_addresses():
    # gRPC's resolver answers ::1 for localhost whatever /etc/hosts lists (RFC 6761).
    assert {"127.0.0.1", "::1"} <= set(localhost_addresses())


def test_a_guard_keeps_every_other_localhost_address_of_the_port_from_other_listeners():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert "::1" in unguarded_addresses(port, bound="127.0.0.1") or not _ipv6_loopback()
        with LoopbackGuard.hold(port, bound="127.0.0.1") as guard:
            assert unguarded_addresses(port, bound="127.0.0.1") == []
            if _ipv6_loopback():
                assert "::1" in guard.addresses
                with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as other:
                    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                    with pytest.raises(OSError) as taken:
                        other.bind(("::1", port))
                    assert taken.value.errno == errno.EADDRINUSE
                # A client dialling [::1] is refused at once and goes on to 127.0.0.1.
                with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as client:
                    assert client.connect_ex(("::1", port)) == errno.ECONNREFUSED


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False
