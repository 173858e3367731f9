"""Which catalog the lake's tables are registered in: the session's, or a Hive metastore.

- ``session`` (default): Spark's in-memory catalog. Each engine (or in-process session)
  registers the tables it touches; a new process, another tool or the engine after a
  restart does not know the names until a run registers them again.
- ``hive``: a persistent Hive metastore that other tools can query (Spark's Thrift JDBC
  server, a notebook's Spark session, Trino's Hive connector). By default an embedded one,
  a Derby database in ``<lake state>/metastore`` beside the engine's state folder; with
  ``ASSETLAKE_HIVE_METASTORE_URIS`` (``thrift://host:9083``) an external metastore service.

An embedded metastore can be open in one JVM at a time (Derby locks its folder), so it is
served by the lake's one warm engine: an in-process driver (``ASSETLAKE_SPARK_MODE=local``)
would be a second JVM and is refused. An external metastore takes any number of drivers.

Example:
    >>> settings = CatalogSettings.resolve("hive", lake_root="/data/lake")
    >>> settings.metastore_dir
    '/data/lake/.assetlake/metastore'
    >>> settings.spark_conf()["spark.sql.catalogImplementation"]
    'hive'
    >>> CatalogSettings.resolve(None, lake_root="/data/lake").spark_conf()
    {}
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.identity import canonical_lake_root, lake_key
from assetlake_dagster.lake.storage import url_scheme

CATALOG_ENV = "ASSETLAKE_CATALOG"
METASTORE_URIS_ENV = "ASSETLAKE_HIVE_METASTORE_URIS"
METASTORE_DIR_ENV = "ASSETLAKE_METASTORE_DIR"
SESSION_CATALOG = "session"
HIVE_CATALOG = "hive"
CATALOGS = (SESSION_CATALOG, HIVE_CATALOG)
#: Spark's setting for the session catalog's implementation, and its two values.
CATALOG_IMPLEMENTATION_CONF = "spark.sql.catalogImplementation"
IMPLEMENTATIONS = {SESSION_CATALOG: "in-memory", HIVE_CATALOG: "hive"}
METASTORE_URIS_CONF = "spark.hadoop.hive.metastore.uris"
_JDO_URL_CONF = "spark.hadoop.javax.jdo.option.ConnectionURL"
_JAVA_OPTIONS_CONF = "spark.driver.extraJavaOptions"


@dataclass(frozen=True)
class CatalogSettings:
    """The resolved catalog of one lake.

    Attributes:
        kind: ``session`` or ``hive``.
        metastore_dir: the embedded metastore's folder (``hive`` without an external one).
        metastore_uris: the external metastore (``thrift://…``), if any.
    """

    kind: str = SESSION_CATALOG
    metastore_dir: Optional[str] = None
    metastore_uris: Optional[str] = None

    @classmethod
    def resolve(
        cls,
        kind: Optional[str],
        *,
        lake_root: str,
        metastore_uris: Optional[str] = None,
        metastore_dir: Optional[str] = None,
    ) -> "CatalogSettings":
        """The catalog asked for (``kind``, else ``$ASSETLAKE_CATALOG``, else ``session``).

        Raises:
            ConfigError: an unknown catalog.
        """
        raw = kind or os.environ.get(CATALOG_ENV) or SESSION_CATALOG
        chosen = raw.strip().lower()
        if chosen not in CATALOGS:
            raise ConfigError(
                f"catalog {raw!r} ({CATALOG_ENV}) is not one assetlake knows. "
                f"Use {SESSION_CATALOG!r} (Spark's in-memory catalog, the default) or {HIVE_CATALOG!r} "
                "(a persistent Hive metastore)."
            )
        if chosen == SESSION_CATALOG:
            return cls()
        uris = metastore_uris or os.environ.get(METASTORE_URIS_ENV) or None
        if uris:
            return cls(HIVE_CATALOG, metastore_uris=uris)
        folder = metastore_dir or os.environ.get(METASTORE_DIR_ENV) or default_metastore_dir(lake_root)
        return cls(HIVE_CATALOG, metastore_dir=os.path.abspath(os.path.expanduser(folder)))

    @property
    def embedded(self) -> bool:
        """Whether the metastore lives in the driver's JVM (one JVM at a time)."""
        return self.kind == HIVE_CATALOG and not self.metastore_uris

    def spark_conf(self) -> dict[str, str]:
        """The static Spark settings of a driver using this catalog (none for ``session``)."""
        if self.kind == SESSION_CATALOG:
            return {}
        conf = {CATALOG_IMPLEMENTATION_CONF: IMPLEMENTATIONS[HIVE_CATALOG]}
        if self.metastore_uris:
            conf[METASTORE_URIS_CONF] = self.metastore_uris
            return conf
        assert self.metastore_dir is not None
        database = os.path.join(self.metastore_dir, "metastore_db")
        conf[_JDO_URL_CONF] = f"jdbc:derby:;databaseName={database};create=true"
        # Derby writes derby.log into the working directory unless told otherwise.
        conf[_JAVA_OPTIONS_CONF] = f"-Dderby.stream.error.file={os.path.join(self.metastore_dir, 'derby.log')}"
        return conf

    def with_spark_conf(self, conf: dict[str, str]) -> dict[str, str]:
        """``conf`` (the user's settings, which win) on top of this catalog's settings; JVM
        options are joined, not replaced.

        Example:
            >>> hive = CatalogSettings("hive", metastore_dir="/m")
            >>> hive.with_spark_conf({"spark.driver.extraJavaOptions": "-Dx=1"})["spark.driver.extraJavaOptions"]
            '-Dderby.stream.error.file=/m/derby.log -Dx=1'
        """
        own = self.spark_conf()
        merged = {**own, **conf}
        if _JAVA_OPTIONS_CONF in own and _JAVA_OPTIONS_CONF in conf:
            merged[_JAVA_OPTIONS_CONF] = f"{own[_JAVA_OPTIONS_CONF]} {conf[_JAVA_OPTIONS_CONF]}".strip()
        return merged

    def describe(self) -> str:
        """For messages: ``session``, ``hive (embedded at …)`` or ``hive (thrift://…)``."""
        if self.kind == SESSION_CATALOG:
            return SESSION_CATALOG
        return f"hive ({self.metastore_uris})" if self.metastore_uris else f"hive (embedded at {self.metastore_dir})"


def default_metastore_dir(lake_root: str) -> str:
    """``<lake_root>/.assetlake/metastore`` for a local lake (beside the engine's state);
    ``~/.cache/assetlake/metastores/<key of the root>`` for an object-store URL. Derived from
    the canonical root, so every spelling of one lake has the same metastore.

    Example:
        >>> default_metastore_dir("/data/lake")
        '/data/lake/.assetlake/metastore'
        >>> default_metastore_dir("s3://Bucket//lake/") == default_metastore_dir("s3a://bucket/lake")
        True
    """
    root = canonical_lake_root(lake_root)
    if url_scheme(root) is not None:
        return os.path.join(os.path.expanduser("~"), ".cache", "assetlake", "metastores", lake_key(root))
    return os.path.join(root, ".assetlake", "metastore")


def embedded_metastore_rule(settings: CatalogSettings, what: str) -> str:
    """Why ``what`` (a second JVM on an embedded metastore) is refused, and the fix."""
    return (
        f"the embedded Hive metastore ({settings.metastore_dir}) can be open in one JVM at a time, "
        f"the lake's warm engine; {what} would start a second one. Unset ASSETLAKE_SPARK_MODE to run on "
        f"the engine, or use an external metastore ({METASTORE_URIS_ENV}=thrift://host:9083)."
    )


def session_catalog_kind(spark) -> str:  # noqa: ANN001 - a classic or Connect SparkSession
    """``hive`` or ``session``: the catalog a live session actually registers tables in.

    Read from the session itself, so a remote server started with its own settings is
    judged by what it runs, not by this process's configuration.
    """
    try:
        implementation = spark.conf.get(CATALOG_IMPLEMENTATION_CONF, IMPLEMENTATIONS[SESSION_CATALOG])
    except Exception:  # noqa: BLE001 - a server that will not say: treat it as in-memory
        return SESSION_CATALOG
    return HIVE_CATALOG if implementation == IMPLEMENTATIONS[HIVE_CATALOG] else SESSION_CATALOG
