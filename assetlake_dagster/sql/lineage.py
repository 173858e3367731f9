"""Column lineage: which upstream table columns each output column of a SELECT derives from.

sqlglot does the resolving: the statement is parsed once, qualified once against the known
upstream columns (``qualify`` expands ``*`` and attaches every column to its source), and
``sqlglot.lineage.to_node`` walks each output column down through CTEs, subqueries, joins
and set operations to the physical tables. This module only translates the leaves back to
:class:`TableUri` and the caller's spelling of the names.

Dependencies are the columns an output value is computed from (projections, window
``PARTITION BY``/``ORDER BY``, ``CASE`` branches), not the columns that only filter or join
rows (``WHERE``, ``ON``, ``GROUP BY``). ``:name`` parameter markers are values, not columns.

A history table ``s.t`` is also read through its view ``s.t_current`` (same columns);
lineage through the view is reported against ``s.t``, the table that holds the data.

Pure Python: no Spark, no Dagster.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.lineage import Node, to_node
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, build_scope
from sqlglot.schema import MappingSchema

from assetlake_dagster.spec import RESERVED_TABLE_SUFFIX, TableUri
from assetlake_dagster.sql.statements import quiet_sqlglot

_DIALECT = Dialect.get_or_raise("spark")
#: Marks a top-level projection Spark names at run time (``amount + 1``, no alias).
_UNNAMED = "assetlake_unnamed"
#: qualify() needs a type per column only to build the schema; lineage never reads it.
_ANY_TYPE = "STRING"


@dataclass(frozen=True)
class ColumnSource:
    """One upstream column an output column derives from.

    Example:
        >>> ColumnSource(TableUri("sales", "orders"), "amount").uri.sql_name
        'sales.orders'
    """

    uri: TableUri
    column: str


def infer_column_lineage(
    select_sql: str, upstream_schemas: Mapping[TableUri, Sequence[str]]
) -> dict[str, tuple[ColumnSource, ...]]:
    """Map each output column of a SELECT to the upstream columns it derives from.

    Args:
        select_sql: one Spark SQL query (``SELECT``, ``WITH ... SELECT`` or a set operation),
            tables as ``schema.table``, possibly with ``:name`` parameter markers.
        upstream_schemas: the known column names of each upstream table; used to expand
            ``*`` and to attach unqualified columns to their table. A table missing here
            still gets the columns qualified with it (or unambiguous in their scope).

    Returns:
        Output column name (as the SELECT names it, in output order) to its sources,
        sorted by (schema, table, column) and deduplicated. An empty tuple for a column
        computed from no column (a literal, a parameter, ``count(*)``) or whose lineage
        sqlglot could not trace. Left out: projections Spark names at run time (an
        unaliased expression) and ``*`` over a table missing from ``upstream_schemas``.
        ``{}`` when the statement cannot be parsed or analyzed, or is not a query.

    Example:
        >>> orders = TableUri("sales", "orders")
        >>> sql = "SELECT id, amount + tax AS total, :partition AS day FROM sales.orders"
        >>> lineage = infer_column_lineage(sql, {orders: ["id", "amount", "tax"]})
        >>> [(name, [s.column for s in sources]) for name, sources in lineage.items()]
        [('id', ['id']), ('total', ['amount', 'tax']), ('day', [])]
    """
    with quiet_sqlglot():
        try:
            return _Lineage(upstream_schemas).infer(select_sql)
        # sqlglot raises more than SqlglotError on odd input (RecursionError on deep nesting,
        # the occasional KeyError or ValueError from an optimizer rule); lineage is advisory
        # metadata and must never fail a load.
        except Exception:
            return {}


def infer_columns_read(
    select_sql: str, upstream_schemas: Mapping[TableUri, Sequence[str]]
) -> dict[TableUri, tuple[str, ...]]:
    """The columns a SELECT reads from each upstream table: those its output derives
    from, and those it only filters, joins or groups on.

    Args: as :func:`infer_column_lineage`.

    Returns:
        Each table read (sorted) to its columns read (sorted); ``{}`` when the statement
        cannot be parsed or analyzed.

    Example:
        >>> orders = TableUri("sales", "orders")
        >>> sql = "SELECT id FROM sales.orders WHERE status = 'paid'"
        >>> infer_columns_read(sql, {orders: ["id", "status", "amount"]})
        {TableUri(schema='sales', table='orders'): ('id', 'status')}
    """
    with quiet_sqlglot():
        try:
            return _Lineage(upstream_schemas).columns_read(select_sql)
        except Exception:  # advisory metadata, as infer_column_lineage
            return {}


class _Lineage:
    def __init__(self, upstream_schemas: Mapping[TableUri, Sequence[str]]):
        # Spark resolves identifiers case-insensitively and sqlglot lowercases them while
        # qualifying; these give the results back the spelling the caller and the SQL used.
        self.uris: dict[tuple[str, str], TableUri] = {}
        self.spelling: dict[str, str] = {}
        mapping: dict[str, dict[str, dict[str, str]]] = {}
        for uri, columns in upstream_schemas.items():
            self.uris.setdefault((uri.schema.lower(), uri.table.lower()), uri)
            mapping.setdefault(uri.schema, {})[uri.table] = {c: _ANY_TYPE for c in columns}
            for column in columns:
                self.spelling.setdefault(column.lower(), column)
        # The view s.t_current has the columns of s.t: give qualify() both names.
        for uri, columns in upstream_schemas.items():
            view = uri.table + RESERVED_TABLE_SUFFIX
            if (uri.schema.lower(), view.lower()) not in self.uris:
                mapping[uri.schema][view] = {c: _ANY_TYPE for c in columns}
        self.schema = MappingSchema(mapping, dialect=_DIALECT)

    def scope(self, select_sql: str) -> Optional[Scope]:
        """The qualified query's root scope, or ``None`` when it is not one query."""
        parsed = _DIALECT.parse(select_sql)
        if len(parsed) != 1 or not isinstance(parsed[0], exp.Query):
            return None
        expression = parsed[0]
        for identifier in expression.find_all(exp.Identifier):
            self.spelling.setdefault(identifier.name.lower(), identifier.name)
        _mark_unnamed(expression)
        # One qualify and one scope tree for all columns: to_node() per column then shares
        # sqlglot's node cache, so CTEs used by many columns are walked once. This is what
        # lineage(None, ...) does inside, except that it gives up on the first failing column.
        qualified = qualify(
            expression,
            dialect=_DIALECT,
            schema=self.schema,
            validate_qualify_columns=False,  # a table missing from the schema is not an error
            identify=False,
        )
        return build_scope(qualified)

    def columns_read(self, select_sql: str) -> dict[TableUri, tuple[str, ...]]:
        scope = self.scope(select_sql)
        found: dict[TableUri, set[str]] = {}
        for inner in scope.traverse() if scope is not None else ():
            for column in inner.columns:
                table = inner.sources.get(column.table)
                if not isinstance(table, exp.Table) or not table.db:
                    continue  # a CTE's or subquery's column: its own scope names the table
                uri = self._uri(table.db, table.name)
                if uri is not None and column.name != "*":
                    found.setdefault(uri, set()).add(self.spelling.get(column.name, column.name))
        return {uri: tuple(sorted(found[uri])) for uri in sorted(found, key=lambda u: (u.schema, u.table))}

    def infer(self, select_sql: str) -> dict[str, tuple[ColumnSource, ...]]:
        scope = self.scope(select_sql)
        if scope is None:
            return {}
        cache: dict = {}
        scope_meta: dict = {}
        result: dict[str, tuple[ColumnSource, ...]] = {}
        for select in scope.expression.selects:
            if _is_star(select) or _is_unnamed(select):
                continue
            name = select.alias_or_name
            try:
                node = to_node(
                    name,
                    scope,
                    _DIALECT,
                    schema=self.schema,
                    # trim_selects copies the whole SELECT per node, only to label the graph
                    # nodes; it was 90% of the time on a 30-column file.
                    trim_selects=False,
                    _cache=cache,
                    _scope_meta=scope_meta,
                )
                sources = self._sources(node)
            except Exception:  # one untraceable column must not cost the others theirs
                sources = ()
            result.setdefault(self.spelling.get(name, name), sources)
        return result

    def _sources(self, node: Node) -> tuple[ColumnSource, ...]:
        found = set()
        for leaf in node.walk():
            # Physical tables are the leaves with a schema; CTE names, VALUES, unresolved
            # columns (an exp.Placeholder leaf) and star leaves are not upstream columns.
            table = leaf.expression
            if leaf.downstream or not isinstance(table, exp.Table) or not table.db:
                continue
            uri = self._uri(table.db, table.name)
            column = _column_name(leaf.name)
            if uri is not None and column and column != "*":
                found.add(ColumnSource(uri, self.spelling.get(column, column)))
        return tuple(sorted(found, key=lambda s: (s.uri.schema, s.uri.table, s.column)))

    def _uri(self, schema: str, table: str) -> Optional[TableUri]:
        suffix = RESERVED_TABLE_SUFFIX
        # The suffix is reserved: s.t_current is always the view over s.t, whose data it shows.
        if table.lower().endswith(suffix) and len(table) > len(suffix):
            table = table[: -len(suffix)]
        uri = self.uris.get((schema.lower(), table.lower()))
        if uri is not None:
            return uri
        try:
            return TableUri(self.spelling.get(schema, schema), self.spelling.get(table, table))
        except ValueError:  # a backticked name outside the allow-list is no managed table
            return None


def _top_select(expression: exp.Expression) -> Optional[exp.Select]:
    # Spark names a set operation's columns after its first branch.
    while isinstance(expression, (exp.Subquery, exp.SetOperation)):
        expression = expression.this
    return expression if isinstance(expression, exp.Select) else None


def _mark_unnamed(expression: exp.Expression) -> None:
    """Tag projections without a name of their own: qualify() invents ``_col_0`` for them."""
    select = _top_select(expression)
    for projection in select.expressions if select else ():
        if not isinstance(projection, (exp.Alias, exp.Column, exp.Star)):
            projection.meta[_UNNAMED] = True


def _is_unnamed(select: exp.Expression) -> bool:
    return isinstance(select, exp.Alias) and bool(select.this.meta.get(_UNNAMED))


def _is_star(select: exp.Expression) -> bool:
    """A ``*`` or ``t.*`` qualify() could not expand (its table's columns are unknown)."""
    return isinstance(select, exp.Star) or (isinstance(select, exp.Column) and select.is_star)


def _column_name(leaf_name: str) -> str:
    """The column of a leaf named ``alias.column`` (sqlglot's default-dialect SQL)."""
    if '"' not in leaf_name:
        return leaf_name.rsplit(".", 1)[-1]
    return exp.to_column(leaf_name).name  # quoted: let sqlglot split it
