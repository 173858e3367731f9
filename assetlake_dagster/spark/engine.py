"""The warm engine: one local Spark Connect server with Delta per lake, shared by every process.

Starting a JVM with Delta costs 6-11 s (minutes under load); a Spark Connect client gets a
session on a running server in well under a second. So the embedded default is one
long-lived server per lake, started by the first process that needs it and found again by
the later ones (runs of ``dagster dev``, ``dagster asset materialize``, the ``assetlake``
CLI, tests). It is also what makes concurrent runs safe on a local disk: Delta's local log
store is only mutually exclusive inside one JVM, and every writer now goes through one.

Layout of the engine's state folder (``<lake_root>/.assetlake/engine`` by default,
``$ASSETLAKE_ENGINE_DIR`` overrides)::

    engine.json    host, port, token, pids, master, log path (mode 0600: it holds the token)
    engine.lock    held while a process starts, checks or stops the engine
    engine.lease   every process using the engine holds a shared lock on it
    engine.exit    why the last engine stopped, when its Spark server died unexpectedly
    engine.log     the supervisor's and the Spark server's log
    clients/       ``<pid>-<start>.json`` per process with sessions on the engine: their ids,
                   so that the supervisor interrupts a dead process's operations

A small supervisor process (:mod:`assetlake_dagster.spark.engine_supervisor`) owns the JVM: it
stops it after ``idle_timeout`` seconds without users (nobody holds the lease) and on
SIGTERM/SIGINT (``assetlake engine stop``). This module is the client side: find, start,
lease, check and stop an engine.

Trust model: the server listens on loopback only and requires a random pre-shared token
(Spark Connect's ``spark.connect.authenticate.token``) that only the state file holds,
readable by its owner alone. It runs as the user who started it and reads and writes
that user's files: it is a personal engine, not a multi-user service. Clients dial
``localhost`` (PySpark sends a token over a plain channel to no other host), and the engine
holds every address that name resolves to, so no other local process can take the token
(:mod:`assetlake_dagster.spark.loopback`). Secret settings of ``spark_conf`` reach the engine
through a private file, never a command line (:mod:`assetlake_dagster.spark.secret_settings`).
Asked to (``ASSETLAKE_JDBC_PORT``, ``assetlake jdbc``), the engine's JVM also serves Spark's
Thrift JDBC protocol, which has no authentication: that port is open to every local user.
"""

import atexit
import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake.catalog import CATALOG_IMPLEMENTATION_CONF, HIVE_CATALOG, IMPLEMENTATIONS, SESSION_CATALOG
from assetlake_dagster.lake.identity import canonical_lake_root, lake_key
from assetlake_dagster.lake.storage import url_scheme
from assetlake_dagster.spark.jdbc_endpoint import NEEDS_HIVE_CATALOG, JdbcEndpoint
from assetlake_dagster.spark.loopback import unguarded_addresses
from assetlake_dagster.spark.secret_settings import redact, split_secret_settings, write_private_file

ENGINE_DIR_ENV = "ASSETLAKE_ENGINE_DIR"
IDLE_TIMEOUT_ENV = "ASSETLAKE_ENGINE_IDLE_TIMEOUT"
HEALTH_TIMEOUT_ENV = "ASSETLAKE_ENGINE_HEALTH_TIMEOUT"
#: Seconds without any user before the engine stops itself.
DEFAULT_IDLE_TIMEOUT_S = 1800
#: A server that does not answer a trivial request within this time is considered hung.
HEALTH_TIMEOUT_S = 30.0
#: Seconds for the supervisor to bring the server up (a cold JVM with Delta, under load).
START_TIMEOUT_S = 300.0
HOST = "127.0.0.1"
#: What an engine records of its catalog when it was started without one chosen.
DEFAULT_CATALOG_IMPLEMENTATION = IMPLEMENTATIONS[SESSION_CATALOG]
#: The client must say "localhost" to send its token over a plain loopback channel (PySpark
#: 4.0.1 checks the name, not the address); the engine holds every address it names.
CLIENT_HOST = "localhost"
#: The supervisor's module; its name in a process's command line marks an engine supervisor.
SUPERVISOR_MODULE = "assetlake_dagster.spark.engine_supervisor"
#: The folder of the engine's state where each client process lists its sessions.
CLIENTS_FOLDER = "clients"


class EngineError(AssetlakeError):
    """The warm engine could not be started, found or reached."""


@dataclass(frozen=True)
class EngineState:
    """What ``engine.json`` records about a running engine.

    Attributes:
        host: the address the server listens on (loopback).
        port: its gRPC port.
        token: the pre-shared token clients must send.
        supervisor_pid: the supervisor process (the one to signal).
        server_pid: the ``spark-submit`` JVM process (its own process group).
        master: the Spark master the engine runs on.
        log_path: the combined log of supervisor and server.
        started_at: UNIX time the engine was started.
        idle_timeout: seconds without users before it stops itself.
        catalog: its ``spark.sql.catalogImplementation`` (``in-memory`` or ``hive``).
        jdbc_host: where its Thrift JDBC server listens, when it serves one.
        jdbc_port: that server's port.
    """

    host: str
    port: int
    token: str
    supervisor_pid: int
    server_pid: int
    master: str
    log_path: str
    started_at: float
    idle_timeout: float
    catalog: str = DEFAULT_CATALOG_IMPLEMENTATION
    jdbc_host: Optional[str] = None
    jdbc_port: Optional[int] = None

    @property
    def jdbc(self) -> Optional[JdbcEndpoint]:
        """Its Thrift JDBC server, or ``None`` when it serves Spark Connect only."""
        if self.jdbc_port is None:
            return None
        return JdbcEndpoint(self.jdbc_port, self.jdbc_host or "127.0.0.1")

    @property
    def url(self) -> str:
        """The Spark Connect URL, token included."""
        return f"sc://{CLIENT_HOST}:{self.port}/;token={self.token}"

    @property
    def display_url(self) -> str:
        """The URL without its secret, for messages and logs."""
        return f"sc://{CLIENT_HOST}:{self.port}"

    @property
    def clients_dir(self) -> str:
        """Where processes record their sessions (``clients/`` beside ``engine.log``)."""
        return os.path.join(os.path.dirname(self.log_path), CLIENTS_FOLDER)


def default_engine_dir(lake_root: str) -> str:
    """``$ASSETLAKE_ENGINE_DIR``, else ``<lake_root>/.assetlake/engine`` for a local lake and
    ``~/.cache/assetlake/engines/<key of the root>`` for an object-store URL.

    The state folder needs local file locks and a private state file, which a bucket has
    not; one folder per lake on this machine keeps one engine (one Spark driver, the single
    writer Delta's S3 log store needs) per lake. The folder is derived from the canonical
    root (:func:`~assetlake_dagster.lake.identity.canonical_lake_root`), so every spelling
    of one lake (``s3://B//lake/``, ``s3a://b/lake``) has the same engine.

    Example:
        >>> os.environ.pop(ENGINE_DIR_ENV, None) and None
        >>> default_engine_dir("/data/lake")
        '/data/lake/.assetlake/engine'
        >>> default_engine_dir("s3a://bucket/lake").startswith(os.path.expanduser("~/.cache/assetlake/engines/"))
        True
        >>> default_engine_dir("S3://Bucket//lake/") == default_engine_dir("s3a://bucket/lake")
        True
    """
    chosen = os.environ.get(ENGINE_DIR_ENV)
    if chosen:
        return chosen
    root = canonical_lake_root(lake_root)
    if url_scheme(root) is not None:
        return os.path.join(os.path.expanduser("~"), ".cache", "assetlake", "engines", lake_key(root))
    return os.path.join(root, ".assetlake", "engine")


def default_idle_timeout() -> float:
    """``$ASSETLAKE_ENGINE_IDLE_TIMEOUT`` (seconds), else 30 minutes."""
    raw = os.environ.get(IDLE_TIMEOUT_ENV)
    if not raw:
        return float(DEFAULT_IDLE_TIMEOUT_S)
    try:
        value = float(raw)
    except ValueError:
        raise EngineError(f"{IDLE_TIMEOUT_ENV}={raw!r} is not a number of seconds. Set e.g. {IDLE_TIMEOUT_ENV}=1800.")
    if value <= 0:
        raise EngineError(f"{IDLE_TIMEOUT_ENV}={raw!r} must be positive. Set e.g. {IDLE_TIMEOUT_ENV}=1800.")
    return value


class WarmEngine:
    """The warm engine of one state folder: find it, start it, check it, stop it.

    Example:
        >>> engine = WarmEngine("/tmp/lake/.assetlake/engine")
        >>> state = engine.ensure()  # doctest: +SKIP
        >>> state.display_url  # doctest: +SKIP
        'sc://localhost:40123'
    """

    def __init__(
        self,
        state_dir: str,
        *,
        master: str = "local[*]",
        idle_timeout: Optional[float] = None,
        spark_conf: Optional[Mapping[str, str]] = None,
        warehouse_dir: Optional[str] = None,
        log: Any = None,
        health_timeout: Optional[float] = None,
        jdbc: Optional[JdbcEndpoint] = None,
    ):
        self.state_dir = os.path.abspath(state_dir)
        self.master = master
        self.idle_timeout = default_idle_timeout() if idle_timeout is None else float(idle_timeout)
        self.spark_conf = dict(spark_conf or {})
        self.warehouse_dir = warehouse_dir
        #: Also serve Spark's Thrift JDBC protocol here (from the same JVM, so that the
        #: embedded Hive metastore serves runs and JDBC clients at once).
        self.jdbc = jdbc
        self._log = log
        self.health_timeout = float(os.environ.get(HEALTH_TIMEOUT_ENV) or HEALTH_TIMEOUT_S) if health_timeout is None else health_timeout

    @property
    def catalog(self) -> str:
        """The catalog implementation this engine is asked to run (``in-memory`` or ``hive``)."""
        return self.spark_conf.get(CATALOG_IMPLEMENTATION_CONF, DEFAULT_CATALOG_IMPLEMENTATION)

    # -- paths -------------------------------------------------------------------------
    @property
    def state_path(self) -> str:
        return os.path.join(self.state_dir, "engine.json")

    @property
    def log_path(self) -> str:
        return os.path.join(self.state_dir, "engine.log")

    @property
    def _lock_path(self) -> str:
        return os.path.join(self.state_dir, "engine.lock")

    @property
    def exit_path(self) -> str:
        """Why the last engine stopped, written by its supervisor when its server died."""
        return os.path.join(self.state_dir, "engine.exit")

    @property
    def lease_path(self) -> str:
        """Every process using the engine holds a shared lock on this file."""
        return os.path.join(self.state_dir, "engine.lease")

    # -- public API --------------------------------------------------------------------
    def read_state(self) -> Optional[EngineState]:
        """The recorded state, or ``None`` when there is none (or it is unreadable)."""
        try:
            with open(self.state_path, encoding="utf-8") as f:
                return EngineState(**json.load(f))
        except (OSError, ValueError, TypeError):
            return None

    def status(self) -> Optional[EngineState]:
        """The running engine, or ``None``. Checks the processes and the port, not health."""
        state = self.read_state()
        if state is None or not is_supervisor(state.supervisor_pid) or not pid_alive(state.server_pid):
            return None
        return state

    def ensure(self) -> EngineState:
        """The running engine, started if there is none; a dead or hung one is replaced.

        Also takes this process's lease, so the engine does not stop while it is in use.

        Raises:
            EngineError: the engine could not be started (the message ends with its log
                tail), runs with another master, catalog or JDBC server than asked for, or
                JDBC is asked for without the Hive catalog.
        """
        if self.jdbc is not None and self.catalog != IMPLEMENTATIONS[HIVE_CATALOG]:
            raise EngineError(NEEDS_HIVE_CATALOG)
        os.makedirs(self.state_dir, exist_ok=True)
        with self.locked():
            state = self.read_state()
            if state is not None:
                problem = self._problem(state)
                if problem is None:
                    if state.master != self.master:
                        raise EngineError(
                            f"the warm engine of this lake ({state.display_url}, pid "
                            f"{state.supervisor_pid}) runs on master {state.master!r}, not {self.master!r}. "
                            "Stop it with `assetlake engine stop` to start one on the new master."
                        )
                    if state.catalog != self.catalog:
                        raise EngineError(
                            f"the warm engine of this lake ({state.display_url}, pid {state.supervisor_pid}) "
                            f"registers tables in the {state.catalog!r} catalog, not {self.catalog!r} "
                            "(ASSETLAKE_CATALOG). Stop it with `assetlake engine stop` to start one with the new catalog."
                        )
                    self._check_jdbc(state)
                    self.hold_lease()
                    return state
                self._say(f"assetlake: replacing the warm Spark engine at {state.display_url}: {problem}.")
                # A dead or hung engine is not worth a graceful stop: its server goes first.
                _signal(state.server_pid, signal.SIGKILL, group=True)
                self._kill(state)
            state = self._start()
            self.hold_lease()
            return state

    def stop(self, timeout: float = 60.0) -> Optional[EngineState]:
        """Stop the engine (SIGTERM to its supervisor, SIGKILL after ``timeout``).

        Returns:
            The state of the engine that was stopped, or ``None`` if none was running.
        """
        if not os.path.isdir(self.state_dir):
            return None
        with self.locked():
            state = self.read_state()
            if state is None:
                return None
            self._kill(state, timeout=timeout)
            return state

    def hold_lease(self) -> None:
        """Mark this process as a user of the engine until it exits (see :func:`hold_lease`)."""
        hold_lease(self.lease_path)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Held while a process starts, checks or stops the engine (and while its supervisor
        decides to stop it for idleness)."""
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def accepts(self, state: EngineState) -> bool:
        """Whether a running engine serves what this one asks for (JDBC, when asked)."""
        return self.jdbc is None or state.jdbc == self.jdbc

    # -- internals ---------------------------------------------------------------------
    def _check_jdbc(self, state: EngineState) -> None:
        if self.accepts(state):
            return
        serves = f"serves JDBC at {state.jdbc.url}" if state.jdbc else "serves no JDBC"
        raise EngineError(
            f"the warm engine of this lake ({state.display_url}, pid {state.supervisor_pid}) {serves}, and "
            f"{self.jdbc.url} was asked for (ASSETLAKE_JDBC_PORT, --jdbc). A running engine cannot add it: once no "
            "run uses the engine, stop it (`assetlake engine stop`) and start it again with JDBC "
            "(`assetlake jdbc`); to have every engine serve it, set ASSETLAKE_JDBC_PORT where runs start."
        )

    def _problem(self, state: EngineState) -> Optional[str]:
        """Why a recorded engine cannot be used, or ``None`` when it answers."""
        if not is_supervisor(state.supervisor_pid):
            return f"its supervisor (pid {state.supervisor_pid}) is gone"
        if not pid_alive(state.server_pid):
            return f"its server (pid {state.server_pid}) is gone"
        unguarded = unguarded_addresses(state.port, bound=state.host)
        if unguarded:
            return (f"it does not hold port {state.port} on {', '.join(unguarded)}, which localhost also names "
                    "(another process could listen there and receive its token)")
        error = probe(state, self.health_timeout)
        if error is not None:
            return f"it does not answer ({error}); its log is {state.log_path}"
        return None

    def _kill(self, state: EngineState, timeout: float = 30.0) -> None:
        if is_supervisor(state.supervisor_pid):
            _signal(state.supervisor_pid, signal.SIGTERM, group=False)
            if not _wait_gone(state.supervisor_pid, timeout):
                _signal(state.supervisor_pid, signal.SIGKILL, group=False)
        # The supervisor stops the JVM; make sure of it for a hung or killed supervisor.
        if pid_alive(state.server_pid):
            _signal(state.server_pid, signal.SIGTERM, group=True)
            if not _wait_gone(state.server_pid, timeout):
                _signal(state.server_pid, signal.SIGKILL, group=True)
                _wait_gone(state.server_pid, 10.0)
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.state_path)

    def _start(self) -> EngineState:
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.state_path)
        try:
            with open(self.exit_path, encoding="utf-8") as f:
                crash = json.load(f).get("reason", "unknown reason")
            os.remove(self.exit_path)
            self._say(f"assetlake: the last warm Spark engine stopped unexpectedly ({crash}; log: {self.log_path}).")
        except (OSError, ValueError, AttributeError):
            pass
        started = time.time()
        command = [
            # Not `-m`: runpy warns and runs a second copy of a module the package has already
            # imported; `-c` imports it once whatever the package imports.
            sys.executable, "-c", f"import sys; from {SUPERVISOR_MODULE} import main; sys.exit(main(sys.argv[1:]))",
            "serve",
            "--state-dir", self.state_dir,
            "--master", self.master,
            "--idle-timeout", str(self.idle_timeout),
        ]
        if self.warehouse_dir:
            command += ["--warehouse-dir", self.warehouse_dir]
        if self.jdbc is not None:
            command += ["--jdbc-port", str(self.jdbc.port), "--jdbc-host", self.jdbc.host]
        public, secret = split_secret_settings(self.spark_conf)
        for key, value in public.items():
            command += ["--conf", f"{key}={value}"]
        secret_file = None
        if secret:
            # Not on the command line (every local user sees it): the supervisor reads and removes this file.
            secret_file = write_private_file(self.state_dir, "engine-secret-", ".json", json.dumps(secret))
            command += ["--secret-conf", secret_file]
        self._say(f"assetlake: starting the warm Spark engine (log: {self.log_path}) …")
        with open(self.log_path, "ab") as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives this process and its Ctrl-C
                close_fds=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            code = process.poll()
            state = self.read_state()
            if state is not None and state.supervisor_pid == process.pid:
                jdbc = f", JDBC at {state.jdbc.url}" if state.jdbc else ""
                self._say(f"assetlake: warm Spark engine ready at {state.display_url}{jdbc} in {time.time() - started:.1f} s")
                return state
            if code is not None:
                _remove_quietly(secret_file)
                tail = redact(_tail(self.log_path), self.spark_conf)
                raise EngineError(
                    f"the warm Spark engine did not start (exit code {code}). {start_failure_hint(tail)}"
                    f"Log tail ({self.log_path}):\n{tail}"
                )
            time.sleep(0.2)
        _signal(process.pid, signal.SIGKILL, group=True)
        _remove_quietly(secret_file)
        tail = redact(_tail(self.log_path), self.spark_conf)
        raise EngineError(
            f"the warm Spark engine did not start within {START_TIMEOUT_S:.0f} s. {start_failure_hint(tail)}"
            f"Log tail ({self.log_path}):\n{tail}"
        )

    def _say(self, message: str) -> None:
        if self._log is not None:
            self._log(message)
        else:
            print(message, file=sys.stderr, flush=True)


def probe(state: EngineState, timeout: float = HEALTH_TIMEOUT_S) -> Optional[str]:
    """``None`` if the server answers a trivial request within ``timeout``, else why not."""
    outcome: dict[str, Any] = {}

    def ask() -> None:
        try:
            session = new_engine_session(state, retries=False, record=False)
            try:
                outcome["version"] = session.version
            finally:
                with contextlib.suppress(Exception):
                    session.stop()
        except Exception as exc:  # noqa: BLE001 - any failure means "not usable"
            outcome["error"] = (str(exc).strip().splitlines() or [type(exc).__name__])[0]

    worker = threading.Thread(target=ask, daemon=True, name="assetlake-engine-probe")
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return f"no answer within {timeout:.0f} s"
    return outcome.get("error")


def new_engine_session(state: EngineState, *, retries: bool = True, record: bool = True) -> Any:
    """A new Spark Connect session on the engine: its own temp views and settings.

    Spark Connect's default client retries an unreachable server for minutes; a local
    engine that is gone will not come back, so a lost engine fails within seconds.
    The session is recorded under this process (:func:`record_session`) unless
    ``record`` is false, so that its operations stop if the process dies.
    """
    from assetlake_dagster.spark.session import fail_fast, new_connect_session

    session = new_connect_session(state.url)
    fail_fast(session, retries)
    if record:
        record_session(state, session)
    return session


#: Signs, in a Spark Connect client error, that the server itself is gone.
_LOST_MARKERS = ("UNAVAILABLE", "Connection refused", "failed to connect", "RetriesExceeded", "Socket closed",
                 "Connection reset", "CANCELLED")


def is_engine_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the Spark Connect server went away (not a query error)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = f"{type(exc).__name__}: {exc}"
        if any(marker in text for marker in _LOST_MARKERS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def local_table_version(path: str) -> Optional[int]:
    """The latest committed version of a Delta table on a local disk, read from its log
    folder without Spark (``None`` when there is no table). Checkpoints aside, each commit
    is ``_delta_log/<20-digit version>.json``."""
    try:
        names = os.listdir(os.path.join(path, "_delta_log"))
    except OSError:
        return None
    versions = [int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit()]
    return max(versions) if versions else None


def engine_lost_failure(exc: BaseException, what: str, table_path: Optional[str] = None) -> Optional[EngineError]:
    """The error to raise when ``exc`` means the engine went away during ``what``, else ``None``.

    The write is one Delta commit, so a lost engine cannot have half-published it: the
    message says which version the table stays at.
    """
    if not is_engine_lost(exc):
        return None
    detail = (f"{type(exc).__name__}: {exc}".strip().splitlines() or [""])[0][:300]
    table = ""
    if table_path is not None:
        version = local_table_version(table_path)
        table = (" The table has no version yet." if version is None else
                 f" The table stays at its prior version {version}: nothing of this write was committed.")
    return EngineError(
        f"the Spark engine went away during {what} ({detail}).{table} Run again: the next run starts a new "
        "engine (`assetlake engine status` shows it and its log).",
        allow_retries=True,
    )


# -- clients: the sessions of each process, for the supervisor --------------------------
# Spark Connect keeps running an operation whose client died: a reattachable execution
# waits for its client to come back (senderMaxStreamDuration, 2 min, then detachedTimeout,
# 5 min, before the server gives up on it), and a write commits meanwhile (a SIGKILLed
# run's 40M-row append once committed after the run died). Each client process lists
# its open sessions in ``clients/<pid>-<start>.json``; the supervisor interrupts and
# releases the sessions of a process that is gone (:mod:`assetlake_dagster.spark.engine_supervisor`).
_recorded: dict[str, list[tuple[Any, str, Optional[str]]]] = {}
_recorded_lock = threading.Lock()


def process_start(pid: int) -> Optional[int]:
    """When ``pid`` started (clock ticks since boot, from ``/proc``), or ``None`` when
    unknown: with the pid, it names one process even after the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def client_file_name(pid: int, start: Optional[int]) -> str:
    """``<pid>-<start>.json``: a record file of one process.

    Example:
        >>> client_file_name(123, 456)
        '123-456.json'
    """
    return f"{pid}-{start if start is not None else 0}.json"


def record_session(state: EngineState, session: Any) -> None:
    """List ``session`` among this process's open sessions in the engine's ``clients/``.

    The file is rewritten with the sessions not yet stopped (a stopped one has nothing left
    to interrupt) and removed when the process exits normally. A failure to write it is
    not fatal: the run goes on, only unprotected against its own death.
    """
    folder = state.clients_dir
    client = session.client
    with _recorded_lock:
        sessions = _recorded.setdefault(folder, [])
        sessions[:] = [s for s in sessions if not getattr(s[0], "is_stopped", True)]
        if not any(listed is session for listed, _, _ in sessions):  # the shared session comes back often
            sessions.append((session, client._session_id, client._user_id))  # noqa: SLF001 - no public getter
        pid = os.getpid()
        record = {
            "pid": pid,
            "start": process_start(pid),
            "sessions": [{"session_id": sid, "user_id": uid} for _, sid, uid in sessions],
        }
        path = os.path.join(folder, client_file_name(pid, record["start"]))
        tmp = f"{path}.tmp"
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(record, f)
            os.replace(tmp, path)
        except OSError as exc:
            print(f"assetlake: could not record the Spark session in {folder} ({exc}); if this process "
                  "dies, its running operations go on.", file=sys.stderr, flush=True)


@atexit.register
def _forget_sessions() -> None:
    """A process that exits normally has stopped its sessions itself: drop its record."""
    pid = os.getpid()
    with _recorded_lock:
        for folder in _recorded:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, client_file_name(pid, process_start(pid))))
        _recorded.clear()


# -- leases: processes that use the engine ------------------------------------------------
_lease_fds: dict[str, int] = {}
_lease_lock = threading.Lock()


def hold_lease(path: str) -> None:
    """Hold a shared lock on the lease file for the rest of this process's life."""
    with _lease_lock:
        if path not in _lease_fds:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_SH)
            _lease_fds[path] = fd
        os.utime(path)  # "last used": the idle clock starts again


def release_leases() -> None:
    """Give up this process's leases (tests; a process's exit does the same)."""
    with _lease_lock:
        for fd in _lease_fds.values():
            os.close(fd)
        _lease_fds.clear()


# -- processes ---------------------------------------------------------------------------
def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie waiting for its parent)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _zombie_free(pid)


def _zombie_free(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True  # no /proc (macOS): trust kill(0)


def is_supervisor(pid: int) -> bool:
    """Whether ``pid`` is alive and is an engine supervisor (not a recycled pid)."""
    if not pid_alive(pid):
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return SUPERVISOR_MODULE.encode() in f.read()
    except OSError:
        return True


def _signal(pid: int, sig: int, *, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return not pid_alive(pid)


def start_failure_hint(log_tail: str) -> str:
    """What to do about an engine start that failed for a known reason in its log, or ``""``.

    Spark's resolver failing to download the Delta jars (offline, behind a proxy) is the one a
    ``pip install`` without ``scripts/setup.sh`` meets first.

    Example:
        >>> start_failure_hint("java.lang.RuntimeException: [unresolved dependency: io.delta#delta-spark_2.13;4.0.1: not found]").split(" (")[0]
        'Spark could not download the Delta jars io.delta:delta-spark_2.13:4.0.1'
    """
    match = re.search(r"unresolved dependency: ([\w.\-]+)#([\w.\-]+);([\w.\-]+)", log_tail)
    if match is None:
        return ""
    from assetlake_dagster.spark.install import delta_jars_dir

    group, artifact, version = match.groups()
    return (
        f"Spark could not download the Delta jars {group}:{artifact}:{version} (no network, or a proxy its "
        f"resolver does not know). Run `assetlake setup` (it fetches them from Maven Central, or the mirror "
        f"$ASSETLAKE_MAVEN_REPO names), or put {artifact}-{version}.jar and delta-storage-{version}.jar in {delta_jars_dir()} "
        "(or the folder $ASSETLAKE_JARS_DIR names); behind a proxy, give Spark an Ivy settings file "
        "(spark.jars.ivySettings). "
    )


def _remove_quietly(path: Optional[str]) -> None:
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def _tail(path: str, lines: int = 40) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"
