"""What every keyword shares: the header's extent, its words, the draft being filled, errors.

The header is the block of ``-- `` (or ``// ``) lines at the top of the file; a blank line
or the first SQL line ends it. Each header line is ``<keyword> <rest>``, split here into
:class:`Word` values that remember their 1-based position, so that every problem becomes
a :class:`~assetlake_dagster.errors.Diagnostic` pointing at the offending word.
"""

import re
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

from assetlake_dagster.errors import Diagnostic, SourceText
from assetlake_dagster.spec import (
    RESERVED_TABLE_SUFFIX,
    URI_SCHEME,
    ArgumentSpec,
    ColumnSpec,
    DataTestSpec,
    MaterializeSpec,
    PartitionSpec,
    TableUri,
    UpstreamSpec,
    is_identifier,
)
from assetlake_dagster.spec.names import IDENTIFIER_HINT

_WORD_RE = re.compile(r"\S+")
# A word whose double-quoted parts may hold spaces (an unclosed quote runs to the line's end).
_QUOTED_WORD_RE = re.compile(r'(?:[^\s"]|"[^"]*"?)+')


class Word(NamedTuple):
    """A whitespace-delimited word of a header line and its 1-based position."""

    text: str
    line: int
    col: int


@dataclass(frozen=True)
class Header:
    """The parsed header of one file.

    Attributes:
        materialize: the target and strategy, or ``None`` if missing or invalid.
        manual: whether the materialize line says ``manual`` (known even when its URI is bad).
        view: whether the materialize line says ``view`` (likewise).
        key_columns: the ``key=`` columns with their positions (merge and history), for
            cross-checks.
        track_columns: the ``track=`` columns with their positions (history only).
        valid_from_column: the ``valid_from=`` column with its position (history only).
        merge_columns: the columns a merge's ``update=``, ``keep=`` and ``within=`` options
            name, each with its option, for the check against the SELECT's columns.
        partitions: the ``-- partitioned`` line, if any and valid.
        upstreams: ``-- on`` tables, in file order.
        arguments: ``-- $name (type)`` arguments, in file order.
        argument_names: the names of every ``$name`` line, valid or not, so that a bad type
            or default is reported once, not again as an undeclared ``:name``.
        columns: the ``-- column`` lines, merged per output column, in file order.
        body_start: the 1-based line where the SQL body starts (the first non-header line).
        fields: the declared fields' values (:mod:`assetlake_dagster.annotations.fields`)
            by the spec attribute they fill (``catalog.group``, ``schedule``); a field the
            file does not give, or gives only invalid lines of, is absent.
        field_keywords: the keyword of each declared field's first line, by the same
            paths, for checks against the SQL (``project/load.py``).
    """

    materialize: Optional[MaterializeSpec] = None
    manual: bool = False
    view: bool = False
    key_columns: tuple[Word, ...] = ()
    track_columns: tuple[Word, ...] = ()
    valid_from_column: Optional[Word] = None
    merge_columns: tuple[tuple[str, Word], ...] = ()
    partitions: Optional[PartitionSpec] = None
    partitioned_line: Optional[int] = None
    data_tests: tuple[DataTestSpec, ...] = ()
    upstreams: tuple[UpstreamSpec, ...] = ()
    arguments: tuple[ArgumentSpec, ...] = ()
    argument_names: frozenset[str] = frozenset()
    columns: tuple[ColumnSpec, ...] = ()
    body_start: int = 1
    fields: Mapping[str, Any] = field(default_factory=dict)
    field_keywords: Mapping[str, Word] = field(default_factory=dict)


@dataclass
class HeaderDraft:
    """What the lines parsed so far say, and every problem found; one per file.

    Each keyword's parser fills its own fields. Positions (``Word``) are kept where a later
    line or check reports against an earlier one ("already declared on line 3").
    """

    src: SourceText
    diagnostics: list[Diagnostic] = field(default_factory=list)
    materialize: Optional[MaterializeSpec] = None
    materialize_line: Optional[int] = None
    manual: bool = False
    view: Optional[Word] = None  # the `view` word
    key_columns: tuple[Word, ...] = ()
    track_columns: tuple[Word, ...] = ()
    valid_from_column: Optional[Word] = None
    merge_columns: tuple[tuple[str, Word], ...] = ()
    history: Optional[Word] = None  # the `history` (or `scd2`) word
    partitioned: Optional[Word] = None  # the `partitioned` keyword
    partitions: Optional[PartitionSpec] = None
    data_tests: list[DataTestSpec] = field(default_factory=list)
    upstreams: dict[TableUri, UpstreamSpec] = field(default_factory=dict)
    arguments: dict[str, ArgumentSpec] = field(default_factory=dict)
    argument_names: set[str] = field(default_factory=set)
    # The declared fields' lines so far, by the attribute they fill (annotations/fields.py).
    fields: dict[str, Any] = field(default_factory=dict)
    # By output column, lower-cased (Spark's column names are case-insensitive).
    columns: dict[str, ColumnSpec] = field(default_factory=dict)
    column_lines: dict[tuple[str, str], int] = field(default_factory=dict)  # (column, form) -> line

    def error(self, word: Word, message: str, hint: str = "", span: Optional[int] = None) -> None:
        """Report a problem underlining ``word`` (or ``span`` characters from its start)."""
        span = len(word.text) if span is None else span
        self.diagnostics.append(self.src.diagnostic(word.line, word.col, message, hint, span=span))

    def header(self, body_start: int, fields: Mapping[str, Any]) -> Header:
        return Header(
            materialize=self.materialize,
            manual=self.manual,
            view=self.view is not None,
            key_columns=self.key_columns,
            track_columns=self.track_columns,
            valid_from_column=self.valid_from_column,
            merge_columns=self.merge_columns,
            partitions=self.partitions,
            partitioned_line=self.partitioned.line if self.partitioned else None,
            data_tests=tuple(self.data_tests),
            upstreams=tuple(self.upstreams.values()),
            arguments=tuple(self.arguments.values()),
            argument_names=frozenset(self.argument_names),
            columns=tuple(self.columns.values()),
            body_start=body_start,
            fields=dict(fields),
            field_keywords={into: state.first for into, state in self.fields.items()},
        )


def header_length(lines: list[str]) -> int:
    """How many leading lines form the header (comment lines up to a blank or SQL line).

    Example:
        >>> header_length(["-- materialize delta://a/b", "--", "", "-- not header", "SELECT 1"])
        2
    """
    count = 0
    for line in lines:
        stripped = line.lstrip()
        if not stripped.startswith(("--", "//")):
            break
        count += 1
    return count


def split_words(raw: str, start: int, line: int) -> list[Word]:
    """The words of ``raw`` from index ``start``, with their positions on line ``line``."""
    return [Word(m.group(), line, m.start() + 1) for m in _WORD_RE.finditer(raw, start)]


def split_quoted_words(raw: str, start: int, line: int) -> list[Word]:
    """Like :func:`split_words`, but ``name="a b"`` is one word.

    Example:
        >>> [w.text for w in split_quoted_words('key=id within="d >= 1" x', 0, 1)]
        ['key=id', 'within="d >= 1"', 'x']
    """
    return [Word(m.group(), line, m.start() + 1) for m in _QUOTED_WORD_RE.finditer(raw, start)]


def comma_items(word_text: str, first: Word) -> list[Word]:
    """Split ``a=1, b=2`` (the rest of a line from ``first``) into items with positions."""
    items, offset = [], 0
    for piece in word_text.split(","):
        lead = len(piece) - len(piece.lstrip())
        items.append(Word(piece.strip(), first.line, first.col + offset + lead))
        offset += len(piece) + 1
    return items


def option_name(text: str) -> str:
    """``key=a,b`` → ``key=``; ``append`` → ``append``."""
    return text.split("=", 1)[0] + "=" if "=" in text else text


def parse_timezone(draft: HeaderDraft, word: Word) -> Optional[str]:
    """The IANA zone of a ``tz=<zone>`` word, or ``None`` after reporting why not.

    Shared by every line that takes ``tz=`` (``partitioned``, ``schedule``, ``automation``).
    """
    import zoneinfo

    name = word.text[len("tz=") :]
    try:
        zoneinfo.ZoneInfo(name)
    # A name is looked up as a file: a folder ('America') or an over-long name fails with
    # an OSError, not ZoneInfoNotFoundError.
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        draft.error(word, f"unknown time zone '{name}'.", "Use an IANA name, e.g. 'tz=Europe/Berlin' or 'tz=UTC'.")
        return None
    return name


def parse_uri(draft: HeaderDraft, word: Word, *, target: bool) -> Optional[TableUri]:
    """The ``delta://<schema>/<table>`` in ``word``, or ``None`` after reporting why not.

    Args:
        target: whether the table is the file's own (its name may not take the suffix
            reserved for the SCD2 companion view).
    """
    text = word.text
    if not text.startswith(URI_SCHEME):
        draft.error(word, f"unsupported table URI '{text}'.", "Write 'delta://<schema>/<table>'.")
        return None
    segments = text[len(URI_SCHEME) :].split("/")
    if len(segments) != 2 or not all(segments):
        draft.error(
            word,
            f"table URI '{text}' is not 'delta://<schema>/<table>'.",
            "Use exactly two segments, the schema and the table.",
        )
        return None
    col = word.col + len(URI_SCHEME)
    for segment in segments:
        if not is_identifier(segment):
            draft.error(
                Word(segment, word.line, col),
                f"'{segment}' in '{text}' is not an allowed identifier.",
                IDENTIFIER_HINT,
            )
            return None
        col += len(segment) + 1
    table = segments[1]
    if target and table.lower().endswith(RESERVED_TABLE_SUFFIX):
        draft.error(
            Word(table, word.line, col - len(table) - 1),
            f"table name '{table}' ends in '{RESERVED_TABLE_SUFFIX}', which is reserved.",
            "The suffix names the SCD2 companion view; choose another table name.",
        )
        return None
    try:
        return TableUri.parse(text)
    except ValueError as err:  # unreachable after the checks above; kept as a safety net
        draft.error(word, f"invalid table URI '{text}': {err}.")
        return None
