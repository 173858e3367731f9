"""Building the SparkSession: the embedded Delta default, a cluster master, or Spark Connect.

Kept apart from the Dagster resource so the CLI, tests and benchmarks build sessions the
same way. One session per process: ``SparkSession.builder.getOrCreate`` returns the live
one, so every asset of an in-process run shares a single JVM. With ``remote=`` there is
no JVM here at all: one Spark Connect client session per server URL, reused the same way.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import tempfile
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # PySpark loads when a session is built, not with the definitions
    from pyspark.sql import DataFrame, SparkSession

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.spark.loopback import is_loopback
from assetlake_dagster.spark.secret_settings import (
    REDACTED,
    is_secret_setting,
    properties_text,
    redact,
    redact_url,
    split_secret_settings,
    write_private_file,
)
from assetlake_dagster.spark.install import DELTA_EXTENSIONS, EMBEDDED_DEFAULTS, class_path_env, class_path_jars, with_archive, with_delta_jars, with_throughput_gc

def build_spark_session(
    *,
    master: str = "local[*]",
    remote: Optional[str] = None,
    app_name: str = "assetlake",
    spark_conf: Optional[Mapping[str, str]] = None,
    warehouse_dir: Optional[str] = None,
) -> SparkSession:
    """Get or create the process's SparkSession with Delta enabled.

    Args:
        master: Spark master URL (``local[*]``, ``spark://host:7077``, ``yarn``...).
            Ignored when ``remote`` is set.
        remote: a Spark Connect URL (``sc://host:15002``); the server must have the Delta
            jars and SQL extension (see :mod:`assetlake_dagster.spark.connect_server`). The
            embedded defaults, ``app_name`` and ``warehouse_dir`` are then the server's.
        app_name: the Spark application name.
        spark_conf: extra Spark settings; they win over the defaults.
        warehouse_dir: ``spark.sql.warehouse.dir`` for the session catalog's schemas.

    Example:
        >>> spark = build_spark_session(master="local[2]")  # doctest: +SKIP
        >>> spark.range(3).count()  # doctest: +SKIP
        3
    """
    if remote:
        return connect_session(remote, spark_conf)
    from pyspark.sql import SparkSession

    conf: dict[str, str] = dict(DELTA_EXTENSIONS)
    builder = SparkSession.builder.appName(app_name)
    conf.update(EMBEDDED_DEFAULTS)
    if warehouse_dir:
        conf["spark.sql.warehouse.dir"] = warehouse_dir
    builder = builder.master(master)
    conf.update(spark_conf or {})
    conf, class_path = class_path_jars(with_delta_jars(conf), master)
    # This process starts the JVM: the throughput collector, and it maps the class-data archive.
    conf = with_archive(with_throughput_gc(conf))
    # PySpark puts every builder setting on spark-submit's command line (--conf k=v), which
    # every local user can read: secret ones go in a private properties file instead.
    public, secret = split_secret_settings(conf)
    for key, value in public.items():
        builder = builder.config(key, value)
    with _secret_properties(secret) as submit_env, _launcher_env({**class_path_env(class_path), **submit_env}):
        session = builder.getOrCreate()
    for key, value in secret.items():  # a JVM that was already running: as the builder would
        with contextlib.suppress(Exception):
            if session.conf.get(key, None) != value:
                session.conf.set(key, value)
    return session


@contextlib.contextmanager
def _secret_properties(secret: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """``PYSPARK_SUBMIT_ARGS`` naming a private ``--properties-file`` of ``secret`` for the
    JVM PySpark may launch, removed after it has started."""
    if not secret:
        yield {}
        return
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    if "--properties-file" in submit_args:
        raise ConfigError(
            f"PYSPARK_SUBMIT_ARGS names a --properties-file, and spark_conf has secret settings "
            f"({', '.join(sorted(secret))}) that would go in one of assetlake's. Put them in your properties "
            "file instead, or unset PYSPARK_SUBMIT_ARGS."
        )
    folder = tempfile.mkdtemp(prefix="assetlake-spark-")  # mode 0700
    path = write_private_file(folder, "spark-secret-", ".properties", properties_text(secret))
    try:
        yield {"PYSPARK_SUBMIT_ARGS": f"--properties-file {shlex.quote(path)} --load-spark-defaults {submit_args}"}
    finally:
        os.remove(path)
        os.rmdir(folder)


@contextlib.contextmanager
def _launcher_env(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` set in this process while PySpark's launcher (which copies ``os.environ``)
    may start the JVM."""
    before = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


#: Spark Connect client sessions by server URL (a stopped one is replaced).
_connect_sessions: dict[str, Any] = {}
#: Reentrant: connect_session creates its session through new_connect_session under it.
_connect_lock = threading.RLock()
#: Every Connect session this process created, kept referenced until exit. PySpark 4.0's
#: ``SparkSession.__del__`` shuts down the client's shared release thread pool and waits for
#: it; a garbage collection that runs it on a gRPC thread (the token's auth plugin) deadlocks
#: against a release waiting for that same thread (apache/spark SPARK-55362). Seen in 2 of 2
#: 10-asset chains; none with collection off. Sessions are stopped explicitly instead.
_every_connect_session: list[Any] = []


@atexit.register
def close_connect_sessions() -> None:
    """Stop this process's Connect sessions (at exit: on the main thread before the interpreter
    tears down, since a cached relation's release from ``__del__`` hangs at shutdown).

    Call it before stopping a server this process holds sessions of: a session whose server
    is gone cannot be released, and PySpark logs a warning for it.

    Example:
        >>> close_connect_sessions()  # a no-op without Connect sessions
    """
    with _connect_lock:
        for session in [*_connect_sessions.values(), *_every_connect_session]:
            if getattr(session, "is_stopped", True):
                continue
            try:
                # One attempt: Spark Connect's default policy retries a gone server for
                # minutes, and the process would hang at exit that long.
                fail_fast(session, retries=False)
                session.stop()
            except Exception:  # noqa: BLE001 - a lost server: nothing to release
                pass
        _connect_sessions.clear()


def connect_session(url: str, spark_conf: Optional[Mapping[str, str]] = None) -> SparkSession:
    """Get or create this process's Spark Connect session for the server at ``url``.

    ``SparkSession.builder.remote(url).getOrCreate()`` refuses to run beside a classic
    session in the same process (``SESSION_ALREADY_EXIST``) and returns whatever
    Connect session is already active, whatever its URL. The Connect client's own builder
    has neither limit, so sessions are created with it and kept per URL.

    Like PySpark's builder, this marks the process as a Spark Connect client
    (``SPARK_CONNECT_MODE_ENABLED``), so ``pyspark.sql.functions`` in user code build
    Connect columns. assetlake's own code never relies on that switch.

    Args:
        url: the server, ``sc://host:port``.
        spark_conf: runtime (SQL) settings for this session. Static settings such as
            ``spark.executor.memory`` belong to the server and are rejected here.

    Example:
        >>> spark = connect_session("sc://localhost:15002")  # doctest: +SKIP
    """
    with _connect_lock:
        session = _connect_sessions.get(url)
        if session is None or session.is_stopped:
            session = new_connect_session(url)
            _connect_sessions[url] = session
    # Applied on every call, as the classic builder applies settings to a live session.
    apply_session_conf(session, spark_conf or {}, fix=f"Set it on the server ({redact_url(url)}) instead.")
    return session


def apply_session_conf(session: SparkSession, conf: Mapping[str, str], *, fix: str) -> None:
    """Set SQL settings on a Spark Connect session (a no-op on a classic one).

    A static (server) setting cannot change from a client; if the server already has the
    value it is accepted, otherwise a :class:`ConfigError` names the setting and ends with ``fix``.
    For a secret setting (:func:`~assetlake_dagster.spark.secret_settings.is_secret_setting`)
    the error shows ``***`` for both values and carries no cause (Dagster's event log would
    record the server's error text with it).
    """
    if not conf or not is_connect_session(session):
        return
    for key, value in conf.items():
        failure, cause = None, None
        try:
            session.conf.set(key, value)
        except Exception as exc:  # noqa: BLE001 - the server refuses static settings
            try:
                current = session.conf.get(key, None)
            except Exception:  # noqa: BLE001 - asking may fail the same way
                current = None
            if current == value:
                continue
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            secret = is_secret_setting(key)
            if secret:
                reason = redact(reason, [value, current or ""])
            shown, held = (REDACTED, REDACTED if current is not None else None) if secret else (repr(value), current)
            failure = ConfigError(
                f"spark_conf {key}={shown} cannot be set on a running Spark Connect session ({reason}); "
                f"the server has {held!r}. {fix}"
            )
            cause = None if secret else exc
        if failure is not None:  # raised here, outside the handler: a secret's error keeps no context
            raise failure from cause


def new_connect_session(url: str) -> SparkSession:
    """A new Spark Connect session on the server at ``url``, shared with no one.

    Each session has its own temp views and SQL settings on the server (its catalog of
    tables is the server's, shared). Stop it when done: that releases it on the server.

    Example:
        >>> spark = new_connect_session("sc://localhost:15002")  # doctest: +SKIP
    """
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSparkSession
    except ImportError as exc:
        raise ConfigError(
            f"Spark Connect needs the client packages: {exc}. "
            "Install them with: pip install 'assetlake-dagster[connect]'"
        ) from exc
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    session = ConnectSparkSession.builder.remote(url).create()
    with _connect_lock:
        _every_connect_session.append(session)
    return session


def fail_fast(session: Any, retries: bool = True) -> None:
    """Give a Connect session a short retry policy (seconds, not Spark's ten minutes)."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    policy = DefaultPolicy(
        max_retries=4 if retries else 0, initial_backoff=100, max_backoff=1000, backoff_multiplier=2.0
    )
    session.client.set_retry_policies([policy])


def local_checkpoint(df: DataFrame) -> DataFrame:
    """``df.localCheckpoint(eager=True)``, in ``df``'s own session also over Spark Connect.

    PySpark 4.0's Connect client attaches the checkpointed DataFrame to the thread's
    *active* session, not to ``df``'s (``conversion.proto_to_remote_cached_dataframe``):
    with several sessions in a process (one per SQL asset), the result then names a
    cached relation that its session does not have ("No DataFrame with id … is found in
    the session"). So ``df``'s session is made the active one for the call.

    Over Spark Connect the result is also kept from releasing itself when it is garbage
    collected: PySpark releases it from ``__del__``, a gRPC call on whatever thread the
    collector runs, and one run inside gRPC's own start of a thread deadlocked a merge. It
    is released by :func:`release_checkpoint`, or with its session: the server drops a
    stopped session's checkpoints (the SQL assets' sessions are stopped after each write).
    """
    if not is_connect_session(df):
        return df.localCheckpoint(eager=True)
    from pyspark.sql.connect.session import SparkSession as ConnectSparkSession

    active = ConnectSparkSession._active_session  # a threading.local: this thread only
    before = getattr(active, "session", None)
    active.session = df.sparkSession
    try:
        checkpoint = df.localCheckpoint(eager=True)
    finally:
        active.session = before
    relation = checkpoint._plan  # a CachedRemoteRelation: its __del__ releases it if it has a session
    relation._assetlake_session, relation._spark_session = relation._spark_session, None
    return checkpoint


def release_checkpoint(df: DataFrame) -> None:
    """Release a :func:`local_checkpoint` now, from this thread: over Spark Connect the
    server drops its rows (in process, Spark's cleaner drops them once unreferenced).

    ``df`` must not be used after, nor anything derived from it.
    """
    relation = getattr(df, "_plan", None)
    session = getattr(relation, "_assetlake_session", None)
    if session is None:  # classic, or released already
        return
    relation._assetlake_session, relation._spark_session = None, session
    try:
        relation.__del__()  # PySpark's own release, called here instead of by the collector
    finally:
        relation._spark_session, relation._relation_id = None, None


def persist_rows(df: DataFrame) -> DataFrame:
    """``df`` cached in memory, spilling to disk: for rows a write reads twice (its key
    check, then its commit), so that the SELECT runs once."""
    from pyspark import StorageLevel

    return df.persist(StorageLevel.MEMORY_AND_DISK)


def is_connect_session(obj: Any) -> bool:
    """Whether a SparkSession or DataFrame belongs to the Spark Connect client.

    Decided by class, without importing the Connect client (it needs grpcio).

    Example:
        >>> is_connect_session(object())
        False
    """
    return type(obj).__module__.startswith("pyspark.sql.connect.")


def driver_on_this_machine(session: SparkSession) -> bool:
    """Whether the session's Spark driver runs on this machine: in this process, or a Spark
    Connect server reached on loopback (the warm engine). Only then does a local path name
    the same files here as in the driver.

    Example:
        >>> driver_on_this_machine(spark)  # doctest: +SKIP
        True
    """
    return not is_connect_session(session) or is_loopback(session.client.host)
