"""External tables: what a table the SQL reads but no file produces becomes in Dagster.

An observable source asset: its data version is its Delta version, read from the table's
``_delta_log`` without Spark (on local disk or an object store: :mod:`assetlake_dagster.lake.files`). The watch sensor (:mod:`assetlake_dagster.defs.watch`) records a
new one on every new commit; "Observe" in the UI (or a run selecting the asset) records
the current one. Being *observable* is what makes Dagster use those observations: the
asset page shows the version, and a reader that read an older one is marked stale (an
external asset that is not observable has no data version in Dagster 1.13 but
"INITIAL", and every reader then looked stale right after its own run). Each observation
also records the table's schema, read from the log's newest ``metaData`` action.

Example:
    >>> asset = external_table_asset(AssetlakeTranslator(), TableUri("landing", "payments"),
    ...                              ["staging.payments"], Lake("/data/lake"))  # doctest: +SKIP
    >>> asset.is_observable  # doctest: +SKIP
    True
"""

import warnings
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.lake.delta_log import DeltaLog, DeltaLogError, DeltaLogUnreadableError, TableMetadata
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import TABLE_METADATA_KEY, TableUri
from assetlake_dagster.defs.translator import AssetlakeTranslator


def external_table_asset(
    translator: AssetlakeTranslator,
    uri: TableUri,
    readers: Optional[list[str]],
    lake: Lake,
    io_manager_key: str = "io_manager",
) -> dg.AssetsDefinition:
    """The translator's spec of an external table, observable from its Delta log.

    Args:
        translator: makes the spec (``get_external_asset_spec``).
        uri: the table.
        readers: the SQL names of the tables that read it (for the description).
        lake: where the table lives.
        io_manager_key: the resource key a Python asset that takes the table as an input
            loads it through.
    """
    spec = translator.get_external_asset_spec(uri, readers)
    # The table is named after the translator ran, so the IO manager finds it whatever key
    # the translator chose.
    spec = spec.replace_attributes(metadata={**spec.metadata, TABLE_METADATA_KEY: str(uri)})
    if io_manager_key != "io_manager":
        spec = spec.with_io_manager_key(io_manager_key)

    with warnings.catch_warnings():
        # Beta in Dagster 1.13; the one observable kind that takes a whole AssetSpec (kinds,
        # owners, tags from the translator).
        warnings.simplefilter("ignore", dg.BetaWarning)
        decorator = dg.multi_observable_source_asset(specs=[spec], name=f"observe__{uri.schema}__{uri.table}")

    @decorator
    def observe() -> dg.ObserveResult:
        # The log is read where the lake is (local disk or an object store), without Spark.
        log = DeltaLog.open(lake.table_path(uri), lake.files)
        metadata = {"delta_version": log.latest_version, **catalog_metadata(uri, log), **last_updated(log)}
        # A metadata-only commit (a property, a description) is not new data: nothing
        # downstream runs because of it.
        data_version = dg.DataVersion(str(log.last_data_version()))
        return dg.ObserveResult(asset_key=spec.key, data_version=data_version, metadata=metadata)

    return observe


#: The observation's time of the table's last commit, which Dagster's freshness checks read.
LAST_UPDATED_KEY = "dagster/last_updated_timestamp"


def last_updated(log: DeltaLog) -> dict[str, Any]:
    """``{LAST_UPDATED_KEY: <the latest commit's time>}``, or nothing when its log entry is gone."""
    try:
        (commit,) = log.read_commits(log.latest_version - 1, up_to=log.latest_version)
    except (DeltaLogError, ValueError):
        return {}
    return {LAST_UPDATED_KEY: dg.MetadataValue.timestamp(commit.timestamp)}


def catalog_metadata(uri: TableUri, log: DeltaLog) -> dict[str, Any]:
    """What the asset page shows of an external table (columns, table name, location), as
    for the tables this project writes; the schema is read from the same log listing.

    Raises:
        DeltaLogUnreadableError: the log holds no readable schema.
    """
    return {
        "path": dg.MetadataValue.path(log.table_path),
        "dagster/uri": dg.MetadataValue.path(log.table_path),
        "dagster/table_name": uri.qualified_name,
        "dagster/column_schema": delta_column_schema(log.read_metadata(), log.table_path),
    }


def delta_column_schema(metadata: TableMetadata, table_path: str) -> dg.TableSchema:
    """A Delta log's schema -> Dagster ``TableSchema`` (``dagster/column_schema``).

    Types are Spark's simple strings (``int``, ``decimal(10,2)``, ``array<string>``,
    ``struct<a:int>``): the log's JSON is parsed by PySpark's own ``StructType.fromJson``
    (no JVM), so they read as Spark shows them. A column's comment is its description.

    Raises:
        DeltaLogUnreadableError: the schema has a type this PySpark cannot parse.

    Example:
        >>> meta = TableMetadata(0, {"type": "struct", "fields": [{"name": "id", "type": "long",
        ...     "nullable": False, "metadata": {"comment": "the key"}}]}, (), "_delta_log/0.json")
        >>> (col,) = delta_column_schema(meta, "/lake/t").columns
        >>> col.name, col.type, col.constraints.nullable, col.description
        ('id', 'bigint', False, 'the key')
    """
    from pyspark.sql.types import StructType  # only for a table on disk: most loads have none

    from assetlake_dagster.run.materialization_metadata import column_schema

    try:
        schema = StructType.fromJson(dict(metadata.schema))
    except (ValueError, KeyError, TypeError) as exc:  # PySparkValueError is a ValueError
        raise DeltaLogUnreadableError(
            f"{metadata.file}: the schema of version {metadata.version} cannot be parsed ({exc}). "
            "Either a newer writer used a type this PySpark does not know (upgrade pyspark) or the log "
            "is damaged (restore it from a backup).",
            table_path=table_path,
            file=metadata.file,
        ) from None
    return column_schema(schema)
