"""``-- column``: what one output column derives from, or what it means.

Two forms, each at most once per output column::

    -- column order_total <- delta://sales/orders.amount, delta://sales/orders.tax
    -- column order_total "Amount plus tax, in EUR"

The first declares the column's lineage: it replaces what is inferred from the SQL for
that column (the annotation wins; other columns keep their inferred lineage). The second
is the column's description, shown in the UI's column table: the text between the first
and the last double quote of the line.

Checks that need the SELECT or other files (the column is produced, the table is read by
this file, the source column exists) happen in :mod:`assetlake_dagster.project.load` and
:mod:`assetlake_dagster.project.dag`.
"""

import dataclasses
from typing import Optional

from assetlake_dagster.annotations.header import HeaderDraft, Word, comma_items, parse_uri
from assetlake_dagster.spec.names import IDENTIFIER_HINT
from assetlake_dagster.spec import ColumnSourceSpec, ColumnSpec, is_identifier

LINEAGE_ARROW = "<-"
_FORMS = "Write '-- column <out> <- delta://<schema>/<table>.<column>[, ...]' or '-- column <out> \"description\"'."


def parse_column(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    """Parse a ``-- column`` line into ``draft.columns``."""
    if len(rest) < 2:
        draft.error(rest[0] if rest else keyword, "'-- column' needs an output column and what it says about it.", _FORMS)
        return
    out = rest[0]
    if not is_identifier(out.text):
        draft.error(out, f"'{out.text}' is not an allowed column name.", IDENTIFIER_HINT)
        return
    value = Word(raw[rest[1].col - 1 :].rstrip(), rest[1].line, rest[1].col)
    column = draft.columns.get(out.text.lower()) or ColumnSpec(
        out.text, location=draft.src.location(out.line, out.col)
    )
    if value.text.startswith('"'):
        form, parse = "description", _with_description
    elif value.text.startswith(LINEAGE_ARROW):
        form, parse = "lineage", _with_sources
    else:
        message = f"expected '{LINEAGE_ARROW}' or a quoted description after '{out.text}'."
        draft.error(value, message, _FORMS, span=len(rest[1].text))
        return
    first_line = draft.column_lines.get((out.text.lower(), form))
    if first_line is not None:
        message = f"the {form} of column '{out.text}' is already declared on line {first_line}."
        draft.error(value, message, f"Keep one {form} line per column.", span=len(rest[1].text))
        return
    draft.column_lines[(out.text.lower(), form)] = out.line
    column = parse(draft, column, value)
    if column is not None:
        draft.columns[out.text.lower()] = column


def _with_description(draft: HeaderDraft, column: ColumnSpec, value: Word) -> Optional[ColumnSpec]:
    if len(value.text) < 2 or not value.text.endswith('"'):
        draft.error(value, "the description has no closing '\"'.", 'Write the text in double quotes: "Amount in EUR".', span=1)
        return None
    text = value.text[1:-1].strip()
    if not text:
        draft.error(value, "the description is empty.", 'Write the text in double quotes: "Amount in EUR".')
        return None
    return dataclasses.replace(column, description=text)


def _with_sources(draft: HeaderDraft, column: ColumnSpec, value: Word) -> Optional[ColumnSpec]:
    arrow = Word(LINEAGE_ARROW, value.line, value.col)
    listed = value.text[len(LINEAGE_ARROW) :]
    if not listed.strip():
        draft.error(arrow, f"'{LINEAGE_ARROW}' names no source column.", _FORMS)
        return None
    first = Word(listed, value.line, value.col + len(LINEAGE_ARROW))
    sources = []
    for item in comma_items(listed, first):
        source = _source(draft, item)
        if source is not None and source not in sources:
            sources.append(source)
    return dataclasses.replace(column, sources=tuple(sources), lineage_declared=True)


def _source(draft: HeaderDraft, item: Word) -> Optional[ColumnSourceSpec]:
    """``delta://s/t.col`` → the table and the column, or ``None`` after reporting why not."""
    table, dot, name = item.text.rpartition(".")
    if not item.text or not dot or "/" in name:
        hint = "Write '<table URI>.<column>', e.g. 'delta://sales/orders.amount'."
        draft.error(item, f"'{item.text}' does not name a table's column.", hint, span=max(1, len(item.text)))
        return None
    uri = parse_uri(draft, Word(table, item.line, item.col), target=False)
    if uri is None:
        return None
    if not is_identifier(name):
        draft.error(Word(name, item.line, item.col + len(table) + 1), f"'{name}' is not an allowed column name.", IDENTIFIER_HINT)
        return None
    return ColumnSourceSpec(uri, name, draft.src.location(item.line, item.col))
