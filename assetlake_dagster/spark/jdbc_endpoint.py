"""Where the lake's JDBC server listens: a port, and loopback unless the user says otherwise.

Spark's Thrift JDBC/ODBC server has no authentication of its own (any user name, any
password): whoever reaches its port reads, changes and drops the lake's tables as the
user who runs it. So it listens on loopback by default, and another address needs an
explicit ``allow_remote`` (``ASSETLAKE_JDBC_ALLOW_REMOTE=1``, ``--allow-remote``).

Example:
    >>> JdbcEndpoint.resolve(port=10000).url
    'jdbc:hive2://127.0.0.1:10000/default'
    >>> JdbcEndpoint.resolve(env={}) is None
    True
    >>> JdbcEndpoint.resolve(port=10000, host="0.0.0.0", allow_remote=True).no_auth_warning().split(":")[0]
    'warning'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional, Union

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.spark.loopback import dial_host, is_loopback

JDBC_PORT_ENV = "ASSETLAKE_JDBC_PORT"
JDBC_HOST_ENV = "ASSETLAKE_JDBC_HOST"
JDBC_ALLOW_REMOTE_ENV = "ASSETLAKE_JDBC_ALLOW_REMOTE"
DEFAULT_JDBC_HOST = "127.0.0.1"
DEFAULT_JDBC_PORT = 10000
_TRUE = ("1", "true", "yes", "on")
#: Why a JDBC server (the engine's or a standalone one) needs the lake's Hive catalog.
NEEDS_HIVE_CATALOG = (
    "a JDBC server lists the tables of the lake's Hive metastore, and this lake registers them in the "
    "in-memory session catalog, which no JDBC client would see. Set ASSETLAKE_CATALOG=hive (and run "
    "`assetlake catalog sync` once)."
)


@dataclass(frozen=True)
class JdbcEndpoint:
    """The address of a Thrift JDBC server.

    Attributes:
        port: its TCP port.
        host: the address it listens on (``127.0.0.1`` unless allowed otherwise).
    """

    port: int
    host: str = DEFAULT_JDBC_HOST

    @property
    def url(self) -> str:
        """The ``jdbc:hive2://`` URL a client connects to (loopback when it listens everywhere)."""
        return f"jdbc:hive2://{dial_host(self.host)}:{self.port}/default"

    @property
    def is_loopback(self) -> bool:
        """Whether only this machine can connect."""
        return is_loopback(self.host)

    def hiveconf_args(self) -> list[str]:
        """The Thrift server's command-line arguments that place it at this address."""
        settings = {"hive.server2.thrift.port": str(self.port), "hive.server2.thrift.bind.host": self.host}
        return [item for key, value in settings.items() for item in ("--hiveconf", f"{key}={value}")]

    def no_auth_warning(self) -> Optional[str]:
        """What to tell the user when the server is reachable from other machines, else ``None``."""
        if self.is_loopback:
            return None
        return (
            f"warning: the JDBC server listens on {self.host}:{self.port} and has no authentication of its own: "
            "anyone who reaches that address can read, change and drop every table of this lake as you. "
            "Keep it behind a firewall or an authenticating proxy."
        )

    @classmethod
    def resolve(
        cls,
        port: Union[int, str, None] = None,
        host: Optional[str] = None,
        allow_remote: Optional[bool] = None,
        *,
        env: Optional[Mapping[str, str]] = None,
    ) -> Optional[JdbcEndpoint]:
        """The endpoint the arguments ask for, each falling back to the environment
        (``ASSETLAKE_JDBC_PORT``, ``ASSETLAKE_JDBC_HOST``, ``ASSETLAKE_JDBC_ALLOW_REMOTE``);
        ``None`` when no port is given.

        Raises:
            ConfigError: the port is not a TCP port, or the host is not loopback and
                ``allow_remote`` is not set.
        """
        env = os.environ if env is None else env
        raw = port if port is not None else (env.get(JDBC_PORT_ENV) or None)
        if raw is None:
            return None
        try:
            number = int(raw)
        except (TypeError, ValueError):
            number = -1
        if not 1 <= number <= 65535:
            source = "jdbc_port" if port is not None else JDBC_PORT_ENV
            raise ConfigError(f"{source}={raw!r} is not a TCP port. Give one from 1 to 65535, e.g. {JDBC_PORT_ENV}={DEFAULT_JDBC_PORT}.")
        endpoint = cls(number, host or env.get(JDBC_HOST_ENV) or DEFAULT_JDBC_HOST)
        if allow_remote is None:
            allow_remote = env.get(JDBC_ALLOW_REMOTE_ENV, "").strip().lower() in _TRUE
        if not endpoint.is_loopback and not allow_remote:
            raise ConfigError(
                f"the JDBC server would listen on {endpoint.host}:{endpoint.port}, and Spark's Thrift server has no "
                "authentication of its own: anyone who reaches that address could read, change and drop every table "
                f"of the lake. Leave the host at {DEFAULT_JDBC_HOST} (and tunnel, e.g. `ssh -L`), or say that you mean it: "
                f"jdbc_allow_remote (--allow-remote, {JDBC_ALLOW_REMOTE_ENV}=1)."
            )
        return endpoint
