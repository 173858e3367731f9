"""Column lineage on a materialization: Dagster's ``dagster/column_lineage``, and a table
the open-source UI shows on the asset page (its column-lineage view is not in that build).

The lineage is inferred from the file's SELECT (:mod:`assetlake_dagster.sql.lineage`) at run
time, against the upstream tables' columns as Spark sees them then, so ``SELECT *`` expands
to what the upstream really holds. It costs no definitions-load time: a code location with
a thousand files computes it only for the assets a run materializes.
"""

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import dagster as dg

from assetlake_dagster.sql.lineage import ColumnSource, infer_column_lineage, infer_columns_read
from assetlake_dagster.spec import ColumnSpec, SqlAssetSpec, TableUri, WriteStrategy

#: The markdown rendering of the lineage, one row per output column.
LINEAGE_TABLE_KEY = "assetlake/column_lineage"
#: Each upstream table's columns the SELECT reads (also those it only filters or joins on).
COLUMNS_READ_KEY = "assetlake/columns_read"


def column_lineage_metadata(
    spark: Any, spec: SqlAssetSpec, keys_by_table: Mapping[TableUri, dg.AssetKey]
) -> dict[str, Any]:
    """``dagster/column_lineage``, its markdown table and the columns read per upstream.

    The lineage inferred from the SELECT, with each ``-- column <out> <- ...`` line
    replacing the inferred sources of its column (the annotation wins). Only sources in
    the file's upstream tables count (a temp view of the setup statements is not an
    asset). Empty when the SELECT cannot be analyzed and no column is annotated.

    Example:
        >>> metadata = column_lineage_metadata(spark, spec, {uri: key})  # doctest: +SKIP
        >>> metadata["dagster/column_lineage"].deps_by_column["order_total"]  # doctest: +SKIP
        [TableColumnDep(asset_key=AssetKey(['sales', 'orders']), column_name='amount'), ...]
    """
    upstreams = {up.uri for up in spec.upstreams}
    inferred: dict[str, tuple[ColumnSource, ...]] = {}
    read: dict[TableUri, tuple[str, ...]] = {}
    if spec.select is not None and spec.materialize.strategy is not WriteStrategy.MANUAL:
        schemas = {uri: columns for uri in upstreams if (columns := _columns(spark, uri)) is not None}
        inferred = infer_column_lineage(spec.select.sql, schemas)
        read = {uri: columns for uri, columns in infer_columns_read(spec.select.sql, schemas).items() if uri in upstreams}
    lineage = merge_declared_lineage(
        {column: tuple(s for s in sources if s.uri in upstreams) for column, sources in inferred.items()}, spec.columns
    )
    if not lineage:
        return {}

    def key(uri: TableUri) -> dg.AssetKey:
        return keys_by_table.get(uri, dg.AssetKey(uri.asset_key_path))

    deps = {
        column: [dg.TableColumnDep(asset_key=key(s.uri), column_name=s.column) for s in sources]
        for column, sources in lineage.items()
    }
    metadata: dict[str, Any] = {
        "dagster/column_lineage": dg.TableColumnLineage(deps_by_column=deps),
        LINEAGE_TABLE_KEY: dg.MetadataValue.md(lineage_table(lineage, declared={c.name.lower() for c in spec.columns if c.lineage_declared})),
    }
    if read:
        metadata[COLUMNS_READ_KEY] = dg.MetadataValue.json({uri.sql_name: list(columns) for uri, columns in read.items()})
    return metadata


def merge_declared_lineage(
    inferred: Mapping[str, tuple[ColumnSource, ...]], declared: Sequence[ColumnSpec]
) -> dict[str, tuple[ColumnSource, ...]]:
    """The inferred lineage with each declared column's sources in place of its inferred
    ones (matched case-insensitively, in output order; a declared column the inference
    did not see goes last).

    Example:
        >>> from assetlake_dagster.spec import ColumnSourceSpec
        >>> o = TableUri("s", "o")
        >>> inferred = {"id": (ColumnSource(o, "id"),), "total": ()}
        >>> declared = [ColumnSpec("TOTAL", sources=(ColumnSourceSpec(o, "amount"),), lineage_declared=True)]
        >>> {c: [s.column for s in v] for c, v in merge_declared_lineage(inferred, declared).items()}
        {'id': ['id'], 'total': ['amount']}
    """
    merged = dict(inferred)
    spelled = {name.lower(): name for name in inferred}
    for column in declared:
        if column.lineage_declared:
            name = spelled.get(column.name.lower(), column.name)
            merged[name] = tuple(ColumnSource(s.uri, s.column) for s in column.sources)
    return merged


def lineage_table(lineage: Mapping[str, Sequence[ColumnSource]], declared: Collection[str] = ()) -> str:
    """The lineage as a markdown table: each output column and the columns it derives from.

    Args:
        declared: the output columns (lower case) whose lineage a ``-- column`` line states.

    Example:
        >>> from assetlake_dagster.sql.lineage import ColumnSource
        >>> print(lineage_table({"total": [ColumnSource(TableUri("s", "o"), "amount")], "n": []}, {"total"}))
        | column | derives from |
        |---|---|
        | `total` | `s.o.amount` (declared) |
        | `n` | (no column: a constant or `count(*)`) |
    """
    rows = ["| column | derives from |", "|---|---|"]
    for column, sources in lineage.items():
        named = ", ".join(f"`{s.uri.sql_name}.{s.column}`" for s in sources)
        named = named or "(no column: a constant or `count(*)`)"
        rows.append(f"| `{column}` | {named}{' (declared)' if column.lower() in declared else ''} |")
    return "\n".join(rows)


def _columns(spark: Any, uri: TableUri):
    """The columns of ``uri`` as the session's catalog resolves it, or ``None``."""
    try:
        return spark.table(uri.sql_name).columns
    except Exception:  # noqa: BLE001 - no table yet, or not readable: lineage without its schema
        return None
