"""The Spark resource: which Spark engine the runs use, pointed at one lake root.

Three ways to run, chosen by configuration (the environment variables configure the
bundled code location and the ``assetlake`` CLI without any Python):

- ``engine`` (default): the lake's warm shared engine, a local Spark Connect server with
  Delta started on first use and reused by every later process (see
  :mod:`assetlake_dagster.engine`). No JVM starts in the run's own process.
- ``local``: a classic in-process SparkSession (``local[*]`` or ``master``), for Python
  assets that need the classic API (RDDs, ``sparkContext``, the ``DeltaTable`` builder).
- ``remote``: an existing Spark Connect server (``sc://host:port``); no engine is started.

No ``from __future__ import annotations`` here: Dagster introspects resource fields.
"""

import os
import threading
from typing import TYPE_CHECKING, Optional

import dagster as dg
from pydantic import Field

from assetlake_dagster.engine import (
    EngineState,
    WarmEngine,
    default_engine_dir,
    is_supervisor,
    new_engine_session,
    record_session,
)
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake import Lake, default_lake_root
from assetlake_dagster.storage import S3Settings, has_multi_driver_log_store, single_driver_rule
from assetlake_dagster.spark_session import (
    DELETION_VECTORS_CONF,
    apply_session_conf,
    build_spark_session,
    connect_session,
    fail_fast,
    is_connect_session,
    new_connect_session,
    s3_jar_conf,
)

if TYPE_CHECKING:  # PySpark loads with the first session, not with the definitions
    from pyspark.sql import SparkSession

MODE_ENV = "ASSETLAKE_SPARK_MODE"
MASTER_ENV = "ASSETLAKE_SPARK_MASTER"
REMOTE_ENV = "ASSETLAKE_SPARK_REMOTE"
ENGINE_MODE = "engine"
LOCAL_MODE = "local"
MODES = (ENGINE_MODE, LOCAL_MODE)
DEFAULT_MASTER = "local[*]"


class SparkDeltaResource(dg.ConfigurableResource):
    """The Spark engine the assets run on, and the lake root their tables live under.

    By default every run uses the lake's warm shared engine (a local Spark Connect server
    with Delta, started on first use): a run connects in well under a second instead of
    starting a JVM, and concurrent runs are safe because every writer goes through one
    JVM. Each asset of a SQL file runs in a session of its own, so one file's ``SET`` or
    temp views never reach another asset or another run.

    Unset fields fall back to the environment: ``ASSETLAKE_SPARK_REMOTE`` (a Spark Connect
    URL to use instead of the engine), ``ASSETLAKE_SPARK_MASTER`` (the master of the engine
    or of the in-process session), ``ASSETLAKE_SPARK_MODE`` (``engine`` or ``local``),
    ``ASSETLAKE_ENGINE_IDLE_TIMEOUT`` (seconds) and ``ASSETLAKE_LAKE_ROOT``.

    Example:
        >>> resource = SparkDeltaResource(lake_root="/tmp/lake", spark_conf={"spark.sql.shuffle.partitions": "4"})
        >>> resource.resolved_mode()
        'engine'
        >>> SparkDeltaResource(lake_root="/tmp/lake", mode="local", master="local[2]").resolved_master()
        'local[2]'
        >>> spark = resource.get_session()  # doctest: +SKIP
    """

    lake_root: Optional[str] = Field(
        default=None,
        description="Folder or URL holding the Delta tables (delta://s/t lives at <lake_root>/s/t). "
        "Default: $ASSETLAKE_LAKE_ROOT, else .assetlake/lake under the current directory.",
    )
    mode: Optional[str] = Field(
        default=None,
        description="'engine': the lake's warm shared Spark Connect engine (default); 'local': a classic "
        "in-process SparkSession. Default: $ASSETLAKE_SPARK_MODE, else 'engine'. Ignored when remote is set.",
    )
    master: Optional[str] = Field(
        default=None,
        description="Spark master of the engine or the in-process session (local[*], spark://host:7077, ...). "
        "Default: $ASSETLAKE_SPARK_MASTER, else local[*].",
    )
    remote: Optional[str] = Field(
        default=None,
        description="Spark Connect URL of an existing server, e.g. sc://host:15002 (wins over mode). The server "
        "needs the Delta jars and SQL extension and must see lake_root at the same path. "
        "Default: $ASSETLAKE_SPARK_REMOTE.",
    )
    engine_idle_timeout: Optional[float] = Field(
        default=None,
        description="Seconds without users before the warm engine stops itself. "
        "Default: $ASSETLAKE_ENGINE_IDLE_TIMEOUT, else 1800.",
    )
    app_name: str = Field(default="assetlake", description="Spark application name (in-process session).")
    spark_conf: dict[str, str] = Field(
        default_factory=dict,
        description="Extra Spark settings; they win over the defaults. With the engine, static settings "
        "apply when it starts (`assetlake engine stop` to restart it) and SQL settings to each session.",
    )
    s3_endpoint: Optional[str] = Field(
        default=None,
        description="S3 endpoint URL of an s3a:// lake (an S3-compatible server, e.g. http://127.0.0.1:9000). "
        "Default: $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else AWS. Credentials always come from the "
        "standard AWS chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, instance roles...), never from here.",
    )
    s3_region: Optional[str] = Field(
        default=None, description="Region of an s3a:// lake's bucket. Default: $AWS_REGION, else $AWS_DEFAULT_REGION."
    )
    s3_path_style: Optional[bool] = Field(
        default=None,
        description="Path-style S3 addressing. Default: $ASSETLAKE_S3_PATH_STYLE, else on for an endpoint on an "
        "IP address or localhost and off otherwise.",
    )
    deletion_vectors: bool = Field(
        default=False,
        description="Create new tables with Delta deletion vectors, so that a merge or history run writes "
        "only the rows it changes instead of rewriting every file that holds one (B7: 15k changes in a "
        "1M-row table). Readers then need Delta reader version 3: Spark with delta-spark >= 2.3 and DuckDB "
        "read them; delta-rs (deltalake 1.6, polars) does not. Existing tables keep their properties. "
        "Sets Delta's spark.databricks.delta.properties.defaults.enableDeletionVectors; an explicit "
        "spark_conf value wins.",
    )

    def effective_spark_conf(self) -> dict[str, str]:
        """``spark_conf`` with the settings other fields ask for (``deletion_vectors``).

        Example:
            >>> SparkDeltaResource(lake_root="/tmp/lake", deletion_vectors=True).effective_spark_conf()
            {'spark.databricks.delta.properties.defaults.enableDeletionVectors': 'true'}
        """
        implied = {DELETION_VECTORS_CONF: "true"} if self.deletion_vectors else {}
        return {**implied, **self.spark_conf}

    @property
    def lake(self) -> Lake:
        return Lake(self.lake_root or default_lake_root(), s3_settings=self.s3_settings())

    def s3_settings(self) -> S3Settings:
        """The S3 settings: these fields, else the standard AWS variables."""
        return S3Settings.from_env(endpoint=self.s3_endpoint, region=self.s3_region, path_style=self.s3_path_style)

    def server_spark_conf(self) -> dict[str, str]:
        """Everything a Spark driver of this lake starts with: the object store's connector
        and settings (for an ``s3a://`` lake), then :meth:`effective_spark_conf`, which wins.

        Example:
            >>> SparkDeltaResource(lake_root="/tmp/lake", spark_conf={"spark.sql.shuffle.partitions": "4"}).server_spark_conf()
            {'spark.sql.shuffle.partitions': '4'}
        """
        lake, conf = self.lake, self.effective_spark_conf()
        if not lake.is_s3:
            return conf
        return {**s3_jar_conf(conf), **lake.s3.spark_conf(), **conf}

    def resolved_remote(self) -> Optional[str]:
        """The Spark Connect URL in use, if any (``remote``, else ``$ASSETLAKE_SPARK_REMOTE``)."""
        return self.remote or os.environ.get(REMOTE_ENV) or None

    def resolved_mode(self) -> str:
        """``remote``, ``engine`` or ``local``."""
        if self.resolved_remote():
            return "remote"
        mode = (self.mode or os.environ.get(MODE_ENV) or ENGINE_MODE).strip().lower()
        if mode not in MODES:
            source = "mode" if self.mode else MODE_ENV
            raise ConfigError(f"{source}={mode!r} is not a Spark mode. Use one of: {', '.join(MODES)}.")
        return mode

    def resolved_master(self) -> str:
        """The master URL of the engine or of the in-process session."""
        return self.master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER

    def get_session(self) -> "SparkSession":
        """This process's shared SparkSession (created on first use, then reused).

        Python assets use it; SQL files each get their own (:meth:`new_session`).
        """
        mode = self.resolved_mode()
        if mode == "remote":
            return connect_session(self.resolved_remote(), self.effective_spark_conf())
        if mode == LOCAL_MODE:
            return self._local_session()
        state = self.engine_state()
        session = connect_session(state.url)
        record_session(state, session)  # so the engine interrupts its writes if this process dies
        fail_fast(session)
        self._apply_conf(session)
        return session

    def new_session(self) -> "SparkSession":
        """A session of its own: its ``SET``s and temp views are seen by no other.

        Over Spark Connect (engine, remote) it is a new server-side session; stop it with
        :meth:`release_session` when done. In process it is ``newSession()`` of the
        shared one (same JVM, separate SQL settings and temp views).
        """
        mode = self.resolved_mode()
        if mode == "remote":
            session = new_connect_session(self.resolved_remote())
        elif mode == LOCAL_MODE:
            session = self._local_session().newSession()
        else:
            session = new_engine_session(self.engine_state())
        self._apply_conf(session)
        return session

    def _apply_conf(self, session: "SparkSession") -> None:
        if self.resolved_mode() == "remote":
            fix = f"Set it on the server ({self.resolved_remote()}) instead."
        else:
            fix = "It is a server setting: stop the warm engine with `assetlake engine stop` and the next run starts one with it."
        apply_session_conf(session, self.effective_spark_conf(), fix=fix)

    @staticmethod
    def release_session(session: "SparkSession") -> None:
        """Release a session from :meth:`new_session` (a no-op in process: stopping a
        classic session would stop the shared JVM)."""
        if is_connect_session(session):
            try:
                session.stop()
            except Exception:  # noqa: BLE001 - a session on a lost server is gone anyway
                pass

    def engine(self) -> WarmEngine:
        """The warm engine of this resource's lake (not started until used)."""
        lake = self.lake
        return WarmEngine(
            default_engine_dir(lake.root),
            master=self.resolved_master(),
            idle_timeout=self.engine_idle_timeout,
            spark_conf=self.server_spark_conf(),
            warehouse_dir=lake.warehouse_dir,
        )

    def engine_state(self) -> EngineState:
        """The running warm engine of this lake, started (or replaced) if needed."""
        engine = self.engine()
        if not self.lake.is_url:
            os.makedirs(self.lake.root, exist_ok=True)
        with _engine_lock:
            known = _engines.get(engine.state_dir)
            # Cheap path for a process that already checked this engine: same state file,
            # supervisor alive. A new or changed engine is probed (ensure).
            if known is not None and engine.read_state() == known and is_supervisor(known.supervisor_pid):
                engine.hold_lease()
                return known
            state = engine.ensure()
            _engines[engine.state_dir] = state
            return state

    def _local_session(self) -> "SparkSession":
        lake = self.lake
        conf = self.server_spark_conf()
        if not lake.is_url:
            os.makedirs(lake.root, exist_ok=True)
        elif lake.is_s3 and not has_multi_driver_log_store(conf):
            raise ConfigError(single_driver_rule(lake.root, f"{MODE_ENV}=local"))
        return build_spark_session(
            master=self.resolved_master(),
            app_name=self.app_name,
            spark_conf=conf,
            warehouse_dir=lake.warehouse_dir,
        )


#: Engines this process has checked, by state folder.
_engines: dict[str, EngineState] = {}
_engine_lock = threading.Lock()
