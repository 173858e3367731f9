"""Dev lakes that read prod: a run on a dev lake reads each upstream the dev lake does not
have from the prod lake, read-only and pinned, and writes only to the dev lake.

Set ``ASSETLAKE_DEFER_TO=<prod lake root>`` (or ``SparkDeltaResource(defer_to=...)``). For
each table a SQL file reads that is missing from the dev lake but present in prod, the SQL
reads ``delta.`<prod path>` VERSION AS OF <v>`` instead of ``schema.table`` (a history
table's ``_current`` view: its current rows at that version). The version is the one the
run saw first: the first step of a run that reads a prod table records it as a run tag
(``assetlake/deferred/<schema.table>``), and every later step of the run reads that one.
Nothing ever writes to prod: writes go to the resource's own lake, and a pinned read is a
query, not a registered table. The materialization records which inputs came from prod,
and at which version, as ``assetlake/deferred_inputs``.

dbt calls this ``--defer --state``, SQLMesh virtual environments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.lake.delta_sql import path_identifier
from assetlake_dagster.lake.root import DEFER_ENV, Lake
from assetlake_dagster.spec import IS_CURRENT, RESERVED_TABLE_SUFFIX, SqlAssetSpec, TableUri, quote_identifier

if TYPE_CHECKING:
    import dagster as dg
    from pyspark.sql import SparkSession

#: Materialization metadata: the inputs read from prod, ``{table: {"lake": root, "version": v}}``.
DEFERRED_INPUTS_KEY = "assetlake/deferred_inputs"
#: Run tags that pin a prod table's version for the whole run.
PIN_TAG_PREFIX = "assetlake/deferred/"


@dataclass(frozen=True)
class DeferredInput:
    """An upstream a dev run reads from prod.

    Attributes:
        uri: the name the SQL reads (``schema.table`` or ``schema.table_current``).
        table: the prod table behind it (the history table of a ``_current`` view).
        version: the prod version the whole run reads.
        sql: what the SQL reads instead of ``uri``.
        path: where ``table`` lives in prod.
    """

    uri: TableUri
    table: TableUri
    version: int
    sql: str
    path: str = ""


def deferred_inputs(
    spark: "SparkSession",
    lake: Lake,
    prod: Optional[Lake],
    uris: Iterable[TableUri],
    run: Optional[tuple["dg.DagsterInstance", str]] = None,
) -> dict[TableUri, DeferredInput]:
    """Of ``uris`` (the tables a run reads), those ``lake`` does not have and ``prod`` does, pinned.

    ``run`` (its instance and id) pins each version for the run; without one, the latest
    is read.
    """
    from assetlake_dagster.lake.versions import current_version

    if prod is None:
        return {}
    found = {}
    for uri in uris:
        base = _history_table(uri)
        if lake.table_exists(spark, uri) or (base is not None and lake.table_exists(spark, base)):
            continue
        table = uri if prod.table_exists(spark, uri) else base
        if table is None or not prod.table_exists(spark, table):
            continue  # in neither lake: the run reports it
        path = prod.table_path(table)
        version = _pinned(run, table, current_version(spark, path))
        source = f"{path_identifier(path)} VERSION AS OF {int(version)}"
        if table != uri:  # the `_current` view of a history table
            source = f"(SELECT * FROM {source} WHERE {quote_identifier(IS_CURRENT)})"
        found[uri] = DeferredInput(uri, table, version, source, path)
    return found


def sql_asset_reads(spec: SqlAssetSpec) -> list[TableUri]:
    """The tables a SQL asset's run reads: its upstreams and its relationships tests' tables."""
    from assetlake_dagster.spec import DataTestKind

    refs = [t.ref_uri for t in spec.data_tests if t.kind is DataTestKind.RELATIONSHIPS and t.ref_uri is not None]
    return list(dict.fromkeys([*(u.uri for u in spec.upstreams), *refs]))


def deferred_metadata(prod: Lake, inputs: Mapping[TableUri, DeferredInput]) -> dict[str, Any]:
    """``{"assetlake/deferred_inputs": {...}}``, empty when nothing came from prod.

    Example:
        >>> i = DeferredInput(TableUri("raw", "o"), TableUri("raw", "o"), 3, "...")
        >>> deferred_metadata(Lake("/prod"), {i.uri: i})["assetlake/deferred_inputs"].value
        {'delta://raw/o': {'lake': '/prod', 'version': 3}}
    """
    import dagster as dg

    if not inputs:
        return {}
    value = {str(i.uri): {"lake": prod.root, "version": i.version} for i in inputs.values()}
    return {DEFERRED_INPUTS_KEY: dg.MetadataValue.json(value)}


def _pinned(run: Optional[tuple["dg.DagsterInstance", str]], table: TableUri, latest: int) -> int:
    """The version of ``table`` this run reads: the one its first reader recorded, else
    ``latest``, recorded now."""
    if run is None:
        return latest
    from assetlake_dagster.defs.dagster_internals import add_run_tags

    tag = PIN_TAG_PREFIX + table.sql_name
    instance, run_id = run
    recorded = (instance.get_run_by_id(run_id).tags or {}).get(tag)
    if recorded is None:
        add_run_tags(instance, run_id, {tag: str(latest)})
        # Read back: of two steps that raced to record it, both use the one that stayed.
        recorded = instance.get_run_by_id(run_id).tags.get(tag, str(latest))
    return int(recorded)


def _history_table(uri: TableUri) -> Optional[TableUri]:
    """``schema.t`` for ``schema.t_current``; ``None`` for other names."""
    if uri.table.endswith(RESERVED_TABLE_SUFFIX) and len(uri.table) > len(RESERVED_TABLE_SUFFIX):
        return TableUri(uri.schema, uri.table[: -len(RESERVED_TABLE_SUFFIX)])
    return None
