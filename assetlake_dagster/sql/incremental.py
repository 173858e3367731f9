"""Which SQL files a run can feed with only the rows that changed upstream (sqlglot, no Spark).

Two shapes of a ``key=`` merge's SELECT over one lake table qualify:

* **row-local**: each output row comes from one input row alone (projections, filters,
  deterministic functions; no join, aggregate, window, ``DISTINCT``, ``LIMIT``, generator
  or subquery). Running the SELECT over the rows the upstream gained since the last run
  gives every output row that can differ from what the table holds.
* **grouped on the key**: ``GROUP BY`` plain columns of the upstream that the SELECT
  projects as the table's key, and nothing the row-local shape forbids besides the
  aggregates. Running the SELECT over the upstream's rows *of the groups the changes touch*
  gives every group that can differ.

An ``append new_rows`` must be row-local: it appends the SELECT over the gained rows only,
on every run (:func:`new_rows_problem` is checked when the project loads).

Anything else reads in full; :func:`incremental_shape` says why in words.
:mod:`assetlake_dagster.run.change_feed` does the reading.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Union

from assetlake_dagster.spec import SqlAssetSpec, TableUri, WriteStrategy

ROW_LOCAL = "row-local"
GROUPED = "grouped on the key"

#: Spark aggregate and generator functions sqlglot may not model (it reads those as
#: anonymous calls): a SELECT calling one is not row-local.
_UNMODELED_SET_FUNCTIONS = frozenset({
    "count_if", "bool_and", "bool_or", "every", "some", "any", "max_by", "min_by", "mode", "median",
    "percentile", "histogram_numeric", "try_sum", "try_avg", "kurtosis", "skewness", "bit_and", "bit_or",
    "bit_xor", "collect_list", "collect_set", "array_agg", "first", "last", "first_value", "last_value",
    "approx_count_distinct", "json_tuple", "posexplode_outer", "inline_outer", "stack", "explode",
    "explode_outer", "grouping", "grouping_id", "listagg", "string_agg", "hll_sketch_agg", "regr_count",
})


@dataclass(frozen=True)
class IncrementalShape:
    """How a file's SELECT can read only the changes of ``table``.

    Attributes:
        kind: :data:`ROW_LOCAL` or :data:`GROUPED`.
        table: the one lake table the SELECT reads.
        group_columns: for :data:`GROUPED`, the upstream columns it groups on.
        key_columns: for :data:`GROUPED`, each key column (lower case) with the group column
            it projects.
    """

    kind: str
    table: TableUri
    group_columns: tuple[str, ...] = ()
    key_columns: tuple[tuple[str, str], ...] = ()


def incremental_shape(spec: SqlAssetSpec) -> Union[IncrementalShape, str]:
    """The shape that lets ``spec``'s run read only its upstream's changes, or why none does.

    Example:
        >>> incremental_shape(spec)  # doctest: +SKIP
        IncrementalShape(kind='row-local', table=TableUri('raw', 'orders'))
        >>> incremental_shape(joined)  # doctest: +SKIP
        'its SELECT joins tables'
    """
    materialize = spec.materialize
    if materialize.strategy is WriteStrategy.APPEND and materialize.new_rows:
        return new_rows_problem(spec) or IncrementalShape(ROW_LOCAL, _shape(spec.select.sql, ()).table)
    if materialize.strategy is WriteStrategy.APPEND:
        return "a plain append reads its inputs in full ('append new_rows' appends only what its upstream gained)"
    if materialize.strategy is not WriteStrategy.MERGE:
        return f"a {materialize.strategy.value} write is not a key= merge"
    if spec.partitions is not None:
        return "the table is partitioned (each partition's run reads its slice in full)"
    if materialize.merge is not None and materialize.merge.within is not None:
        return "its merge has within= (the change feed does not know the bound)"
    if spec.setup:
        return "the file has setup statements before its SELECT"
    if spec.select is None:
        return "the file has no SELECT"
    return _shape(spec.select.sql, tuple(k.lower() for k in materialize.key))


def new_rows_problem(spec: SqlAssetSpec) -> Optional[str]:
    """Why the ``append new_rows`` of ``spec`` cannot read only its upstream's new rows, or ``None``.

    Example:
        >>> new_rows_problem(spec)  # doctest: +SKIP
        'its SELECT has a join'
    """
    if spec.partitions is not None:
        return "the table is partitioned (each partition's run reads its slice in full)"
    if spec.setup:
        return "the file has setup statements before its SELECT"
    if spec.select is None:
        return "the file has no SELECT"
    shape = _shape(spec.select.sql, ())  # no key: a GROUP BY is never the key's here
    if isinstance(shape, str):
        return "its SELECT has GROUP BY" if shape.startswith(("its GROUP BY", "it groups by")) else shape
    return None


@functools.lru_cache(maxsize=64)
def _shape(sql: str, key: tuple[str, ...]) -> Union[IncrementalShape, str]:
    import sqlglot
    from sqlglot import exp

    try:
        trees = [t for t in sqlglot.parse(sql, read="spark") if t is not None]
    except sqlglot.errors.SqlglotError:
        return "sqlglot cannot read its SELECT"
    if len(trees) != 1 or not isinstance(trees[0], exp.Select):
        return "its query is not one plain SELECT (a set operation or another statement)"
    select = trees[0]
    forbidden = (
        (exp.With, "a WITH clause"), (exp.Join, "a join"), (exp.Subquery, "a subquery"),
        (exp.Window, "a window function"), (exp.Lateral, "a LATERAL VIEW"), (exp.UDTF, "a generator"),
        (exp.Distinct, "DISTINCT"), (exp.Limit, "LIMIT"), (exp.Offset, "OFFSET"), (exp.Qualify, "QUALIFY"),
        (exp.SetOperation, "a set operation"),
    )
    for node in select.walk():
        for kind, words in forbidden:
            if isinstance(node, kind):
                return f"its SELECT has {words}"
        if isinstance(node, exp.Anonymous) and node.name.lower() in _UNMODELED_SET_FUNCTIONS:
            return f"its SELECT calls {node.name.lower()}(), an aggregate or generator"
        if isinstance(node, exp.Any):  # Spark's any(x) aggregate, as sqlglot reads it
            return "its SELECT calls any(), an aggregate"
        if isinstance(node, exp.Select) and node is not select:
            return "its SELECT has a subquery"
    tables = list(select.find_all(exp.Table))
    if len(tables) != 1:
        return "its SELECT reads more than one table" if tables else "its SELECT reads no table"
    table = tables[0]
    db, name = table.args.get("db"), table.this
    if table.args.get("catalog") or not isinstance(db, exp.Identifier) or not isinstance(name, exp.Identifier):
        return "its SELECT reads something other than a lake table (schema.table)"
    uri = TableUri(db.name, name.name)
    group = select.args.get("group")
    aggregates = any(True for _ in select.find_all(exp.AggFunc))
    if group is None:
        if aggregates or select.args.get("having") is not None:
            return "its SELECT aggregates without GROUP BY"
        return IncrementalShape(ROW_LOCAL, uri)
    return _grouped(select, group, key, uri)


def _grouped(select, group, key: tuple[str, ...], uri: TableUri) -> Union[IncrementalShape, str]:
    from sqlglot import exp

    columns = []
    for item in group.expressions:
        if not isinstance(item, exp.Column):
            return f"it groups by {item.sql(dialect='spark')}, not a plain column"
        columns.append(item.name.lower())
    if any(group.args.get(kind) for kind in ("rollup", "cube", "grouping_sets")):
        return "it groups by ROLLUP, CUBE or GROUPING SETS"
    projected: dict[str, str] = {}
    for item in select.expressions:
        inner = item.this if isinstance(item, exp.Alias) else item
        if isinstance(inner, exp.Column) and inner.name.lower() in columns:
            projected[item.alias_or_name.lower()] = inner.name.lower()
    keyed = {projected.get(k) for k in key}
    if None in keyed or keyed != set(columns):
        return "its GROUP BY columns are not the table's key= columns, each projected as one"
    return IncrementalShape(GROUPED, uri, tuple(dict.fromkeys(columns)), tuple((k, projected[k]) for k in key))

