"""Pointing a SQL file's table names elsewhere, by their positions in the parsed SQL.

SQL unit tests point them at temporary views of given rows; a dev lake points the tables it
does not have at the prod lake's, pinned to a version. Only the references are replaced; the
rest of the text runs as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from assetlake_dagster.spec import SqlAssetSpec, SqlStatement, TableUri
from assetlake_dagster.sql.analysis import DIALECT


def rename_tables(sql: str, names: Mapping[TableUri, str]) -> str:
    """``sql`` with each schema-qualified reference to a table of ``names`` replaced by its
    text in ``names`` (a temporary view's name, a pinned path); the rest of the text is kept
    as written. References are found in the parsed SQL, so a string or a column that spells
    the name is left alone.

    Example:
        >>> rename_tables("SELECT a.x FROM raw.a AS a JOIN `raw`.`b` ON 1=1", {TableUri("raw", "a"): "v1", TableUri("raw", "b"): "v2"})
        'SELECT a.x FROM v1 AS a JOIN v2 ON 1=1'
    """
    wanted = {(u.schema.lower(), u.table.lower()): name for u, name in names.items()}
    spans = []
    for expression in Dialect.get_or_raise(DIALECT).parse(sql):
        if expression is None:
            continue
        for table in expression.find_all(exp.Table):
            db, name = table.args.get("db"), table.this
            if not isinstance(db, exp.Identifier) or not isinstance(name, exp.Identifier) or table.args.get("catalog"):
                continue
            new = wanted.get((db.name.lower(), name.name.lower()))
            start, end = db.meta.get("start"), name.meta.get("end")
            if new is not None and start is not None and end is not None:
                spans.append((start, end + 1, new))
    for start, end, new in sorted(spans, reverse=True):
        sql = sql[:start] + new + sql[end:]
    return sql


def with_tables_replaced(spec: SqlAssetSpec, replacements: Mapping[TableUri, str]) -> SqlAssetSpec:
    """``spec`` with its statements reading ``replacements`` instead of the tables they stand for."""
    if not replacements:
        return spec

    def renamed(statement: SqlStatement) -> SqlStatement:
        return replace(statement, sql=rename_tables(statement.sql, replacements))

    return replace(
        spec,
        setup=tuple(renamed(s) for s in spec.setup),
        select=renamed(spec.select) if spec.select is not None else None,
    )
