"""Spark's own Thrift JDBC/ODBC server over the lake's catalog, for clients that are not ours.

PySpark ships the Thrift server (``spark-hive-thriftserver``) and Hive's ``beeline``: with
the Delta jars and the lake's Hive metastore settings, any JDBC client (``beeline``, BI
tools, DBeaver) lists and reads the tables assetlake registered. An embedded metastore is
open in one JVM at a time, so stop the lake's engine first (``assetlake engine stop``).

From a shell (runs until Ctrl-C; loopback only)::

    ASSETLAKE_CATALOG=hive python -m assetlake_dagster.spark.thrift_server --port 10000
    beeline -u jdbc:hive2://127.0.0.1:10000/default -e 'SHOW TABLES IN analytics'

Example:
    >>> with start_thrift_server(SparkDeltaResource(catalog="hive"), 10000) as server:  # doctest: +SKIP
    ...     print(jdbc_url(server))
    jdbc:hive2://127.0.0.1:10000/default
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.errors import AssetlakeError, ConfigError
from assetlake_dagster.lake.catalog import HIVE_CATALOG
from assetlake_dagster.spark.connect_server import DEFAULT_HOST, ConnectServer, serve_until_stopped, start_spark_server
from assetlake_dagster.spark.install import pyspark_home

if TYPE_CHECKING:
    from assetlake_dagster.resources import SparkDeltaResource

THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
DEFAULT_THRIFT_PORT = 10000


def start_thrift_server(
    resource: SparkDeltaResource,
    port: int = DEFAULT_THRIFT_PORT,
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
    hiveconf = {"hive.server2.thrift.port": str(port), "hive.server2.thrift.bind.host": host}
    args = [item for key, value in hiveconf.items() for item in ("--hiveconf", f"{key}={value}")]
    return start_spark_server(
        port,
        host=host,
        master=resource.resolved_master(),
        spark_conf=resource.server_spark_conf(),
        warehouse_dir=resource.lake.warehouse_dir,
        log_path=log_path,
        main_class=THRIFT_SERVER_CLASS,
        app_args=args,
        label="Spark Thrift JDBC server",
    )


def jdbc_url(server: ConnectServer, database: str = "default") -> str:
    """The server's ``jdbc:hive2://`` URL."""
    return f"jdbc:hive2://{server.host}:{server.port}/{database}"


def beeline_path() -> str:
    """Hive's ``beeline`` client as PySpark ships it."""
    return os.path.join(pyspark_home(), "bin", "beeline")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m assetlake_dagster.spark.thrift_server``: serve the lake over JDBC until Ctrl-C."""
    from assetlake_dagster.resources import SparkDeltaResource

    parser = argparse.ArgumentParser(
        prog="python -m assetlake_dagster.spark.thrift_server",
        description="Run Spark's Thrift JDBC server on the lake's Hive metastore (ASSETLAKE_CATALOG=hive).",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_THRIFT_PORT, help=f"port (default {DEFAULT_THRIFT_PORT})")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"listen address (default {DEFAULT_HOST})")
    parser.add_argument("--lake-root", default=None, help="the lake root (default: $ASSETLAKE_LAKE_ROOT or .assetlake/lake)")
    args = parser.parse_args(argv)
    try:
        server = start_thrift_server(SparkDeltaResource(lake_root=args.lake_root), args.port, host=args.host)
    except AssetlakeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return serve_until_stopped(server, f"Spark Thrift JDBC server at {jdbc_url(server)}")


if __name__ == "__main__":
    sys.exit(main())
