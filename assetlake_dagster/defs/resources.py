"""The Spark resource: which Spark engine the runs use, pointed at one lake root.

Three ways to run, chosen by configuration (the environment variables configure the
bundled code location and the ``assetlake`` CLI without any Python):

- ``engine`` (default): the lake's warm shared engine, a local Spark Connect server with
  Delta started on first use and reused by every later process (see
  :mod:`assetlake_dagster.spark.engine`). No JVM starts in the run's own process.
- ``local``: a classic in-process SparkSession (``local[*]`` or ``master``), for Python
  assets that need the classic API (RDDs, ``sparkContext``, the ``DeltaTable`` builder).
- ``remote``: an existing Spark Connect server (``sc://host:port``); no engine is started.

No ``from __future__ import annotations`` here: Dagster introspects resource fields.
"""

import os
from typing import TYPE_CHECKING, Optional

import dagster as dg
from pydantic import Field

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.catalog import CatalogSettings, embedded_metastore_rule
from assetlake_dagster.spec.names import SESSION_CATALOG_NAME
from assetlake_dagster.lake.root import DEFER_ENV, Lake, default_lake_root
from assetlake_dagster.lake.storage import S3Settings, has_multi_driver_log_store, single_driver_rule
from assetlake_dagster.spark.engine import EngineState, WarmEngine, default_engine_dir
from assetlake_dagster.spark.jdbc_endpoint import JdbcEndpoint
from assetlake_dagster.spark.install import CHANGE_DATA_FEED_CONF, DELETION_VECTORS_CONF, s3_jar_conf
from assetlake_dagster.spark.sessions import (
    ENGINE_MODE,
    LOCAL_MODE,
    MODE_ENV,
    REMOTE_MODE,
    SessionSource,
    release_session,
    resolve_master,
    resolve_mode,
    resolve_remote,
)

if TYPE_CHECKING:  # PySpark loads with the first session, not with the definitions
    from pyspark.sql import SparkSession

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
    ``ASSETLAKE_ENGINE_IDLE_TIMEOUT`` (seconds), ``ASSETLAKE_LAKE_ROOT``, ``ASSETLAKE_CATALOG`` and
    ``ASSETLAKE_JDBC_PORT`` (the engine also serves JDBC there).

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
        "Used in canonical form: s3:// and s3n:// are s3a://, case and extra slashes do not make "
        "another lake; no credentials in the URL. "
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
        "apply when it starts (`assetlake engine stop` to restart it) and SQL settings to each session. "
        "Settings named like secrets (secret, token, password, credential, key; fs.azure.*, "
        "google.cloud.auth.*) reach the engine through a file only you can read, never a command line, "
        "and show as *** in errors.",
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
    change_data_feed: bool = Field(
        default=False,
        description="Create new tables with Delta's change data feed, so that a key= merge reading one of "
        "them with a row-local or key-grouped SELECT reads only the rows that changed since its last run "
        "(docs/run-decisions.md). Costs a little more on each write that updates or deletes rows. Existing "
        "tables keep their properties. Sets Delta's spark.databricks.delta.properties.defaults."
        "enableChangeDataFeed; an explicit spark_conf value wins.",
    )

    catalog: Optional[str] = Field(
        default=None,
        description="Where tables are registered by name: 'session' (Spark's in-memory catalog, the default) "
        "or 'hive' (a persistent Hive metastore other tools can query: an embedded one beside the lake's "
        "state, served by the warm engine, or an external one given by hive_metastore_uris). "
        "Default: $ASSETLAKE_CATALOG, else 'session'.",
    )
    hive_metastore_uris: Optional[str] = Field(
        default=None,
        description="An external Hive metastore for catalog='hive' (thrift://host:9083); any number of "
        "drivers may use it. Default: $ASSETLAKE_HIVE_METASTORE_URIS, else the embedded metastore.",
    )
    jdbc_port: Optional[int] = Field(
        default=None,
        description="Have the warm engine also serve Spark's Thrift JDBC/ODBC protocol on this port, from its own "
        "JVM, so that BI tools, beeline and notebooks read the lake's tables while runs write them (needs "
        "catalog='hive'; `assetlake jdbc` starts it by hand). Default: $ASSETLAKE_JDBC_PORT, else none.",
    )
    jdbc_host: Optional[str] = Field(
        default=None,
        description="The address the JDBC server listens on. Default: $ASSETLAKE_JDBC_HOST, else 127.0.0.1; "
        "an address other machines reach needs jdbc_allow_remote.",
    )
    jdbc_allow_remote: Optional[bool] = Field(
        default=None,
        description="Let the JDBC server listen on an address other machines reach. It has no authentication "
        "of its own: anyone who reaches it reads, changes and drops the lake's tables as you. "
        "Default: $ASSETLAKE_JDBC_ALLOW_REMOTE, else off.",
    )

    defer_to: Optional[str] = Field(
        default=None,
        description="A prod lake root this (dev) lake defers to: a run reads every upstream this lake does "
        "not have from there, read-only, pinned to the version the run saw first, and writes only here. "
        "Default: $ASSETLAKE_DEFER_TO, else none.",
    )

    def effective_spark_conf(self) -> dict[str, str]:
        """``spark_conf`` with the settings other fields ask for (``deletion_vectors``,
        ``change_data_feed``).

        Example:
            >>> SparkDeltaResource(lake_root="/tmp/lake", deletion_vectors=True).effective_spark_conf()
            {'spark.databricks.delta.properties.defaults.enableDeletionVectors': 'true'}
        """
        implied = {DELETION_VECTORS_CONF: "true"} if self.deletion_vectors else {}
        if self.change_data_feed:
            implied[CHANGE_DATA_FEED_CONF] = "true"
        return {**implied, **self.spark_conf}

    @property
    def lake(self) -> Lake:
        return Lake(self.lake_root or default_lake_root(), s3_settings=self.s3_settings())

    @property
    def defer_lake(self) -> Optional[Lake]:
        """The prod lake this lake defers to (``defer_to``), if any.

        Raises:
            ConfigError: it is this lake itself (a run would read and write the same tables).
        """
        root = self.defer_to or os.environ.get(DEFER_ENV)
        if not root:
            return None
        prod = Lake(root, s3_settings=self.s3_settings())
        if prod == self.lake:  # canonical roots: any spelling of this lake is this lake
            raise ConfigError(
                f"defer_to ({DEFER_ENV}) is the lake root itself ({prod.root}). Point it at the prod lake, "
                "and lake_root at a dev lake of your own."
            )
        return prod

    def catalog_settings(self) -> CatalogSettings:
        """The catalog the lake's tables are registered in (``catalog``, else the environment).

        Example:
            >>> SparkDeltaResource(lake_root="/data/lake", catalog="hive").catalog_settings().describe()
            'hive (embedded at /data/lake/.assetlake/metastore)'
        """
        return CatalogSettings.resolve(self.catalog, lake_root=self.lake.root, metastore_uris=self.hive_metastore_uris)

    def known_catalogs(self) -> Optional[frozenset[str]]:
        """The Spark catalogs a SQL file may name (``catalog.schema.table``): ``spark_catalog``
        and each plugin configured by ``spark.sql.catalog.<name>`` in this resource's settings;
        ``None`` for a remote server, whose own settings this process cannot see.

        Example:
            >>> conf = {"spark.sql.catalog.uc": "io.unitycatalog.spark.UCSingleCatalog", "spark.sql.catalog.uc.uri": "http://uc"}
            >>> sorted(SparkDeltaResource(lake_root="/data/lake", spark_conf=conf).known_catalogs())
            ['spark_catalog', 'uc']
        """
        try:
            if self.resolved_mode() == REMOTE_MODE:
                return None
            conf = self.server_spark_conf()
        except ConfigError:  # a bad setting: the run that needs Spark reports it
            return None
        prefix = "spark.sql.catalog."
        names = {key[len(prefix):] for key in conf if key.startswith(prefix)}
        return frozenset({SESSION_CATALOG_NAME, *(name.lower() for name in names if name and "." not in name)})

    def jdbc_endpoint(self) -> Optional[JdbcEndpoint]:
        """Where the warm engine serves JDBC (``jdbc_port``, ``$ASSETLAKE_JDBC_PORT``), or ``None``.

        Raises:
            ConfigError: the port is not a port, or the host is not loopback without
                ``jdbc_allow_remote``.

        Example:
            >>> SparkDeltaResource(lake_root="/tmp/lake", jdbc_port=10000).jdbc_endpoint().url
            'jdbc:hive2://127.0.0.1:10000/default'
        """
        return JdbcEndpoint.resolve(self.jdbc_port, self.jdbc_host, self.jdbc_allow_remote)

    def s3_settings(self) -> S3Settings:
        """The S3 settings: these fields, else the standard AWS variables."""
        return S3Settings.from_env(endpoint=self.s3_endpoint, region=self.s3_region, path_style=self.s3_path_style)

    def server_spark_conf(self) -> dict[str, str]:
        """Everything a Spark driver of this lake starts with: the object store's connector
        and settings (for an ``s3a://`` lake), the catalog's, then :meth:`effective_spark_conf`,
        which wins.

        Example:
            >>> SparkDeltaResource(lake_root="/tmp/lake", spark_conf={"spark.sql.shuffle.partitions": "4"}).server_spark_conf()
            {'spark.sql.shuffle.partitions': '4'}
        """
        lake = self.lake
        conf = self.catalog_settings().with_spark_conf(self.effective_spark_conf())
        if not lake.is_s3:
            return conf
        return {**s3_jar_conf(conf), **lake.s3.spark_conf(), **conf}

    def resolved_remote(self) -> Optional[str]:
        """The Spark Connect URL in use, if any (``remote``, else ``$ASSETLAKE_SPARK_REMOTE``)."""
        return resolve_remote(self.remote)

    def resolved_mode(self) -> str:
        """``remote``, ``engine`` or ``local``."""
        return resolve_mode(self.mode, self.remote)

    def resolved_master(self) -> str:
        """The master URL of the engine or of the in-process session."""
        return resolve_master(self.master)

    def sessions(self, mode: Optional[str] = None) -> SessionSource:
        """Where this resource's sessions come from, resolved from its fields and the environment.

        ``mode`` overrides the resolved mode (the warm engine's commands ask for ``engine``
        whatever the environment runs).

        An in-process driver of an S3 lake without a multi-driver log store is refused when
        it would start (a second driver could silently lose a commit), and so is one on an
        embedded Hive metastore (it allows one JVM, the engine's).
        """
        lake, mode = self.lake, mode or self.resolved_mode()
        # A remote server is started with its own settings and jars: none from here.
        server_conf = {} if mode == REMOTE_MODE else self.server_spark_conf()
        refusal = None
        if mode == LOCAL_MODE and lake.is_s3 and not has_multi_driver_log_store(server_conf):
            refusal = single_driver_rule(lake.root, f"{MODE_ENV}={LOCAL_MODE}")
        catalog = self.catalog_settings()
        if mode == LOCAL_MODE and catalog.embedded and refusal is None:
            refusal = embedded_metastore_rule(catalog, f"an in-process driver ({MODE_ENV}={LOCAL_MODE})")
        return SessionSource(
            mode=mode,
            remote=self.resolved_remote(),
            master=self.resolved_master(),
            session_conf=self.effective_spark_conf(),
            server_conf=server_conf,
            engine_dir=default_engine_dir(lake.root),
            warehouse_dir=lake.warehouse_dir,
            local_root=None if lake.is_url else lake.root,
            idle_timeout=self.engine_idle_timeout,
            app_name=self.app_name,
            local_refusal=refusal,
            jdbc=self.jdbc_endpoint() if mode == ENGINE_MODE else None,
        )

    def get_session(self) -> "SparkSession":
        """This process's shared SparkSession (created on first use, then reused).

        Python assets use it; SQL files each get their own (:meth:`new_session`).
        """
        return self.sessions().get_session()

    def new_session(self) -> "SparkSession":
        """A session of its own: its ``SET``s and temp views are seen by no other.

        Over Spark Connect (engine, remote) it is a new server-side session; stop it with
        :meth:`release_session` when done. In process it is ``newSession()`` of the
        shared one (same JVM, separate SQL settings and temp views).
        """
        return self.sessions().new_session()

    @staticmethod
    def release_session(session: "SparkSession") -> None:
        """Release a session from :meth:`new_session` (a no-op in process: stopping a
        classic session would stop the shared JVM)."""
        release_session(session)

    def engine(self) -> WarmEngine:
        """The warm engine of this resource's lake (not started until used)."""
        return self.sessions(ENGINE_MODE).engine()

    def engine_state(self) -> EngineState:
        """The running warm engine of this lake, started (or replaced) if needed."""
        return self.sessions(ENGINE_MODE).engine_state()
