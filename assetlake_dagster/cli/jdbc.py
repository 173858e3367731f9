"""``assetlake jdbc``: the lake's tables over JDBC, from the warm engine or a server of its own.

The servers themselves are :mod:`assetlake_dagster.spark.thrift_server`'s; this module decides
which one a lake gets and checks what would make it useless (no Hive catalog) or impossible
(a standalone server while the engine holds the embedded metastore).

Example:
    >>> with start_thrift_server(SparkDeltaResource(catalog="hive"), 10000) as server:  # doctest: +SKIP
    ...     print(jdbc_url(server))
    jdbc:hive2://127.0.0.1:10000/default
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Optional, TextIO

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.catalog import HIVE_CATALOG
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.spark.connect_server import DEFAULT_HOST, ConnectServer, serve_until_stopped
from assetlake_dagster.spark.engine import is_supervisor
from assetlake_dagster.spark.jdbc_endpoint import DEFAULT_JDBC_PORT, NEEDS_HIVE_CATALOG
from assetlake_dagster.spark.thrift_server import jdbc_url, start_standalone_thrift_server


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
        raise ConfigError(NEEDS_HIVE_CATALOG)
    if catalog.embedded and resource.engine().status() is not None:
        raise ConfigError(
            f"the lake's warm engine holds the embedded Hive metastore ({catalog.metastore_dir}), which one "
            "JVM can open at a time. Stop it first: `assetlake engine stop`."
        )
    return start_standalone_thrift_server(
        port,
        host=host,
        master=resource.resolved_master(),
        spark_conf=resource.server_spark_conf(),
        warehouse_dir=resource.lake.warehouse_dir,
        log_path=log_path,
    )


def serve_jdbc(resource: SparkDeltaResource, *, standalone: bool = False, out: Optional[TextIO] = None) -> int:
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
    out = out or sys.stdout
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
