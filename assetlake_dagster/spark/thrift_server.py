"""Spark's own Thrift JDBC/ODBC server over the lake's catalog, for clients that are not ours.

PySpark ships the Thrift server (``spark-hive-thriftserver``) and Hive's ``beeline``: with
the Delta jars and the lake's Hive metastore settings, any JDBC client (``beeline``, BI
tools, DBeaver) lists and reads the tables assetlake registered.

Two ways to run it. An embedded metastore is open in one JVM at a time, so beside the
pipelines it runs inside the warm engine's JVM: :func:`start_connect_and_jdbc_server`
starts the Thrift server application with Spark Connect as its plugin, and one Spark
driver serves runs and JDBC clients from one catalog (``assetlake jdbc``,
``ASSETLAKE_JDBC_PORT``). :func:`start_standalone_thrift_server` is a server of its own, for
a lake whose runs do not use the warm engine (``assetlake jdbc --standalone``, which
checks the lake's catalog first: :mod:`assetlake_dagster.cli.jdbc`).

From a shell (runs until Ctrl-C; loopback only)::

    ASSETLAKE_CATALOG=hive assetlake jdbc --port 10000
    beeline -u jdbc:hive2://127.0.0.1:10000/default -e 'SHOW TABLES IN analytics'

Example:
    >>> with start_standalone_thrift_server(10000, spark_conf=hive_conf) as server:  # doctest: +SKIP
    ...     print(jdbc_url(server))
    jdbc:hive2://127.0.0.1:10000/default
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Optional

from assetlake_dagster.spark.connect_server import (
    DEFAULT_HOST,
    ConnectServer,
    ConnectServerError,
    port_is_free,
    start_spark_server,
    wait_until_listening,
)
from assetlake_dagster.spark.install import pyspark_home
from assetlake_dagster.spark.jdbc_endpoint import DEFAULT_JDBC_PORT, JdbcEndpoint

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


def start_standalone_thrift_server(
    port: int = DEFAULT_JDBC_PORT,
    *,
    host: str = DEFAULT_HOST,
    master: str = "local[*]",
    spark_conf: Optional[Mapping[str, str]] = None,
    warehouse_dir: Optional[str] = None,
    log_path: Optional[str] = None,
) -> ConnectServer:
    """Spark's Thrift JDBC server as an application of its own, on ``host:port``.

    Raises:
        ConnectServerError: the server did not start (its log tail is in the message).
    """
    return start_spark_server(
        port,
        host=host,
        master=master,
        spark_conf=spark_conf,
        warehouse_dir=warehouse_dir,
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
