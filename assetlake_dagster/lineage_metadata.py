"""Column lineage on a materialization: Dagster's ``dagster/column_lineage``, and a table
the open-source UI shows on the asset page (its column-lineage view is not in that build).

The lineage is inferred from the file's SELECT (:mod:`assetlake_dagster.lineage`) at run
time, against the upstream tables' columns as Spark sees them then, so ``SELECT *`` expands
to what the upstream really holds. It costs no definitions-load time: a code location with
a thousand files computes it only for the assets a run materializes.
"""

from collections.abc import Mapping
from typing import Any

import dagster as dg

from assetlake_dagster.lineage import ColumnSource, infer_column_lineage
from assetlake_dagster.spec import SqlAssetSpec, TableUri

#: The markdown rendering of the lineage, one row per output column.
LINEAGE_TABLE_KEY = "assetlake/column_lineage"


def column_lineage_metadata(
    spark: Any, spec: SqlAssetSpec, keys_by_table: Mapping[TableUri, dg.AssetKey]
) -> dict[str, Any]:
    """``dagster/column_lineage`` and its markdown table for ``spec``'s output columns.

    Only sources in the file's upstream tables count (a temp view of the setup statements
    is not an asset). Empty when the SELECT cannot be analyzed.

    Example:
        >>> metadata = column_lineage_metadata(spark, spec, {uri: key})  # doctest: +SKIP
        >>> metadata["dagster/column_lineage"].deps_by_column["order_total"]  # doctest: +SKIP
        [TableColumnDep(asset_key=AssetKey(['sales', 'orders']), column_name='amount'), ...]
    """
    if spec.select is None:
        return {}
    upstreams = {up.uri for up in spec.upstreams}
    schemas = {uri: columns for uri in upstreams if (columns := _columns(spark, uri)) is not None}
    inferred = infer_column_lineage(spec.select.sql, schemas)
    if not inferred:
        return {}
    lineage = {column: [s for s in sources if s.uri in upstreams] for column, sources in inferred.items()}

    def key(uri: TableUri) -> dg.AssetKey:
        return keys_by_table.get(uri, dg.AssetKey(uri.asset_key_path))

    deps = {
        column: [dg.TableColumnDep(asset_key=key(s.uri), column_name=s.column) for s in sources]
        for column, sources in lineage.items()
    }
    return {
        "dagster/column_lineage": dg.TableColumnLineage(deps_by_column=deps),
        LINEAGE_TABLE_KEY: dg.MetadataValue.md(lineage_table(lineage)),
    }


def lineage_table(lineage: Mapping[str, list[ColumnSource]]) -> str:
    """The lineage as a markdown table: each output column and the columns it derives from.

    Example:
        >>> from assetlake_dagster.lineage import ColumnSource
        >>> print(lineage_table({"total": [ColumnSource(TableUri("s", "o"), "amount")], "n": []}))
        | column | derives from |
        |---|---|
        | `total` | `s.o.amount` |
        | `n` | (no column: a constant or `count(*)`) |
    """
    rows = ["| column | derives from |", "|---|---|"]
    for column, sources in lineage.items():
        named = ", ".join(f"`{s.uri.sql_name}.{s.column}`" for s in sources)
        rows.append(f"| `{column}` | {named or '(no column: a constant or `count(*)`)'} |")
    return "\n".join(rows)


def _columns(spark: Any, uri: TableUri):
    """The columns of ``uri`` as the session's catalog resolves it, or ``None``."""
    try:
        return spark.table(uri.sql_name).columns
    except Exception:  # noqa: BLE001 - no table yet, or not readable: lineage without its schema
        return None
