"""The warm engine's supervisor process: it owns the Spark Connect server's JVM.

Started by :meth:`assetlake_dagster.spark.engine.WarmEngine.ensure` as
``python -c "… from assetlake_dagster.spark.engine_supervisor import main …" serve …`` in its own
session. It starts the server on a free loopback port with a fresh token, records it in
``engine.json``, then polls: it stops the JVM after ``idle_timeout`` seconds without users
(nobody holds the lease), on SIGTERM/SIGINT (``assetlake engine stop``), and records the
reason in ``engine.exit`` when the JVM dies on its own. Each poll it also interrupts the
operations of client processes that died (:class:`DeadClientReaper`): a run killed
mid-write must not commit after its death. The client side (finding, starting,
leasing, stopping an engine) is :mod:`assetlake_dagster.spark.engine`.

Its command line holds no secret: the client gives the secret settings
(:mod:`assetlake_dagster.spark.secret_settings`) in a file of the state folder that only
its owner can read (``--secret-conf``), which the supervisor removes once read; the token
goes through the environment. Beside the server's 127.0.0.1, it holds the port on every
other address ``localhost`` names (:mod:`assetlake_dagster.spark.loopback`).
"""

import argparse
import contextlib
import errno
import fcntl
import json
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, Optional

from assetlake_dagster.spark.jdbc_endpoint import JdbcEndpoint
from assetlake_dagster.spark.engine import CATALOG_IMPLEMENTATION_CONF, DEFAULT_CATALOG_IMPLEMENTATION, DEFAULT_IDLE_TIMEOUT_S, HOST, START_TIMEOUT_S, SUPERVISOR_MODULE, EngineState, WarmEngine, pid_alive, process_start

#: Settings of the shared engine on top of the embedded defaults: several runs share it.
ENGINE_DEFAULTS = {
    "spark.scheduler.mode": "FAIR",
    # A run that dies leaves its server-side session behind; drop it after 10 idle minutes.
    "spark.connect.session.manager.defaultSessionTimeout": "10min",
}


def serve(
    state_dir: str,
    *,
    master: str,
    idle_timeout: float,
    spark_conf: Mapping[str, str],
    warehouse_dir: Optional[str],
    poll_s: float = 1.0,
    jdbc: Optional[JdbcEndpoint] = None,
) -> int:
    """Run the engine until it is idle for ``idle_timeout`` s, stopped, or its JVM dies.

    With ``jdbc``, the same JVM also serves Spark's Thrift JDBC protocol there
    (:func:`~assetlake_dagster.spark.thrift_server.start_connect_and_jdbc_server`).
    """
    from assetlake_dagster.spark.connect_server import ConnectServerError, free_port, port_is_free, start_connect_server
    from assetlake_dagster.spark.loopback import LoopbackGuard, LoopbackGuardError
    from assetlake_dagster.spark.thrift_server import start_connect_and_jdbc_server

    engine = WarmEngine(state_dir, master=master, idle_timeout=idle_timeout)
    stopping = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the terminal that started it may close

    token = secrets.token_urlsafe(32)
    os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = token  # the server reads it from here, not argv
    conf = {**ENGINE_DEFAULTS, **spark_conf}
    java_options = conf.get("spark.driver.extraJavaOptions", "")
    if "-Dlog4j2.configurationFile" not in java_options:
        # Spark logs every RPC at INFO: keep the engine's log to warnings and its start.
        log4j = os.path.join(state_dir, "log4j2.properties")
        with open(log4j, "w", encoding="utf-8") as f:
            f.write(_LOG4J)
        conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{log4j} {java_options}".strip()
    if jdbc is not None:
        if not port_is_free(jdbc.host, jdbc.port):
            print(f"[assetlake engine] the JDBC port {jdbc.port} on {jdbc.host} is already in use: stop what listens "
                  "there or choose another port (ASSETLAKE_JDBC_PORT, --port).", flush=True)
            return 1
        warning = jdbc.no_auth_warning()
        if warning:
            print(f"[assetlake engine] {warning}", flush=True)
    server = guard = None
    for attempt in range(3):  # the free port may be taken between choosing and binding it
        port = free_port(HOST)
        try:
            # Held before the server starts: no other process may listen on [::1]:port,
            # where a client dialling localhost would send its token.
            guard = LoopbackGuard.hold(port, bound=HOST)
            launch = dict(host=HOST, master=master, spark_conf=conf, warehouse_dir=warehouse_dir,
                          log_path=engine.log_path, timeout=START_TIMEOUT_S, pass_fds=guard.fds)
            if jdbc is None:
                server = start_connect_server(port, **launch)
            else:
                server = start_connect_and_jdbc_server(port, jdbc, **launch)
            break
        except LoopbackGuardError as exc:
            print(f"[assetlake engine] {exc}", flush=True)
            return 1
        except (ConnectServerError, OSError) as exc:
            print(f"[assetlake engine] start attempt {attempt + 1} failed: {exc}", flush=True)
            if guard is not None:
                guard.close()
                guard = None
            if stopping.is_set():
                return 1
    if server is None or guard is None:
        return 1
    state = EngineState(
        host=HOST, port=server.port, token=token, supervisor_pid=os.getpid(), server_pid=server.process.pid,
        master=master, log_path=engine.log_path, started_at=time.time(), idle_timeout=idle_timeout,
        catalog=conf.get(CATALOG_IMPLEMENTATION_CONF, DEFAULT_CATALOG_IMPLEMENTATION),
        jdbc_host=jdbc.host if jdbc else None, jdbc_port=jdbc.port if jdbc else None,
    )
    _write_state(engine.state_path, state)
    serves_jdbc = f", JDBC at {jdbc.url}" if jdbc else ""
    print(f"[assetlake engine] ready at {state.display_url}{serves_jdbc} (pid {os.getpid()}, server pid {state.server_pid}, "
          f"idle timeout {idle_timeout:.0f} s)", flush=True)
    reason = "stopped"
    last_used = time.time()
    reaper = DeadClientReaper(state)
    try:
        while not stopping.wait(poll_s):
            reaper.poll()
            if server.process.poll() is not None:
                reason = f"the Spark server exited with code {server.process.returncode}"
                # The next process to need an engine says so when it starts a new one.
                with open(engine.exit_path, "w", encoding="utf-8") as f:
                    json.dump({"reason": reason, "at": time.time()}, f)
                break
            if not _lease_is_free(engine.lease_path):
                last_used = time.time()
                continue
            with contextlib.suppress(OSError):
                last_used = max(last_used, os.path.getmtime(engine.lease_path))
            if time.time() - last_used >= idle_timeout:
                with engine.locked():  # no process may take a lease while we decide
                    if _lease_is_free(engine.lease_path):
                        reason = f"idle for {idle_timeout:.0f} s"
                        _remove_own_state(engine, state)
                        break
    finally:
        _remove_own_state(engine, state)
        server.stop()
        guard.close()
        print(f"[assetlake engine] stopped: {reason}", flush=True)
    return 0


class DeadClientReaper:
    """Interrupts the operations of the Spark Connect sessions of client processes that died.

    Spark Connect does not stop an operation when its client dies: a reattachable
    execution waits for the client to reattach (up to ``senderMaxStreamDuration``, 2 min,
    then ``detachedTimeout``, 5 min), and a write commits meanwhile. Clients list their
    sessions in ``clients/<pid>-<start>.json`` (:func:`assetlake_dagster.spark.engine.record_session`);
    a file whose process is gone (or whose pid now names a younger process) is handled
    once, in a background thread so that a slow server never stalls the supervisor.

    Example:
        >>> reaper = DeadClientReaper(state)  # doctest: +SKIP
        >>> reaper.poll()  # every second, from the supervisor's loop  # doctest: +SKIP
    """

    def __init__(self, state: EngineState):
        self.state = state
        self._worker: Optional[threading.Thread] = None

    def poll(self) -> None:
        """Start handling the dead clients' files, unless the last round still runs."""
        if self._worker is not None and self._worker.is_alive():
            return
        dead = self.dead_clients()
        if dead:
            self._worker = threading.Thread(target=self._reap, args=(dead,), daemon=True, name="assetlake-reaper")
            self._worker.start()

    def dead_clients(self) -> list[str]:
        """The record files of processes that are gone."""
        try:
            names = os.listdir(self.state.clients_dir)
        except OSError:
            return []
        dead = []
        for name in names:
            pid_text, _, start_text = name.removesuffix(".json").partition("-")
            if not name.endswith(".json") or not pid_text.isdigit() or not start_text.isdigit():
                continue
            pid, start = int(pid_text), int(start_text)
            # A start of 0 is a process that could not read its own start time (no /proc).
            if pid_alive(pid) and (start == 0 or process_start(pid) in (start, None)):
                continue
            dead.append(os.path.join(self.state.clients_dir, name))
        return dead

    def _reap(self, paths: Sequence[str]) -> None:
        for path in paths:
            try:
                with open(path, encoding="utf-8") as f:
                    record = json.load(f)
                sessions = [(s["session_id"], s.get("user_id")) for s in record.get("sessions", ())]
            except (OSError, ValueError, TypeError, KeyError) as exc:
                print(f"[assetlake engine] unreadable client record {path}: {exc}", flush=True)
                sessions = []
            interrupted = []
            for session_id, user_id in sessions:
                interrupted += interrupt_session(self.state, session_id, user_id)
            if interrupted:
                print(f"[assetlake engine] {time.strftime('%y/%m/%d %H:%M:%S')} client process "
                      f"{record.get('pid')} is gone: interrupted {len(interrupted)} operation(s) of its "
                      f"{len(sessions)} session(s) ({', '.join(interrupted)})", flush=True)
            with contextlib.suppress(OSError):
                os.remove(path)


def interrupt_session(state: EngineState, session_id: str, user_id: Optional[str]) -> list[str]:
    """Interrupt every operation of one Spark Connect session.

    Returns the ids of the operations interrupted; a session the server no longer has (the
    client stopped it, or it timed out) gives none. The session itself is not released:
    a release right after the interrupt failed on the server (``IllegalStateException``,
    the operation not yet Canceled); ``defaultSessionTimeout`` drops it after 10 idle minutes.
    """
    from pyspark.sql.connect.client import SparkConnectClient
    from pyspark.sql.connect.client.retries import DefaultPolicy

    url = f"{state.url};session_id={session_id}" + (f";user_id={user_id}" if user_id else "")
    client = SparkConnectClient(url)
    client.set_retry_policies([DefaultPolicy(max_retries=2, initial_backoff=100, max_backoff=1000)])
    interrupted: list[str] = []
    try:
        interrupted = list(client.interrupt_all() or [])
    except Exception as exc:  # noqa: BLE001 - a session already gone is the usual case
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if "SESSION_CLOSED" not in text and "SESSION_NOT_FOUND" not in text:
            print(f"[assetlake engine] could not interrupt session {session_id}: {text[:300]}", flush=True)
    finally:
        with contextlib.suppress(Exception):
            client.close()
    return interrupted


_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.server.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.server.level = info
logger.thrift.name = org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
logger.thrift.level = info
"""


def _remove_own_state(engine: WarmEngine, state: EngineState) -> None:
    current = engine.read_state()
    if current is not None and current.supervisor_pid == state.supervisor_pid:
        with contextlib.suppress(FileNotFoundError):
            os.remove(engine.state_path)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m assetlake_dagster.spark.engine_supervisor serve …``: the supervisor (started by WarmEngine)."""
    parser = argparse.ArgumentParser(prog=f"python -m {SUPERVISOR_MODULE}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="run the engine's supervisor in the foreground")
    run.add_argument("--state-dir", required=True)
    run.add_argument("--master", default="local[*]")
    run.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S)
    run.add_argument("--warehouse-dir")
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--secret-conf", metavar="FILE", help="a JSON object of secret settings; removed once read")
    run.add_argument("--jdbc-port", type=int, help="also serve Spark's Thrift JDBC protocol on this port")
    run.add_argument("--jdbc-host", default="127.0.0.1", help="the JDBC server's address (checked by the client)")
    args = parser.parse_args(argv)
    conf = dict(item.split("=", 1) for item in args.conf)
    if args.secret_conf:
        conf.update(read_secret_conf(args.secret_conf))
    return serve(
        args.state_dir, master=args.master, idle_timeout=args.idle_timeout, spark_conf=conf,
        warehouse_dir=args.warehouse_dir,
        jdbc=JdbcEndpoint(args.jdbc_port, args.jdbc_host) if args.jdbc_port else None,
    )


def read_secret_conf(path: str) -> dict[str, str]:
    """The secret settings the client wrote for this supervisor (a JSON object, mode 0600);
    the file is removed once read, so the secrets stay in memory only."""
    try:
        with open(path, encoding="utf-8") as f:
            return {str(k): str(v) for k, v in json.load(f).items()}
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


if __name__ == "__main__":
    sys.exit(main())



def _lease_is_free(path: str) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    finally:
        os.close(fd)



def _write_state(path: str, state: EngineState) -> None:
    """Write ``engine.json`` atomically, readable by its owner only (it holds the token)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(asdict(state), f, indent=2)
    os.replace(tmp, path)

