"""The keyword registry and the header loop: each header line goes to its keyword's parser.

A keyword whose value goes straight into the spec is one declared field
(:class:`~assetlake_dagster.annotations.fields.HeaderField`, gathered in :data:`FIELDS`); a
line whose meaning depends on other lines has a ``parse_<keyword>(draft, keyword, rest, raw)``
function in :data:`LINE_PARSERS`::

    -- materialize delta://analytics/orders_clean key=order_id   -> materialize.py
    -- on delta://raw/orders                                     -> upstreams.py
    -- $min_amount (float) = 0                                   -> arguments.py
    -- group sales                                               -> catalog_attributes.py
    -- schedule 0 2 * * * tz=Europe/Berlin                       -> automation.py
    -- automation eager                                          -> automation.py
    -- freshness fail=26h warn=24h                               -> freshness.py
    -- cluster_by customer_id                                    -> table_layout.py
    -- column order_total <- delta://sales/orders.amount         -> column.py
    -- publish_with daily_sales                                  -> publish_group.py
"""

from typing import Any, Callable

from assetlake_dagster.annotations.arguments import ARGUMENT_PREFIX, parse_argument
from assetlake_dagster.annotations import automation, catalog_attributes, freshness, maintain, publish_group, table_layout
from assetlake_dagster.annotations.column import parse_column
from assetlake_dagster.annotations.data_test import parse_data_test
from assetlake_dagster.annotations.fields import HeaderField, field_values, parse_field_line
from assetlake_dagster.annotations.header import Header, HeaderDraft, Word, header_length, split_words
from assetlake_dagster.annotations.materialize import check_materialized, parse_materialize
from assetlake_dagster.annotations.partitioned import check_not_history, parse_partitioned
from assetlake_dagster.annotations.upstreams import parse_on
from assetlake_dagster.errors import Diagnostic, SourceText, UsageError, did_you_mean

#: Parses one header line: ``(draft, keyword, rest, raw)``, where ``keyword`` is the line's
#: first word, ``rest`` the words after it and ``raw`` the whole line as written.
LineParser = Callable[[HeaderDraft, Word, list[Word], str], None]

def _windmill_marker(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    """``-- pipeline`` marks Windmill scripts; accepted so that such files load unchanged."""


#: The lines whose meaning depends on other lines (their checks cross lines and files).
LINE_PARSERS: dict[str, LineParser] = {
    "materialize": parse_materialize,
    "on": parse_on,
    "pipeline": _windmill_marker,
    "partitioned": parse_partitioned,
    "data_test": parse_data_test,
    "column": parse_column,
}
#: Every declared field: a keyword whose value goes straight into the spec.
FIELDS: tuple[HeaderField, ...] = (
    *catalog_attributes.FIELDS, *table_layout.FIELDS, *maintain.FIELDS, *automation.FIELDS, *freshness.FIELDS,
    *publish_group.FIELDS,
)
FIELDS_BY_KEYWORD: dict[str, HeaderField] = {f.keyword: f for f in FIELDS}
#: Every header keyword (``$<name>`` arguments aside), for did-you-mean.
KEYWORDS = (*LINE_PARSERS, *FIELDS_BY_KEYWORD)


def parse_header(src: SourceText) -> tuple[Header, list[Diagnostic]]:
    """Parse the header of one annotated SQL file.

    Parsing goes on after an error, so that one load reports every problem of the file.

    Args:
        src: the whole file (header and body).

    Returns:
        The header and every problem found in it (empty when valid).

    Example:
        >>> src = SourceText.of("f.sql", "-- materialize delta://a/b key=id\\nSELECT 1 AS id")
        >>> header, problems = parse_header(src)
        >>> header.materialize.strategy.value, header.materialize.key, header.body_start, problems
        ('merge', ('id',), 2, [])
    """
    draft = HeaderDraft(src)
    length = header_length(list(src.lines))
    for number, raw in enumerate(src.lines[:length], start=1):
        content = len(raw) - len(raw.lstrip()) + 2  # index just past '--' or '//'
        words = split_words(raw, content, number)
        if not words:
            continue  # a bare '--' line
        keyword, rest = words[0], words[1:]
        if keyword.text.startswith(ARGUMENT_PREFIX):
            parse_argument(draft, keyword, rest, raw)
        elif keyword.text in LINE_PARSERS:
            LINE_PARSERS[keyword.text](draft, keyword, rest, raw)
        elif keyword.text in FIELDS_BY_KEYWORD:
            parse_field_line(draft, FIELDS_BY_KEYWORD[keyword.text], keyword, rest, raw)
        else:
            hint = did_you_mean(keyword.text, KEYWORDS).strip()
            hint = hint or "Separate free comments from the header with a blank line."
            draft.error(keyword, f"unknown annotation '{keyword.text}'.", hint)
    check_materialized(draft)
    check_not_history(draft)
    return draft.header(body_start=length + 1, fields=field_values(draft)), draft.diagnostics


def parse_line_text(keyword: str, text: str, origin: str) -> Any:
    """The spec of one header line given as text in code (``build_definitions(maintain=…)``),
    checked by the same grammar as a file's ``-- <keyword> <text>`` line.

    Raises:
        ValueError: the line's located messages, under ``origin`` (``maintain['raw']:2:16: …``).

    Example:
        >>> parse_line_text("maintain", "0 3 * * 0", "maintain['*']").cron
        '0 3 * * 0'
    """
    header, problems = parse_header(SourceText.of(origin, f"-- materialize delta://s/t\n-- {keyword} {text}\n"))
    if problems:
        raise UsageError("\n".join(p.render() for p in problems))
    return header.fields[keyword]

