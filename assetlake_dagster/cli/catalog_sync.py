"""``assetlake catalog sync``: register every table of a project that the lake holds.

Runs register each table they write, so a catalog chosen after the tables were written (or
a run killed between its Delta commit and its registration) catches up on the table's next
run. This does it at once for the whole project without running anything: each table the
project writes or reads from the lake is registered as an external Delta table at its path
(no data read or rewritten), with the ``<table>_current`` view of a history table. Each
``materialize view`` file's view is made once the tables it reads are in the lake.

Example:
    >>> defs = build_definitions("pipelines/")  # doctest: +SKIP
    >>> for line in sync_catalog(spark, lake, defs):  # doctest: +SKIP
    ...     print(line.render())
    registered analytics.customers
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import dagster as dg

from assetlake_dagster.lake.registration import current_view_uri, register_current_view, register_table
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import WRITE_METADATA_KEY, SqlAssetSpec, TableUri, WriteStrategy

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: What sync did with one table.
REGISTERED, ALREADY, NOT_WRITTEN = "registered", "already registered", "not written yet"
#: What sync did with one view.
VIEW_MADE, VIEW_AS_IS, VIEW_WAITS = "view made", "view as it is", "view waits"


@dataclass(frozen=True)
class SyncLine:
    """One table's outcome."""

    uri: TableUri
    outcome: str
    current_view: bool = False

    def render(self) -> str:
        view = f" (and {current_view_uri(self.uri).sql_name})" if self.current_view and self.outcome != NOT_WRITTEN else ""
        return f"{self.outcome:<18} {self.uri.sql_name}{view}"


def project_tables(defs: dg.Definitions) -> dict[TableUri, bool]:
    """Every lake table ``defs`` writes or reads, and whether it keeps a ``_current`` view."""
    from assetlake_dagster.defs.write_contract import materialize_spec_for
    from assetlake_dagster.spec import TABLE_METADATA_KEY
    from assetlake_dagster.writes import STRATEGIES

    tables: dict[TableUri, bool] = {}
    for node in defs.resolve_asset_graph().asset_nodes:
        metadata = node.metadata or {}
        if WRITE_METADATA_KEY in metadata:
            spec = materialize_spec_for(node.key, metadata)
            if spec.strategy is WriteStrategy.VIEW:
                continue  # made from its file (sync_catalog's views), not registered
            write = STRATEGIES.get(spec.strategy)
            tables[spec.uri] = bool(write and write.current_view)
        elif TABLE_METADATA_KEY in metadata:  # an external table the SQL reads
            named = metadata[TABLE_METADATA_KEY]
            tables.setdefault(TableUri.parse(str(getattr(named, "value", named))), False)
    return dict(sorted(tables.items(), key=lambda item: item[0].sql_name))


def sync_catalog(
    spark: SparkSession, lake: Lake, defs: dg.Definitions, views: Sequence[SqlAssetSpec] = ()
) -> list[SyncLine]:
    """Register each of the project's tables that exists in ``lake``, then make each of its
    ``views`` whose tables all exist; what was done, by table and view.

    Raises:
        ConfigError: a name already points at another location in a Hive metastore (the
            message says how to resolve it); tables before it in name order are registered.
    """
    lines = []
    for uri, keeps_view in project_tables(defs).items():
        if not lake.table_exists(spark, uri):
            lines.append(SyncLine(uri, NOT_WRITTEN, keeps_view))
            continue
        known = spark.catalog.tableExists(uri.sql_name)
        if keeps_view:
            register_current_view(spark, lake, uri)
        else:
            register_table(spark, lake, uri)
        lines.append(SyncLine(uri, ALREADY if known else REGISTERED, keeps_view))
    from assetlake_dagster.run.sql_runner import ensure_view

    by_name = {view.uri: view for view in views}
    for view in sorted(views, key=lambda v: v.uri.sql_name):
        if any(not lake.table_exists(spark, uri) for uri in _tables_under(view, by_name)):
            lines.append(SyncLine(view.uri, VIEW_WAITS))
            continue
        made = ensure_view(spark, lake, view, by_name)
        lines.append(SyncLine(view.uri, VIEW_MADE if made else VIEW_AS_IS))
    return lines


def _tables_under(view: SqlAssetSpec, views: Mapping[TableUri, SqlAssetSpec]) -> set[TableUri]:
    """The lake tables a view reads, through the views it reads."""
    tables: set[TableUri] = set()
    for upstream in view.upstreams:
        if upstream.uri in views:
            tables |= _tables_under(views[upstream.uri], views)
        else:
            tables.add(upstream.uri)
    return tables
