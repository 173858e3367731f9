"""Where a run's Spark sessions come from: a remote Connect server, the lake's warm engine,
or a classic in-process session.

:class:`~assetlake_dagster.defs.resources.SparkDeltaResource` turns its fields (and the
environment) into a :class:`SessionSource`; everything about handing out, configuring and
releasing sessions lives here, below Dagster.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.spark.engine import (
    EngineState,
    WarmEngine,
    is_supervisor,
    new_engine_session,
    record_session,
)
from assetlake_dagster.spark.jdbc_endpoint import JdbcEndpoint
from assetlake_dagster.spark.secret_settings import redact_url
from assetlake_dagster.spark.session import (
    apply_session_conf,
    build_spark_session,
    connect_session,
    fail_fast,
    is_connect_session,
    new_connect_session,
)

if TYPE_CHECKING:  # PySpark loads with the first session, not with the definitions
    from pyspark.sql import SparkSession

MODE_ENV = "ASSETLAKE_SPARK_MODE"
MASTER_ENV = "ASSETLAKE_SPARK_MASTER"
REMOTE_ENV = "ASSETLAKE_SPARK_REMOTE"
ENGINE_MODE = "engine"
LOCAL_MODE = "local"
REMOTE_MODE = "remote"
MODES = (ENGINE_MODE, LOCAL_MODE)
DEFAULT_MASTER = "local[*]"


def resolve_remote(remote: Optional[str]) -> Optional[str]:
    """The Spark Connect URL in use, if any (``remote``, else ``$ASSETLAKE_SPARK_REMOTE``)."""
    return remote or os.environ.get(REMOTE_ENV) or None


def resolve_mode(mode: Optional[str], remote: Optional[str]) -> str:
    """``remote``, ``engine`` or ``local``.

    Example:
        >>> resolve_mode("LOCAL", None)
        'local'
        >>> resolve_mode(None, "sc://spark:15002")
        'remote'
    """
    if resolve_remote(remote):
        return REMOTE_MODE
    chosen = (mode or os.environ.get(MODE_ENV) or ENGINE_MODE).strip().lower()
    if chosen not in MODES:
        source = "mode" if mode else MODE_ENV
        raise ConfigError(f"{source}={chosen!r} is not a Spark mode. Use one of: {', '.join(MODES)}.")
    return chosen


def resolve_master(master: Optional[str]) -> str:
    """The master URL of the engine or of the in-process session."""
    return master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER


@dataclass(frozen=True)
class SessionSource:
    """One way to get sessions for one lake, resolved.

    Attributes:
        mode: ``remote``, ``engine`` or ``local``.
        remote: the Connect URL (``remote`` mode).
        master: the engine's or the in-process session's master.
        session_conf: settings each session gets (SQL settings; static ones only at start).
        server_conf: everything a driver of this lake starts with (connectors, then
            ``session_conf``).
        engine_dir: the warm engine's state folder.
        warehouse_dir: the session catalog's warehouse in the lake.
        local_root: the lake's folder, created before a local driver starts (``None``
            for a lake at a URL).
        idle_timeout: seconds without users before the warm engine stops itself.
        app_name: the in-process session's application name.
        local_refusal: why no in-process driver may start for this lake (the message of
            the :class:`~assetlake_dagster.errors.ConfigError` raised then), if so.
        jdbc: where the warm engine also serves JDBC, when asked to.
    """

    mode: str
    remote: Optional[str]
    master: str
    session_conf: Mapping[str, str]
    server_conf: Mapping[str, str]
    engine_dir: str
    warehouse_dir: str
    local_root: Optional[str] = None
    idle_timeout: Optional[float] = None
    app_name: str = "assetlake"
    local_refusal: Optional[str] = None
    jdbc: Optional[JdbcEndpoint] = None

    def get_session(self) -> SparkSession:
        """This process's shared session (created on first use, then reused)."""
        if self.mode == REMOTE_MODE:
            return connect_session(self.remote, self.session_conf)
        if self.mode == LOCAL_MODE:
            return self._local_session()
        state = self.engine_state()
        session = connect_session(state.url)
        record_session(state, session)  # so the engine interrupts its writes if this process dies
        fail_fast(session)
        self._apply_conf(session)
        return session

    def new_session(self) -> SparkSession:
        """A session of its own: its ``SET``s and temp views are seen by no other."""
        if self.mode == REMOTE_MODE:
            session = new_connect_session(self.remote)
        elif self.mode == LOCAL_MODE:
            session = self._local_session().newSession()
            _set_runtime_conf(session, self.session_conf)
        else:
            session = new_engine_session(self.engine_state())
        self._apply_conf(session)
        return session

    def engine(self) -> WarmEngine:
        """The warm engine of this lake (not started until used)."""
        return WarmEngine(
            self.engine_dir,
            master=self.master,
            idle_timeout=self.idle_timeout,
            spark_conf=dict(self.server_conf),
            warehouse_dir=self.warehouse_dir,
            jdbc=self.jdbc,
        )

    def engine_state(self) -> EngineState:
        """The running warm engine of this lake, started (or replaced) if needed."""
        engine = self.engine()
        if self.local_root is not None:
            os.makedirs(self.local_root, exist_ok=True)
        with _engine_lock:
            known = _engines.get(engine.state_dir)
            # Cheap path for a process that already checked this engine: same state file,
            # supervisor alive. A new or changed engine is probed (ensure).
            if (known is not None and engine.read_state() == known and engine.accepts(known)
                    and is_supervisor(known.supervisor_pid)):
                engine.hold_lease()
                return known
            state = engine.ensure()
            _engines[engine.state_dir] = state
            return state

    def _apply_conf(self, session: SparkSession) -> None:
        if self.mode == REMOTE_MODE:
            fix = f"Set it on the server ({redact_url(self.remote)}) instead."
        else:
            fix = "It is a server setting: stop the warm engine with `assetlake engine stop` and the next run starts one with it."
        apply_session_conf(session, self.session_conf, fix=fix)

    def _local_session(self) -> SparkSession:
        if self.local_refusal:
            raise ConfigError(self.local_refusal)
        if self.local_root is not None:
            os.makedirs(self.local_root, exist_ok=True)
        return build_spark_session(
            master=self.master,
            app_name=self.app_name,
            spark_conf=dict(self.server_conf),
            warehouse_dir=self.warehouse_dir,
        )


def _set_runtime_conf(session: SparkSession, conf: Mapping[str, str]) -> None:
    """The SQL settings of ``conf`` on a new classic session: ``newSession()`` starts from the
    JVM's own settings, which lack them when another configuration started this process's JVM
    (a notebook, a test suite). Static settings stay the JVM's: they cannot change now."""
    for key, value in conf.items():
        try:
            session.conf.set(key, value)
        except Exception:  # noqa: BLE001 - a static or core setting: the JVM's value stands
            continue


def release_session(session: SparkSession) -> None:
    """Release a session from :meth:`SessionSource.new_session` (a no-op in process:
    stopping a classic session would stop the shared JVM)."""
    if is_connect_session(session):
        try:
            session.stop()
        except Exception:  # noqa: BLE001 - a session on a lost server is gone anyway
            pass


#: Engines this process has checked, by state folder.
_engines: dict[str, EngineState] = {}
_engine_lock = threading.Lock()
