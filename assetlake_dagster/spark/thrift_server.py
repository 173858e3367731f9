"""Spark's own Thrift JDBC/ODBC server over the lake's catalog, for clients that are not ours.

PySpark ships the Thrift server (``spark-hive-thriftserver``) and Hive's ``beeline``: with
the Delta jars and the lake's Hive metastore settings, any JDBC client (``beeline``, BI
tools, DBeaver) lists and reads the tables assetlake registered.

Two ways to run it. An embedded metastore is open in one JVM at a time, so beside the
pipelines it runs inside the warm engine's JVM: :func:`start_connect_and_jdbc_server`
starts the Thrift server application with Spark Connect as its plugin, and one Spark
driver serves runs and JDBC clients from one catalog (``assetlake jdbc``,
``ASSETLAKE_JDBC_PORT``). :func:`start_thrift_server` is the standalone server, for a lake
whose runs do not use the warm engine; the engine must then be stopped (``assetlake jdbc
--standalone``).

From a shell (runs until Ctrl-C; loopback only)::

    ASSETLAKE_CATALOG=hive assetlake jdbc --port 10000
    beeline -u jdbc:hive2://127.0.0.1:10000/default -e 'SHOW TABLES IN analytics'

Example:
    >>> with start_thrift_server(SparkDeltaResource(catalog="hive"), 10000) as server:  # doctest: +SKIP
    ...     print(jdbc_url(server))
    jdbc:hive2://127.0.0.1:10000/default
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.catalog import HIVE_CATALOG
from assetlake_dagster.spark.connect_server import (
    DEFAULT_HOST,
    ConnectServer,
    ConnectServerError,
    port_is_free,
    serve_until_stopped,
    start_spark_server,
    wait_until_listening,
)
from assetlake_dagster.spark.install import pyspark_home
from assetlake_dagster.spark.jdbc_endpoint import DEFAULT_JDBC_PORT, JdbcEndpoint

if TYPE_CHECKING:
    from assetlake_dagster.resources import SparkDeltaResource

THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
#: Spark Connect as a plugin of another Spark application (shipped in PySpark's jars).
CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
PLUGINS_CONF = "spark.plugins"


def start_connect_and_jdbc_server(
    port: int,
    jdbc: JdbcEndpoint,
    *,
    host: str = DEFAULT_HOST,
    master: str = "local[*]",
    spark_conf: Optional[Mapping[str, str]] = None,
    warehouse_dir: Optional[str] = None,
    log_path: Optional[str] = None,
    timeout: float = 180.0,
    pass_fds: Sequence[int] = (),
) -> ConnectServer:
    """One Spark driver serving Spark Connect on ``host:port`` and JDBC at ``jdbc``.

    The application is Spark's Thrift server, with Spark Connect as its plugin: both
    protocols share one SparkContext and one catalog, so an embedded Hive metastore (one
    JVM at a time) serves runs and JDBC clients at once. The arguments are
    :func:`~assetlake_dagster.spark.connect_server.start_connect_server`'s; it returns once
    both ports accept connections.

    Raises:
        ConnectServerError: a port is taken, or the server exited or did not listen in time.

    Example:
        >>> with start_connect_and_jdbc_server(15002, JdbcEndpoint(10000), spark_conf=hive_conf) as server:  # doctest: +SKIP
        ...     resource = SparkDeltaResource(remote=server.url, catalog="hive")
    """
    if not port_is_free(jdbc.host, jdbc.port):
        raise ConnectServerError(
            f"the JDBC port {jdbc.port} on {jdbc.host} is already in use. Stop what listens there or choose another "
            "port (ASSETLAKE_JDBC_PORT, --port)."
        )
    conf = dict(spark_conf or {})
    plugins = [name for name in conf.get(PLUGINS_CONF, "").split(",") if name.strip()]
    conf[PLUGINS_CONF] = ",".join([*plugins, CONNECT_PLUGIN] if CONNECT_PLUGIN not in plugins else plugins)
    server = start_spark_server(
        port, host=host, master=master, spark_conf=conf, warehouse_dir=warehouse_dir, log_path=log_path,
        timeout=timeout, main_class=THRIFT_SERVER_CLASS, app_args=jdbc.hiveconf_args(),
        label="Spark Connect and Thrift JDBC server", pass_fds=pass_fds,
    )
    try:
        # Spark Connect listens once the SparkContext is up; the Thrift service a few seconds later.
        wait_until_listening(server, timeout, address=(jdbc.host, jdbc.port))
    except BaseException:
        server.stop()
        raise
    return server


def start_thrift_server(
    resource: SparkDeltaResource,
    port: int = DEFAULT_JDBC_PORT,
    *,
    host: str = DEFAULT_HOST,
    log_path: Optional[str] = None,
) -> ConnectServer:
    """Start Spark's Thrift JDBC server on the lake and catalog of ``resource``.

    Raises:
        ConfigError: the lake's catalog is not ``hive`` (the session catalog lives in one
            engine's memory: a server of its own would list nothing), or its engine runs
            while the metastore is embedded.
        ConnectServerError: the server did not start (its log tail is in the message).
    """
    catalog = resource.catalog_settings()
    if catalog.kind != HIVE_CATALOG:
        raise ConfigError(
            "the Thrift server reads the lake's Hive metastore, and this lake registers its tables in the "
            "in-memory session catalog. Set ASSETLAKE_CATALOG=hive (and run `assetlake catalog sync` once)."
        )
    if catalog.embedded and resource.engine().status() is not None:
        raise ConfigError(
            f"the lake's warm engine holds the embedded Hive metastore ({catalog.metastore_dir}), which one "
            "JVM can open at a time. Stop it first: `assetlake engine stop`."
        )
    return start_spark_server(
        port,
        host=host,
        master=resource.resolved_master(),
        spark_conf=resource.server_spark_conf(),
        warehouse_dir=resource.lake.warehouse_dir,
        log_path=log_path,
        main_class=THRIFT_SERVER_CLASS,
        app_args=JdbcEndpoint(port, host).hiveconf_args(),
        label="Spark Thrift JDBC server",
    )


def jdbc_url(server: ConnectServer, database: str = "default") -> str:
    """The server's ``jdbc:hive2://`` URL."""
    return f"jdbc:hive2://{server.host}:{server.port}/{database}"


def beeline_path() -> str:
    """Hive's ``beeline`` client as PySpark ships it."""
    return os.path.join(pyspark_home(), "bin", "beeline")


def serve_jdbc(resource: SparkDeltaResource, *, standalone: bool = False, out=sys.stdout) -> int:
    """``assetlake jdbc``: serve the lake over JDBC until Ctrl-C; returns the exit code.

    On the warm engine (the default mode), the engine serves it from its own JVM: an engine
    is started with JDBC when none runs, and this command holds it (a lease) until Ctrl-C,
    so that it does not stop for idleness while clients read; afterwards it stops after its
    idle timeout as usual. With ``standalone`` (or a lake whose runs use another mode), a
    server of its own runs in the foreground.

    Raises:
        ConfigError: no Hive catalog, a non-loopback host without ``jdbc_allow_remote``, or
            a standalone server while the engine holds the embedded metastore.
        EngineError: the running engine serves no JDBC (or another port).
    """
    import signal
    import time

    from assetlake_dagster.spark.engine import is_supervisor

    endpoint = resource.jdbc_endpoint()
    if endpoint is None:
        raise ConfigError(f"no JDBC port given. Pass --port {DEFAULT_JDBC_PORT} (or set ASSETLAKE_JDBC_PORT).")
    if standalone or resource.resolved_mode() != "engine":
        server = start_thrift_server(resource, endpoint.port, host=endpoint.host)
        return serve_until_stopped(server, f"Spark Thrift JDBC server at {jdbc_url(server)}")
    state = resource.engine_state()
    warning = endpoint.no_auth_warning()
    if warning:
        print(warning, file=sys.stderr, flush=True)
    print(
        f"JDBC at {endpoint.url}, served by the lake's warm engine {state.display_url} beside the runs (log: "
        f"{state.log_path}). Ctrl-C stops holding it; it then stops after {state.idle_timeout:.0f} s without users.",
        file=out, flush=True,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while is_supervisor(state.supervisor_pid):
            time.sleep(1.0)
    except KeyboardInterrupt:
        return 0
    print(f"the warm engine stopped (see {state.log_path})", file=sys.stderr, flush=True)
    return 1
