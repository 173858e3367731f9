"""Making the lake's tables resolvable in SQL: ``schema.table`` names in the session catalog.

Each managed table is registered as an external Delta table at its lake path (the data is
never read or moved); an SCD2 table also gets its ``_current`` view.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.catalog import HIVE_CATALOG, session_catalog_kind
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spark.error_logs import errors_reported_by_caller
from assetlake_dagster.spec import HISTORY_COLUMNS, RESERVED_TABLE_SUFFIX, TableUri, quote_identifier

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import SparkSession


#: What Spark answers for a schema its catalog does not know.
SCHEMA_NOT_FOUND = "SCHEMA_NOT_FOUND"

#: Per live session, the tables registered in it: ``{sql name: path}``. Weakly keyed: an
#: entry goes with its session (each SQL asset's run has one), and a new session never
#: inherits one whose ``id()`` it reuses.
_registered: "weakref.WeakKeyDictionary[SparkSession, dict[str, str]]" = weakref.WeakKeyDictionary()
_registered_lock = threading.Lock()


def register_table(spark: SparkSession, lake: Lake, uri: TableUri) -> None:
    """Make ``schema.table`` resolve to the lake's Delta table in this session's catalog.

    The schema is created as needed and the table registered as an external table at its
    path (no data is read or moved). In the in-memory session catalog a name pointing at
    another location (a previous lake root in a long-lived session) is re-pointed: dropping
    an external table never deletes data. In a Hive metastore, which other tools and other
    lakes share, that is refused instead (:func:`repointing_refused`).
    """
    path = lake.table_path(uri)
    with _registered_lock:
        known = _registered.setdefault(spark, {})
        if known.get(uri.sql_name) == path:
            return
        ensure_schema(spark, lake, uri.schema)
        location = _registered_location(spark, uri, path)
        if location is not None:
            if _same_location(location, path):
                known[uri.sql_name] = path
                return
            if session_catalog_kind(spark) == HIVE_CATALOG:
                raise ConfigError(repointing_refused(uri, location, path))
            _drop_external(spark, uri, path)
        try:
            # In SQL, not spark.catalog.createTable: over Spark Connect that call also
            # fetches the new table's rows to the client (a 20M-row first write failed
            # after its commit with TaskResultLost). CREATE TABLE reads only the log.
            with errors_reported_by_caller():  # ALREADY_EXISTS below is expected
                spark.sql(f"CREATE TABLE {_quoted_name(uri)} USING DELTA LOCATION {sql_string(path)}")
        except Exception as exc:
            # Another run on the shared engine registered it first: fine if it points here.
            if "ALREADY_EXISTS" not in str(exc) or not _same_location(_location(spark, uri), path):
                raise
        known[uri.sql_name] = path


def repointing_refused(uri: TableUri, location: str, path: str) -> str:
    """The message for a metastore name that already points at another location.

    Example:
        >>> print(repointing_refused(TableUri("analytics", "orders"), "s3a://old/analytics/orders", "/lake/analytics/orders"))
        analytics.orders is registered in the Hive metastore at s3a://old/analytics/orders, not at this lake's /lake/analytics/orders; assetlake does not re-point a name other tools may be reading. If the table moved here, run `DROP TABLE analytics.orders` (an external table: its files stay) and run again or `assetlake catalog sync`; if another lake owns the name, give this lake its own metastore (ASSETLAKE_METASTORE_DIR) or another schema.
    """
    return (
        f"{uri.sql_name} is registered in the Hive metastore at {location}, not at this lake's {path}; "
        "assetlake does not re-point a name other tools may be reading. If the table moved here, run "
        f"`DROP TABLE {uri.sql_name}` (an external table: its files stay) and run again or `assetlake catalog sync`; "
        "if another lake owns the name, give this lake its own metastore (ASSETLAKE_METASTORE_DIR) or another schema."
    )


def current_view_uri(uri: TableUri) -> TableUri:
    """The companion view of a history table: ``schema.<table>_current``.

    Example:
        >>> str(current_view_uri(TableUri("analytics", "dim_customer")))
        'delta://analytics/dim_customer_current'
    """
    return TableUri(uri.schema, uri.table + RESERVED_TABLE_SUFFIX)


def register_current_view(spark: SparkSession, lake: Lake, uri: TableUri) -> None:
    """Make ``schema.<table>_current`` resolve to the current rows of a history table.

    A catalog view (not a temp view: those cannot be schema-qualified) over the registered
    table, so SQL in later steps reads ``analytics.dim_customer_current`` as written. It
    reads the table when queried, so it is always in step with the latest version.
    """
    register_table(spark, lake, uri)
    view = current_view_uri(uri)
    q = quote_identifier
    with _registered_lock:
        spark.sql(
            f"CREATE OR REPLACE VIEW {q(view.schema)}.{q(view.table)} AS "
            f"SELECT * FROM {q(uri.schema)}.{q(uri.table)} WHERE {q('is_current')}"
        )


#: The table property of a view that says which SQL file content made it.
VIEW_HASH_PROPERTY = "assetlake.view_hash"


def register_view(
    spark: SparkSession,
    lake: Lake,
    uri: TableUri,
    select: str,
    view_hash: str,
    comment: Optional[str] = None,
    column_comments: Optional[Sequence[tuple[str, Optional[str]]]] = None,
) -> bool:
    """Make ``schema.table`` the catalog view ``select``, unless the catalog holds it already
    as made from ``view_hash``; whether it was (re)created.

    The hash is kept in the view's own table properties, so an unchanged file does nothing,
    in this process or any other that shares the catalog, and a changed one replaces it.

    Args:
        select: the view's query; the tables it names must resolve in this catalog.
        view_hash: what the view is made from (its file's code version).
        comment: the view's comment (the file's ``-- description``).
        column_comments: every output column with its comment (or ``None``), in order; given
            only when the file describes a column, as the view's column list needs them all.
    """
    q = quote_identifier
    ensure_schema(spark, lake, uri.schema)
    with _registered_lock:
        if _registered_location(spark, uri, "") == "" and _view_hash(spark, uri) == view_hash:
            return False
        columns = ""
        if column_comments:
            columns = " (" + ", ".join(
                q(name) + (f" COMMENT {sql_string(text)}" if text else "") for name, text in column_comments
            ) + ")"
        spark.sql(
            f"CREATE OR REPLACE VIEW {_quoted_name(uri)}{columns}"
            + (f" COMMENT {sql_string(comment)}" if comment else "")
            + f" TBLPROPERTIES ({sql_string(VIEW_HASH_PROPERTY)} = {sql_string(view_hash)}) AS {select}"
        )
        _registered.setdefault(spark, {}).pop(uri.sql_name, None)
        return True


def _view_hash(spark: SparkSession, uri: TableUri) -> Optional[str]:
    rows = spark.sql(f"SHOW TBLPROPERTIES {_quoted_name(uri)}").collect()
    return next((r["value"] for r in rows if r["key"] == VIEW_HASH_PROPERTY), None)


def is_history_table(spark: SparkSession, uri: TableUri) -> bool:
    """Whether the registered table carries the SCD2 columns (only history writes them)."""
    columns = {c.lower() for c in spark.table(uri.sql_name).columns}
    return set(HISTORY_COLUMNS) <= columns


def _registered_location(spark: SparkSession, uri: TableUri, path: str) -> Optional[str]:
    """Where the catalog's ``uri`` name points (``""`` for a view), or ``None`` when the
    catalog knows no such name; a Delta table's name whose files are gone is forgotten.

    One ``SHOW TABLE EXTENDED`` answers both questions (a statement each is a round trip to
    the engine and an analysis there, on every registration of every run), and a name the
    catalog does not know is an empty answer, not an error: ``DESCRIBE TABLE`` of it raised
    ``TABLE_OR_VIEW_NOT_FOUND``, which PySpark logged at ERROR level with a stack trace on
    every table's first write. A name left pointing somewhere other than ``path`` at a
    deleted or moved lake (the catalog outlives a lake root in a long-lived session) makes
    Delta fail every lookup of it; there is no data left to lose, so the name is dropped and
    registered again at the lake's path.
    """
    rows = spark.sql(f"SHOW TABLE EXTENDED IN {quote_identifier(uri.schema)} LIKE {sql_string(uri.table)}").collect()
    information = next(
        (row["information"] for row in rows if not row["isTemporary"] and row["tableName"].lower() == uri.table.lower()),
        None,
    )
    if information is None:
        return None
    fields = dict(line.split(": ", 1) for line in information.splitlines() if ": " in line)
    location = fields.get("Location", "")
    if location and not _same_location(location, path) and fields.get("Provider", "").lower() == "delta":
        if _files_gone(spark, uri):
            spark.sql(f"DROP TABLE IF EXISTS {_quoted_name(uri)}")
            return None
    return location


def _files_gone(spark: SparkSession, uri: TableUri) -> bool:
    """Whether the Delta table ``uri`` names has lost its files (Delta then fails its lookups)."""
    from pyspark.errors import AnalysisException

    try:
        with errors_reported_by_caller():  # the error is the answer
            _location(spark, uri)
    except AnalysisException as exc:
        if "DELTA_PATH_DOES_NOT_EXIST" not in str(exc):
            raise
        return True
    return False


def _quoted_name(uri: TableUri) -> str:
    return f"{quote_identifier(uri.schema)}.{quote_identifier(uri.table)}"


def _location(spark: SparkSession, uri: TableUri) -> str:
    # Filtered here, not with .where(): DESCRIBE's rows are already on the driver, and a
    # filter on them would run two Spark jobs per registration check.
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {_quoted_name(uri)}").collect()
    return next((row["data_type"] for row in rows if row["col_name"] == "Location"), "")


def _same_location(location: str, path: str) -> bool:
    """Whether a catalog's location is ``path``, whatever its spelling (``s3://`` for the
    lake's ``s3a://``, a ``file:`` prefix, a trailing slash)."""
    from assetlake_dagster.lake.identity import canonical_lake_root

    def canonical(text: str) -> str:
        if text.startswith("file:"):
            text = "/" + text.removeprefix("file:").lstrip("/")
        try:
            return canonical_lake_root(text)
        except Exception:  # noqa: BLE001 - a location the lake would refuse is simply another place
            return text.rstrip("/")

    return canonical(location) == canonical(path)


def _drop_external(spark: SparkSession, uri: TableUri, path: str) -> None:
    """Unregister a name that points at another location, never deleting data.

    Dropping an EXTERNAL table only forgets the name; dropping a MANAGED one deletes its
    files, so a managed table in the way is an error instead.
    """
    table_type = spark.catalog.getTable(uri.sql_name).tableType
    if table_type != "EXTERNAL":
        raise ConfigError(
            f"{uri.sql_name} is a {table_type} table at {_location(spark, uri)}, not the lake path "
            f"{path}. Drop or rename it in the Spark catalog; assetlake will not delete it."
        )
    spark.sql(f"DROP TABLE IF EXISTS {_quoted_name(uri)}")


def ensure_schema(spark: SparkSession, lake: Lake, schema: str) -> None:
    """Create the catalog schema with its location in the lake.

    With ``LOCATION <lake_root>/<schema>``, a ``CREATE TABLE schema.t`` in a ``manual``
    file lands at ``<lake_root>/schema/t``, where the managed writes expect it.
    """
    from pyspark.errors import AnalysisException

    location = lake.root.rstrip("/") + "/" + schema
    # The lake root is operator configuration, not user data; escape it as a literal anyway.
    literal = sql_string(location)
    try:
        # One call for "exists?" and "where?": each is a round trip to the engine.
        with errors_reported_by_caller():  # SCHEMA_NOT_FOUND is an answer
            current: Optional[str] = spark.catalog.getDatabase(schema).locationUri or ""
    except AnalysisException as exc:
        if exc.getCondition() != SCHEMA_NOT_FOUND:
            raise
        current = None
    if current is not None:
        if current.rstrip("/").removeprefix("file:") != location.rstrip("/"):
            if session_catalog_kind(spark) == HIVE_CATALOG:
                raise ConfigError(
                    f"schema {schema} is in the Hive metastore at {current}, not at this lake's {location}; "
                    "assetlake does not move a schema other tools may be using. Give this lake its own "
                    f"metastore (ASSETLAKE_METASTORE_DIR), or run `ALTER DATABASE {schema} SET LOCATION '{location}'` "
                    "if the lake moved here."
                )
            # The same process may switch lake roots (tests, notebooks): follow it.
            spark.sql(f"ALTER DATABASE {quote_identifier(schema)} SET LOCATION {literal}")
        return
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote_identifier(schema)} LOCATION {literal}")


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal (backslashes and quotes escaped).

    Example:
        >>> print(sql_string("s3a://b/it's"))
        's3a://b/it\\'s'
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def forget_registrations(spark: Optional[SparkSession] = None) -> None:
    """Drop the registration cache (tests that switch lake roots call this)."""
    with _registered_lock:
        if spark is None:
            _registered.clear()
        else:
            _registered.pop(spark, None)
