"""A local Spark Connect server with Delta, started from the installed PySpark.

PySpark 4 ships the Spark Connect server (``pyspark/jars/spark-connect_2.13-*.jar``) and
``bin/spark-submit``; with the Delta jars that ``scripts/setup.sh`` fetches, that is a
complete server: no Spark download, no cluster. Point ``SparkDeltaResource(remote=...)``
at it and the assets run in the server's JVM instead of one inside the Dagster process.

From a shell (runs until Ctrl-C)::

    python -m assetlake_dagster.spark.connect_server --port 15002

The server reads and writes the lake itself, so a local lake root must be a folder the
server sees at the same path (the same machine, or a shared mount); object stores work
as they are.

Secret settings (:mod:`assetlake_dagster.spark.secret_settings`) never go on a command line:
``spark-submit`` reads them from a ``--properties-file`` only its owner can read, in the
folder of the server's log, removed once the server listens; this module's own command
takes them from ``--conf-file FILE`` and refuses them in ``--conf``.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Optional

from assetlake_dagster.errors import AssetlakeError, UsageError
from assetlake_dagster.spark.secret_settings import (
    is_secret_setting,
    properties_text,
    redact,
    split_secret_settings,
    write_private_file,
)
from assetlake_dagster.spark.install import with_archive, with_throughput_gc
from assetlake_dagster.spark.loopback import dial_host, is_loopback
from assetlake_dagster.spark.install import DELTA_EXTENSIONS, EMBEDDED_DEFAULTS, class_path_env, class_path_jars, pyspark_home, with_delta_jars

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002
DEFAULT_HOST = "127.0.0.1"
#: Seconds to wait for the server to accept connections (a cold JVM plus Delta: ~10-20 s;
#: without the jars on disk, Spark first resolves them from Maven Central).
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
LOG_TAIL_LINES = 40
#: Variables that would make the launcher or the server itself act as a Connect client.
_CLIENT_ENV = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "SPARK_API_MODE")


class ConnectServerError(AssetlakeError):
    """The Spark Connect server did not start (the message ends with its log tail)."""


@dataclass
class ConnectServer:
    """A running Spark Connect server process (its own process group).

    Attributes:
        host: the address it listens on.
        port: the gRPC port.
        log_path: the server's combined stdout and stderr.
        process: the ``spark-submit`` process.
    """

    host: str
    port: int
    log_path: str
    process: subprocess.Popen
    label: str = "Spark Connect server"
    _log: Optional[IO[bytes]] = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """The ``sc://`` URL for ``SparkDeltaResource(remote=...)``."""
        return f"sc://{self.host}:{self.port}"

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the server log."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError as exc:
            return f"(no log at {self.log_path}: {exc})"

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop the server and every process it started (SIGTERM, then SIGKILL)."""
        if self.process.poll() is None:
            _signal_group(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _signal_group(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=timeout)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "ConnectServer":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_connect_server(
    port: int = DEFAULT_PORT,
    *,
    host: str = DEFAULT_HOST,
    master: str = "local[*]",
    spark_conf: Optional[Mapping[str, str]] = None,
    warehouse_dir: Optional[str] = None,
    log_path: Optional[str] = None,
    timeout: float = START_TIMEOUT_S,
    pass_fds: Sequence[int] = (),
) -> ConnectServer:
    """Start a Spark Connect server with Delta and wait until it accepts connections.

    Args:
        port: the gRPC port; it must be free.
        host: the address to listen on (loopback by default: no one else can connect).
        master: the server's Spark master.
        spark_conf: extra server settings; they win over the defaults (Delta extensions
            and catalog, no UI, the embedded session's defaults).
        warehouse_dir: ``spark.sql.warehouse.dir`` of the server's catalog.
        log_path: where the server writes its log (default: a new temporary file).
        timeout: seconds to wait for the port to accept connections.
        pass_fds: file descriptors the server's process keeps open (the engine's
            :class:`~assetlake_dagster.spark.loopback.LoopbackGuard`).

    Returns:
        The running server; call :meth:`ConnectServer.stop` (or use it as a context
        manager) to stop it.

    Raises:
        ConnectServerError: the port is taken, or the server exited or did not listen in
            time. The message ends with the server's log tail.

    Example:
        >>> with start_connect_server(15002) as server:  # doctest: +SKIP
        ...     resource = SparkDeltaResource(remote=server.url, lake_root="/tmp/lake")
    """
    return start_spark_server(
        port, host=host, master=master, spark_conf=spark_conf, warehouse_dir=warehouse_dir,
        log_path=log_path, timeout=timeout, pass_fds=pass_fds,
    )


def start_spark_server(
    port: int,
    *,
    host: str = DEFAULT_HOST,
    master: str = "local[*]",
    spark_conf: Optional[Mapping[str, str]] = None,
    warehouse_dir: Optional[str] = None,
    log_path: Optional[str] = None,
    timeout: float = START_TIMEOUT_S,
    main_class: str = SERVER_CLASS,
    app_args: Sequence[str] = (),
    label: str = "Spark Connect server",
    pass_fds: Sequence[int] = (),
) -> ConnectServer:
    """Start a Spark server application with Delta (``main_class``: Spark Connect by
    default, or Spark's Thrift JDBC server) and wait until ``port`` accepts connections.

    The arguments are :func:`start_connect_server`'s; ``app_args`` follow the application
    and ``label`` names the server in messages.
    """
    if not port_is_free(host, port):
        raise ConnectServerError(
            f"port {port} on {host} is already in use. Stop what listens there or choose "
            "another port (--port)."
        )
    if log_path is None:
        log_path = os.path.join(tempfile.mkdtemp(prefix="assetlake-connect-"), "server.log")
    log = open(log_path, "ab")
    command, class_path, secret = _server_launch(
        port, host=host, master=master, spark_conf=spark_conf, warehouse_dir=warehouse_dir,
        main_class=main_class, app_args=app_args, label=label,
    )
    properties = None
    if secret:
        # Read by spark-submit's launcher and again by the server's JVM as it starts: kept
        # until the server listens, then removed. spark-defaults.conf stays loaded as without it.
        properties = write_private_file(os.path.dirname(os.path.abspath(log_path)), "spark-secret-", ".properties",
                                        properties_text(secret))
        command[1:1] = ["--properties-file", properties, "--load-spark-defaults"]
    env = server_env(host)
    env.update(class_path_env(class_path, env))
    try:
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # its own process group: stop() ends the JVM and its children
                pass_fds=tuple(pass_fds),
            )
        except OSError as exc:
            log.close()
            raise ConnectServerError(f"could not run spark-submit: {exc}") from exc
        server = ConnectServer(host=host, port=port, log_path=log_path, process=process, label=label, _log=log)
        try:
            wait_until_listening(server, timeout)
        except ConnectServerError as exc:
            server.stop()
            raise ConnectServerError(redact(str(exc), secret.values())) from None
        except BaseException:
            server.stop()
            raise
        return server
    finally:
        if properties is not None:
            os.remove(properties)


def server_command(
    port: int,
    *,
    host: str = DEFAULT_HOST,
    master: str = "local[*]",
    spark_conf: Optional[Mapping[str, str]] = None,
    warehouse_dir: Optional[str] = None,
) -> list[str]:
    """The ``spark-submit`` command line that runs the server, without its secret settings
    (:func:`start_spark_server` gives them in a private ``--properties-file``).

    Example:
        >>> command = server_command(15002)
        >>> command[1:3]
        ['--class', 'org.apache.spark.sql.connect.service.SparkConnectServer']
    """
    return _server_launch(port, host=host, master=master, spark_conf=spark_conf, warehouse_dir=warehouse_dir)[0]


def _server_launch(
    port: int,
    *,
    host: str,
    master: str,
    spark_conf: Optional[Mapping[str, str]],
    warehouse_dir: Optional[str],
    main_class: str = SERVER_CLASS,
    app_args: Sequence[str] = (),
    label: str = "Spark Connect server",
) -> tuple[list[str], list[str], dict[str, str]]:
    """The server's ``spark-submit`` command, the jars for its class path, and the secret
    settings the command leaves out."""
    conf: dict[str, str] = {**EMBEDDED_DEFAULTS, **DELTA_EXTENSIONS}
    conf["spark.connect.grpc.binding.address"] = host
    conf["spark.connect.grpc.binding.port"] = str(port)
    if warehouse_dir:
        conf["spark.sql.warehouse.dir"] = warehouse_dir
    conf.update(spark_conf or {})
    conf, class_path = class_path_jars(with_delta_jars(conf), master)
    # The server's JVM: the throughput collector, and it maps the class-data archive.
    conf = with_archive(with_throughput_gc(conf))
    command = [os.path.join(pyspark_home(), "bin", "spark-submit"), "--class", main_class]
    command += ["--name", f"assetlake {label}", "--master", master]
    if conf.get("spark.jars"):
        command += ["--jars", conf.pop("spark.jars")]
    if conf.get("spark.jars.packages"):
        command += ["--packages", conf.pop("spark.jars.packages")]
    public, secret = split_secret_settings(conf)
    for key, value in public.items():
        command += ["--conf", f"{key}={value}"]
    if app_args:
        # A class inside Spark's own jars has no application jar: spark-submit's placeholder.
        command += ["spark-internal", *app_args]
    return command, class_path, secret


def server_env(host: str = DEFAULT_HOST) -> dict[str, str]:
    """The server's environment: PySpark's Spark home, this Python for UDF workers."""
    env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV}
    env["SPARK_HOME"] = pyspark_home()
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    if is_loopback(host):
        # Otherwise Spark binds its driver to the machine's first non-loopback address.
        env["SPARK_LOCAL_IP"] = host
    return env


def free_port(host: str = DEFAULT_HOST) -> int:
    """A TCP port on ``host`` that is free right now (for tests and scripts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    """Whether ``port`` on ``host`` can be bound right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def wait_until_listening(server: ConnectServer, timeout: float, address: Optional[tuple[str, int]] = None) -> None:
    """Wait until the server accepts connections on its port (or at ``address``, another
    one it opens), failing as soon as its process exits.

    Raises:
        ConnectServerError: the process exited first, or ``timeout`` seconds passed; the
            message ends with the log tail.
    """
    host, port = address or (server.host, server.port)
    dial = dial_host(host)
    deadline = time.monotonic() + timeout
    while True:
        code = server.process.poll()
        if code is not None:
            raise ConnectServerError(
                f"the {server.label} exited with code {code} before listening on "
                f"{host}:{port}. Log tail ({server.log_path}):\n{server.log_tail()}"
            )
        try:
            with socket.create_connection((dial, port), timeout=1.0):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise ConnectServerError(
                f"the {server.label} did not listen on {host}:{port} "
                f"within {timeout:.0f} s. Log tail ({server.log_path}):\n{server.log_tail()}"
            )
        time.sleep(0.25)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m assetlake_dagster.spark.connect_server``: run a server until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m assetlake_dagster.spark.connect_server",
        description="Run a local Spark Connect server with Delta for SparkDeltaResource(remote=...).",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"gRPC port (default {DEFAULT_PORT})")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"listen address (default {DEFAULT_HOST})")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--warehouse-dir", help="spark.sql.warehouse.dir of the server")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE",
        help="extra Spark setting (repeatable); not a secret one: a command line is visible to every local user",
    )
    parser.add_argument(
        "--conf-file", metavar="FILE",
        help="Spark settings, one KEY=VALUE a line (# comments), in a file only you can read (chmod 600): "
        "the way to give secret settings (keys, tokens, passwords)",
    )
    args = parser.parse_args(argv)
    conf = {}
    if args.conf_file:
        try:
            conf.update(read_conf_file(args.conf_file))
        except (OSError, ValueError) as exc:
            parser.error(str(exc))
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--conf {key if is_secret_setting(key) else item!r}: expected KEY=VALUE")
        if is_secret_setting(key):
            parser.error(
                f"--conf {key}=***: a secret setting on a command line is visible to every local user (ps). "
                "Put it in a file only you can read (chmod 600) and pass --conf-file FILE."
            )
        conf[key] = value
    try:
        server = start_connect_server(
            args.port, host=args.host, master=args.master, spark_conf=conf, warehouse_dir=args.warehouse_dir
        )
    except ConnectServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return serve_until_stopped(server, f"Spark Connect with Delta at {server.url}")


def read_conf_file(path: str) -> dict[str, str]:
    """The settings of a ``--conf-file``: one ``KEY=VALUE`` a line, ``#`` comments.

    Raises:
        UsageError: the file can be read by other users, or a line is not ``KEY=VALUE``.
    """
    if os.stat(path).st_mode & 0o077:
        raise UsageError(f"--conf-file {path} can be read by other users. Make it yours alone: chmod 600 {path}")
    conf = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            key, sep, value = text.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"{path}:{number}: expected KEY=VALUE.")
            conf[key.strip()] = value.strip()
    return conf


def serve_until_stopped(server: ConnectServer, banner: str) -> int:
    """Print ``banner`` and the log's path, then wait until the server exits, Ctrl-C or
    ``kill``; the server (its whole process group) is stopped on the way out."""
    print(f"{banner} (log: {server.log_path}). Ctrl-C stops it.", flush=True)
    # `kill <pid>` too: without this, SIGTERM ends Python without its `finally`, and the
    # server's JVM (a process group of its own) would outlive it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        return server.process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
