"""The header grammar: the leading comment block of an annotated SQL file → typed specs.

The header is the block of ``-- `` (or ``// ``) lines at the top of the file; a blank line
or the first SQL line ends it. Each header line is ``<keyword> <rest>``::

    -- materialize delta://analytics/orders_clean key=order_id
    -- on delta://raw/orders
    -- $min_amount (float) = 0
    -- group sales

Every problem becomes a :class:`~assetlake_dagster.errors.Diagnostic` pointing at the
offending word of the original line; parsing goes on after an error so that one load
reports every problem of the file.
"""

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional

# Dagster's own validators, so a bad owner/tag/group fails here with a line number instead
# of later inside dagster.AssetSpec without one.
from assetlake_dagster.dagster_internals import (
    KIND_PREFIX,
    VALID_GROUP_NAME_REGEX,
    is_valid_owner,
    is_valid_strict_tag_value,
    is_valid_tag_key,
)

from assetlake_dagster.errors import Diagnostic, SourceText, did_you_mean
from assetlake_dagster.spec import (
    RESERVED_TABLE_SUFFIX,
    URI_SCHEME,
    ArgumentSpec,
    DEFAULT_BACKFILL_BATCH,
    DataTestKind,
    DataTestSpec,
    WINDOW_UNITS,
    ArgumentType,
    MaterializeSpec,
    PartitionKind,
    PartitionSpec,
    TableUri,
    UpstreamSpec,
    WindowSpec,
    WriteStrategy,
    convert_value,
    is_identifier,
    parse_partition_datetime,
)

MATERIALIZE_FORM = "-- materialize delta://<schema>/<table> [append] [key=<c1,c2>]"
HISTORY_FORM = "-- materialize delta://<schema>/<table> key=<c1,c2> history [track=<c1,c2>] [deletes=close]"
#: Options of the materialize line, for did-you-mean.
MATERIALIZE_OPTIONS = ("append", "key=", "history", "track=", "deletes=")
#: Options that only mean something with ``history``.
HISTORY_OPTIONS = ("track=", "deletes=")
#: Keywords and options recognised now but implemented by a later feature.
LATER_KEYWORDS = {
    "column": "column lineage",
    "schedule": "schedules",
    "automation": "declarative automation",
}
LATER_OPTIONS: dict[str, str] = {}
PARTITIONED_FORM = (
    "-- partitioned daily|hourly|weekly|monthly start=<YYYY-MM-DD> [end=…] [tz=…] [batch=<n>], "
    "'-- partitioned static a,b,c' or '-- partitioned dynamic <name>'"
)
DATA_TEST_FORMS = {
    DataTestKind.UNIQUE: "unique <c1[,c2]>",
    DataTestKind.NOT_NULL: "not_null <column>",
    DataTestKind.ACCEPTED_VALUES: "accepted_values <column> = a,b,c",
    DataTestKind.RELATIONSHIPS: "relationships <column> -> delta://<schema>/<table>.<column>",
}
DATA_TEST_KINDS = tuple(k.value for k in DATA_TEST_FORMS)
DATA_TEST_FORM = "-- data_test unique|not_null <col> | accepted_values <col> = a,b | relationships <col> -> delta://s/t.c | <path/to/test.sql> [warn]"
#: Options of each kind of ``-- partitioned`` line.
TIME_WINDOW_OPTIONS = ("start=", "end=", "tz=", "batch=")
#: Largest ``batch=``: one run and one commit write at most this many partitions.
MAX_BACKFILL_BATCH = 1000
#: Every header keyword (``$<name>`` arguments aside).
KEYWORDS = (
    "materialize",
    "on",
    "group",
    "owner",
    "tags",
    "description",
    "kinds",
    "pipeline",
    "partitioned",
    "data_test",
    *LATER_KEYWORDS,
)
ARGUMENT_TYPES: dict[str, ArgumentType] = {
    **{t.value: t for t in ArgumentType},
    "str": ArgumentType.STRING,
    "integer": ArgumentType.INT,
    "bigint": ArgumentType.INT,
    "double": ArgumentType.FLOAT,
    "boolean": ArgumentType.BOOL,
}
_TYPE_LIST = ", ".join(t.value for t in ArgumentType)
_IDENTIFIER_HINT = "Use letters, digits and underscores, not starting with a digit."
_TAG_HINT = "Use letters, digits, '_', '-' and '.', at most 63 characters."
_WORD_RE = re.compile(r"\S+")



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
        key_columns: the ``key=`` columns with their positions (merge and history), for
            cross-checks.
        track_columns: the ``track=`` columns with their positions (history only).
        partitions: the ``-- partitioned`` line, if any and valid.
        upstreams: ``-- on`` tables, in file order.
        arguments: ``-- $name (type)`` arguments, in file order.
        argument_names: the names of every ``$name`` line, valid or not, so that a bad type
            or default is reported once, not again as an undeclared ``:name``.
        body_start: the 1-based line where the SQL body starts (the first non-header line).
    """

    materialize: Optional[MaterializeSpec] = None
    manual: bool = False
    key_columns: tuple[Word, ...] = ()
    track_columns: tuple[Word, ...] = ()
    partitions: Optional[PartitionSpec] = None
    partitioned_line: Optional[int] = None
    data_tests: tuple[DataTestSpec, ...] = ()
    upstreams: tuple[UpstreamSpec, ...] = ()
    arguments: tuple[ArgumentSpec, ...] = ()
    argument_names: frozenset[str] = frozenset()
    group: Optional[str] = None
    owners: tuple[str, ...] = ()
    tags: tuple[tuple[str, str], ...] = ()
    description: Optional[str] = None
    kinds: tuple[str, ...] = ()
    body_start: int = 1


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


def parse_header(src: SourceText) -> tuple[Header, list[Diagnostic]]:
    """Parse the header of one annotated SQL file.

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
    return _HeaderParser(src).parse()


def _words(raw: str, start: int, line: int) -> list[Word]:
    return [Word(m.group(), line, m.start() + 1) for m in _WORD_RE.finditer(raw, start)]


def _comma_items(word_text: str, first: Word) -> list[Word]:
    """Split ``a=1, b=2`` (the rest of a line from ``first``) into items with positions."""
    items, offset = [], 0
    for piece in word_text.split(","):
        lead = len(piece) - len(piece.lstrip())
        items.append(Word(piece.strip(), first.line, first.col + offset + lead))
        offset += len(piece) + 1
    return items


class _HeaderParser:
    """One pass over the header lines; one method per keyword."""

    def __init__(self, src: SourceText):
        self.src = src
        self.diagnostics: list[Diagnostic] = []
        self.materialize: Optional[MaterializeSpec] = None
        self.materialize_line: Optional[int] = None
        self.manual = False
        self.key_columns: tuple[Word, ...] = ()
        self.track_columns: tuple[Word, ...] = ()
        self.history: Optional[Word] = None  # the `history` (or `scd2`) word
        self.partitioned: Optional[Word] = None  # the `partitioned` keyword
        self.partitions: Optional[PartitionSpec] = None
        self.data_tests: list[DataTestSpec] = []
        self.upstreams: dict[TableUri, UpstreamSpec] = {}
        self.arguments: dict[str, ArgumentSpec] = {}
        self.argument_names: set[str] = set()
        self.group: Optional[Word] = None
        self.owners: dict[str, Word] = {}
        self.tags: dict[str, tuple[str, Word]] = {}
        self.description: list[str] = []
        self.kinds: dict[str, Word] = {}
        self.handlers: dict[str, Callable[[Word, list[Word], str], None]] = {
            "materialize": self._materialize,
            "on": self._on,
            "partitioned": self._partitioned,
            "data_test": self._data_test,
            "group": self._group,
            "owner": self._owner,
            "tags": self._tags,
            "description": self._description,
            "kinds": self._kinds,
            "pipeline": lambda kw, rest, raw: None,  # Windmill compatibility marker
        }

    def error(self, word: Word, message: str, hint: str = "", span: Optional[int] = None) -> None:
        span = len(word.text) if span is None else span
        self.diagnostics.append(self.src.diagnostic(word.line, word.col, message, hint, span=span))

    def parse(self) -> tuple[Header, list[Diagnostic]]:
        lines = list(self.src.lines)
        length = header_length(lines)
        for number, raw in enumerate(lines[:length], start=1):
            content = len(raw) - len(raw.lstrip()) + 2  # index just past '--' or '//'
            words = _words(raw, content, number)
            if not words:
                continue  # a bare '--' line
            keyword, rest = words[0], words[1:]
            if keyword.text.startswith("$"):
                self._argument(keyword, raw)
            elif keyword.text in self.handlers:
                self.handlers[keyword.text](keyword, rest, raw)
            elif keyword.text in LATER_KEYWORDS:
                hint = f"Remove the line; it arrives with {LATER_KEYWORDS[keyword.text]} support."
                self.error(keyword, f"{keyword.text} is not supported yet.", hint)
            else:
                hint = did_you_mean(keyword.text, KEYWORDS).strip()
                hint = hint or "Separate free comments from the header with a blank line."
                self.error(keyword, f"unknown annotation '{keyword.text}'.", hint)
        if self.materialize_line is None:
            hint = f"Add '{MATERIALIZE_FORM}' at the top of the file."
            self.error(Word("", 1, 1), "no '-- materialize' annotation.", hint)
        if self.history is not None and self.partitioned is not None:
            line = lines[self.partitioned.line - 1].strip()
            self.error(
                self.partitioned,
                f"'{self.history.text}' cannot be combined with 'partitioned'.",
                f"SCD2 history is whole-table only; remove '{line}' or drop '{self.history.text}'.",
            )
        header = Header(
            materialize=self.materialize,
            manual=self.manual,
            key_columns=self.key_columns,
            track_columns=self.track_columns,
            partitions=self.partitions,
            partitioned_line=self.partitioned.line if self.partitioned else None,
            data_tests=tuple(self.data_tests),
            upstreams=tuple(self.upstreams.values()),
            arguments=tuple(self.arguments.values()),
            argument_names=frozenset(self.argument_names),
            group=self.group.text if self.group else None,
            owners=tuple(self.owners),
            tags=tuple((k, v) for k, (v, _) in self.tags.items()),
            description=" ".join(self.description) or None,
            kinds=tuple(self.kinds),
            body_start=length + 1,
        )
        return header, self.diagnostics

    # -- materialize ------------------------------------------------------------------

    def _materialize(self, keyword: Word, rest: list[Word], raw: str) -> None:
        if self.materialize_line is not None:
            self.error(
                keyword,
                "more than one '-- materialize' annotation.",
                f"The first is on line {self.materialize_line}; a file produces exactly one table.",
            )
            return
        self.materialize_line = keyword.line
        words = list(rest)
        if words and words[0].text in ("manual", "scd2"):
            lead = words.pop(0)
            if lead.text == "manual":
                self.manual = True
            else:
                self.history = lead
            if words and words[0].text in ("manual", "scd2"):
                other = words.pop(0)
                self.error(
                    other,
                    f"'{lead.text}' cannot be combined with '{other.text}'.",
                    "Keep one of them before the table URI.",
                )
                self.manual = True
        if not words:
            self.error(keyword, "'-- materialize' needs a table URI.", f"Write '{MATERIALIZE_FORM}'.")
            return
        uri = self._uri(words[0], target=True)
        options: dict[str, Word] = {}
        for word in words[1:]:
            name = _option_name(word.text)
            if name in options:
                self.error(word, f"option '{name}' is given twice.", f"Keep one '{name}'.")
                continue
            options[name] = word
            if name == "key=":
                self.key_columns = self._key(word)
            elif name == "history":
                if self.history is not None:
                    self.error(word, f"'history' repeats '{self.history.text}'.", "Keep one of them.")
                else:
                    self.history = word
            elif name == "track=":
                self.track_columns = self._columns(word, "track")
            elif name == "deletes=":
                value = word.text[len("deletes=") :]
                if value != "close":
                    self.error(
                        word,
                        f"unknown deletes= value '{value}'.",
                        "Write 'deletes=close' to close absent keys; without it they stay current.",
                    )
            elif name in LATER_OPTIONS:
                self._later_option(word, name)
            elif name == "manual":
                self.error(
                    word,
                    "'manual' must come before the table URI.",
                    "Write '-- materialize manual delta://<schema>/<table>'.",
                )
            elif name != "append":
                hint = did_you_mean(name, MATERIALIZE_OPTIONS).strip()
                self.error(
                    word, f"unknown option '{word.text}'.", hint or "Options are 'append' and 'key=<c1,c2>'."
                )
        history_problem = self._check_history(keyword, options)
        if self.manual:
            for name in ("append", "key=", "history", *HISTORY_OPTIONS):
                if name in options:
                    self.error(
                        options[name],
                        f"'manual' cannot be combined with '{name}'.",
                        f"A manual script writes its own table; remove '{options[name].text}' or 'manual'.",
                    )
        if uri is None:
            return
        track: tuple[str, ...] = ()
        if self.manual:
            strategy, key = WriteStrategy.MANUAL, ()
        elif self.history is not None and not history_problem:
            strategy, key = WriteStrategy.HISTORY, tuple(w.text for w in self.key_columns)
            track = tuple(w.text for w in self.track_columns)
        elif "append" in options:  # append wins over key= (Windmill semantics)
            strategy, key = WriteStrategy.APPEND, ()
        elif "key=" in options:
            strategy, key = WriteStrategy.MERGE, tuple(w.text for w in self.key_columns)
        else:
            strategy, key = WriteStrategy.REPLACE, ()
        if strategy not in (WriteStrategy.MERGE, WriteStrategy.HISTORY):
            self.key_columns = ()
        if strategy is not WriteStrategy.HISTORY:
            self.track_columns = ()
        location = self.src.location(words[0].line, words[0].col)
        self.materialize = MaterializeSpec(
            uri,
            strategy,
            key,
            track=track,
            close_deletes=strategy is WriteStrategy.HISTORY and "deletes=" in options,
            location=location,
        )

    def _check_history(self, keyword: Word, options: dict[str, Word]) -> bool:
        """The SCD2 option rules; whether any was broken."""
        before = len(self.diagnostics)
        history = self.history
        if history is None:
            for name in HISTORY_OPTIONS:
                if name in options:
                    self.error(
                        options[name],
                        f"'{name}' needs 'history'.",
                        f"It is an SCD2 history option; add 'history' after 'key=<c1,c2>' or remove "
                        f"'{options[name].text}'.",
                    )
            return len(self.diagnostics) > before
        if self.manual:
            return True  # reported with the other 'manual' conflicts
        if "key=" not in options:
            self.error(
                history,
                f"'{history.text}' needs 'key=<c1,c2>'.",
                "The key identifies an entity across its versions; add e.g. 'key=id'.",
            )
        if "append" in options:
            self.error(
                options["append"],
                f"'{history.text}' cannot be combined with 'append'.",
                f"History keeps versions itself; remove 'append' or '{history.text}'.",
            )
        keys = {w.text.lower() for w in self.key_columns}
        for column in self.track_columns:
            if column.text.lower() in keys:
                self.error(
                    column,
                    f"track column '{column.text}' is a key column.",
                    "The key identifies the entity and never changes; track only non-key columns.",
                )
        return len(self.diagnostics) > before

    def _key(self, word: Word) -> tuple[Word, ...]:
        return self._columns(word, "key")

    def _columns(self, word: Word, option: str) -> tuple[Word, ...]:
        prefix = f"{option}="
        columns, seen, col = [], set(), word.col + len(prefix)
        names = word.text[len(prefix) :].split(",")
        if not all(names):
            hint = f"Write '{option}=<c1,c2>' without spaces."
            self.error(word, f"'{word.text}' has an empty column name.", hint)
            return ()
        for name in names:
            column = Word(name, word.line, col)
            col += len(name) + 1
            if not is_identifier(name):
                self.error(column, f"{option} column '{name}' is not an allowed identifier.", _IDENTIFIER_HINT)
            elif name.lower() in seen:
                self.error(column, f"{option} column '{name}' is listed twice.", "Remove the repeated column.")
            else:
                seen.add(name.lower())
                columns.append(column)
        return tuple(columns)

    def _later_option(self, word: Word, name: str) -> None:
        self.error(
            word,
            f"{name} is not supported yet.",
            f"Remove '{word.text}'; it arrives with {LATER_OPTIONS[name]} support.",
        )

    # -- data_test ---------------------------------------------------------------------------

    def _data_test(self, keyword: Word, rest: list[Word], raw: str) -> None:
        words = list(rest)
        blocking = True
        if words and words[-1].text == "warn":
            blocking = False
            words.pop()
        if not words:
            self.error(keyword, "'-- data_test' needs a test.", f"Write '{DATA_TEST_FORM}'.")
            return
        head, args = words[0], words[1:]
        location = self.src.location(head.line, head.col)
        test: Optional[DataTestSpec] = None
        if head.text.endswith(".sql"):
            if args:
                self.error(args[0], f"unexpected '{args[0].text}' after the test file.", "Write '-- data_test <path.sql> [warn]'.")
                return
            test = DataTestSpec(DataTestKind.CUSTOM, path=head.text, blocking=blocking, location=location)
        elif head.text not in DATA_TEST_KINDS:
            hint = did_you_mean(head.text, DATA_TEST_KINDS).strip()
            self.error(head, f"unknown data test '{head.text}'.", hint or f"Write '{DATA_TEST_FORM}'.")
            return
        else:
            kind = DataTestKind(head.text)
            test = self._builtin_test(kind, head, args, raw, blocking)
        if test is None:
            return
        if any(t.name == test.name for t in self.data_tests):
            self.error(head, f"data test '{test.name}' is declared twice.", "Remove the repeated line.")
            return
        self.data_tests.append(test)

    def _builtin_test(
        self, kind: DataTestKind, head: Word, args: list[Word], raw: str, blocking: bool
    ) -> Optional[DataTestSpec]:
        form = DATA_TEST_FORMS[kind]
        if not args:
            self.error(head, f"'{kind.value}' needs a column.", f"Write '-- data_test {form}'.")
            return None
        column_word = args[0]
        names = column_word.text.split(",") if kind is DataTestKind.UNIQUE else [column_word.text]
        if not all(is_identifier(n) for n in names):
            self.error(column_word, f"column '{column_word.text}' is not an allowed identifier.", _IDENTIFIER_HINT)
            return None
        location = self.src.location(column_word.line, column_word.col)
        columns = tuple(names)
        if kind in (DataTestKind.UNIQUE, DataTestKind.NOT_NULL):
            if len(args) > 1:
                self.error(args[1], f"unexpected '{args[1].text}'.", f"Write '-- data_test {form} [warn]'.")
                return None
            return DataTestSpec(kind, columns, blocking=blocking, location=location)
        if kind is DataTestKind.ACCEPTED_VALUES:
            if len(args) < 2 or args[1].text != "=" or len(args) < 3:
                self.error(args[1] if len(args) > 1 else column_word, "accepted_values needs '= a,b,c'.", f"Write '-- data_test {form}'.")
                return None
            first = args[2]
            text = raw[first.col - 1 : args[-1].col - 1 + len(args[-1].text)]
            values = [_unquote(item.text) for item in _comma_items(text, first)]
            if not all(values):
                self.error(first, "empty value in the list.", f"Write '-- data_test {form}'.")
                return None
            return DataTestSpec(kind, columns, values=tuple(values), blocking=blocking, location=location)
        # relationships <col> -> delta://s/t.c
        if len(args) != 3 or args[1].text != "->" or "." not in args[2].text:
            word = args[1] if len(args) > 1 else column_word
            self.error(word, "relationships needs '-> delta://<schema>/<table>.<column>'.", f"Write '-- data_test {form}'.")
            return None
        ref_text, _, ref_column = args[2].text.rpartition(".")
        uri = self._uri(Word(ref_text, args[2].line, args[2].col), target=False)
        if uri is None:
            return None
        if not is_identifier(ref_column):
            self.error(args[2], f"referenced column '{ref_column}' is not an allowed identifier.", _IDENTIFIER_HINT)
            return None
        return DataTestSpec(kind, columns, ref_uri=uri, ref_column=ref_column, blocking=blocking, location=location)

    # -- partitioned ------------------------------------------------------------------------

    def _partitioned(self, keyword: Word, rest: list[Word], raw: str) -> None:
        if self.partitioned is not None:
            self.error(
                keyword,
                f"partitions are already declared on line {self.partitioned.line}.",
                "A table has one partitioning; keep one '-- partitioned' line.",
            )
            return
        self.partitioned = keyword
        if not rest:
            self.error(keyword, "'-- partitioned' needs a kind.", f"Write '{PARTITIONED_FORM}'.")
            return
        kind_word = rest[0]
        try:
            kind = PartitionKind(kind_word.text)
        except ValueError:
            hint = did_you_mean(kind_word.text, [k.value for k in PartitionKind]).strip()
            kinds = ", ".join(k.value for k in PartitionKind)
            self.error(kind_word, f"unknown partition kind '{kind_word.text}'.", hint or f"Kinds are: {kinds}.")
            return
        location = self.src.location(keyword.line, keyword.col)
        words = rest[1:]
        batch = DEFAULT_BACKFILL_BATCH
        if words and words[-1].text.startswith("batch="):
            batch_word = words.pop()
            parsed = self._batch(batch_word)
            if parsed is None:
                return
            batch = parsed
        if kind is PartitionKind.STATIC:
            values = self._static_values(kind_word, raw, words)
            if values:
                self.partitions = PartitionSpec(kind, values=values, batch_size=batch, location=location)
        elif kind is PartitionKind.DYNAMIC:
            if len(words) != 1 or not is_identifier(words[0].text):
                word = words[1] if len(words) > 1 else (words[0] if words else kind_word)
                self.error(
                    word,
                    "'partitioned dynamic' needs one name.",
                    "Write '-- partitioned dynamic <name>' with letters, digits and '_'.",
                )
                return
            self.partitions = PartitionSpec(kind, name=words[0].text, batch_size=batch, location=location)
        else:
            self._time_window(keyword, kind, words, batch, location)

    def _batch(self, word: Word) -> Optional[int]:
        text = word.text[len("batch=") :]
        if not text.isdigit() or not 1 <= int(text) <= MAX_BACKFILL_BATCH:
            self.error(
                word,
                f"batch= must be a whole number from 1 to {MAX_BACKFILL_BATCH}, got '{text}'.",
                f"It is how many partitions one backfill run writes in one commit (default {DEFAULT_BACKFILL_BATCH}).",
            )
            return None
        return int(text)

    def _static_values(self, kind_word: Word, raw: str, words: list[Word]) -> tuple[str, ...]:
        if not words:
            self.error(kind_word, "'partitioned static' needs partition keys.", "Write '-- partitioned static a,b,c'.")
            return ()
        first = words[0]
        text = raw[first.col - 1 : words[-1].col - 1 + len(words[-1].text)]
        values: list[str] = []
        for item in _comma_items(text, first):
            if not item.text:
                self.error(item, "empty partition key in the list.", "Write '-- partitioned static a,b,c'.", span=1)
            elif "..." in item.text or "|" in item.text or "[" in item.text or "]" in item.text:
                self.error(
                    item,
                    f"partition key '{item.text}' contains '...', '|', '[' or ']'.",
                    "Dagster reserves them (ranges and multi-partition keys); choose another key.",
                )
            elif item.text in values:
                self.error(item, f"partition key '{item.text}' is listed twice.", "Remove the repeated key.")
            else:
                values.append(item.text)
        return tuple(values) if len(values) == len(_comma_items(text, first)) else ()

    def _time_window(
        self, keyword: Word, kind: PartitionKind, words: list[Word], batch: int, location: Any
    ) -> None:
        options: dict[str, Word] = {}
        for word in words:
            name = _option_name(word.text)
            if name not in TIME_WINDOW_OPTIONS:
                hint = did_you_mean(name, TIME_WINDOW_OPTIONS).strip()
                self.error(word, f"unknown option '{word.text}'.", hint or f"Write '{PARTITIONED_FORM}'.")
                return
            if name in options or name == "batch=":
                self.error(word, f"option '{name}' is given twice or out of place.", "Put each option once; 'batch=' last.")
                return
            options[name] = word
        if "start=" not in options:
            self.error(
                keyword,
                f"'partitioned {kind.value}' needs start=.",
                "Add the first partition's date, e.g. 'start=2024-01-01'.",
                span=len("partitioned"),
            )
            return
        start = self._datetime_option(options["start="])
        end = self._datetime_option(options["end="]) if "end=" in options else None
        tz = options["tz="].text[len("tz=") :] if "tz=" in options else None
        if tz is not None and not _is_timezone(tz):
            self.error(options["tz="], f"unknown time zone '{tz}'.", "Use an IANA name, e.g. 'tz=Europe/Berlin' or 'tz=UTC'.")
            return
        if start is None or ("end=" in options and end is None):
            return
        if end is not None and end <= start:
            self.error(options["end="], "end= must be after start=.", "end= is exclusive: the first instant not covered.")
            return
        self.partitions = PartitionSpec(
            kind,
            start=options["start="].text[len("start=") :],
            end=options["end="].text[len("end=") :] if end is not None else None,
            timezone=tz,
            batch_size=batch,
            location=location,
        )

    def _datetime_option(self, word: Word) -> Optional[dt.datetime]:
        name, _, text = word.text.partition("=")
        try:
            return parse_partition_datetime(text)
        except ValueError:
            self.error(
                word,
                f"{name}= '{text}' is not a date.",
                f"Write {name}=YYYY-MM-DD, or {name}=YYYY-MM-DDTHH:MM for an hour.",
            )
            return None

    def _uri(self, word: Word, *, target: bool) -> Optional[TableUri]:
        text = word.text
        if not text.startswith(URI_SCHEME):
            self.error(word, f"unsupported table URI '{text}'.", "Write 'delta://<schema>/<table>'.")
            return None
        segments = text[len(URI_SCHEME) :].split("/")
        if len(segments) != 2 or not all(segments):
            self.error(
                word,
                f"table URI '{text}' is not 'delta://<schema>/<table>'.",
                "Use exactly two segments, the schema and the table.",
            )
            return None
        col = word.col + len(URI_SCHEME)
        for segment in segments:
            if not is_identifier(segment):
                self.error(
                    Word(segment, word.line, col),
                    f"'{segment}' in '{text}' is not an allowed identifier.",
                    _IDENTIFIER_HINT,
                )
                return None
            col += len(segment) + 1
        table = segments[1]
        if target and table.lower().endswith(RESERVED_TABLE_SUFFIX):
            self.error(
                Word(table, word.line, col - len(table) - 1),
                f"table name '{table}' ends in '{RESERVED_TABLE_SUFFIX}', which is reserved.",
                "The suffix names the SCD2 companion view; choose another table name.",
            )
            return None
        try:
            return TableUri.parse(text)
        except ValueError as err:  # unreachable after the checks above; kept as a safety net
            self.error(word, f"invalid table URI '{text}': {err}.")
            return None

    # -- on / $arguments -----------------------------------------------------------------

    def _on(self, keyword: Word, rest: list[Word], raw: str) -> None:
        if not rest:
            self.error(keyword, "'-- on' needs a table URI.", "Write '-- on delta://<schema>/<table>'.")
            return
        uri = self._uri(rest[0], target=False)
        window = None
        for word in rest[1:]:
            if word.text.startswith("window=") and window is None:
                window = self._window(word)
                if window is None:
                    return
            else:
                hint = did_you_mean(_option_name(word.text), ["window="]).strip()
                self.error(
                    word, f"unknown option '{word.text}'.", hint or "Declare one table per '-- on' line."
                )
        if uri is None:
            return
        if uri in self.upstreams:
            first = self.upstreams[uri].location
            message = f"'{uri}' is already declared on line {first.line}."
            self.error(rest[0], message, "Remove the repeated line.")
            return
        location = self.src.location(rest[0].line, rest[0].col)
        self.upstreams[uri] = UpstreamSpec(uri, declared=True, window=window, location=location)

    def _window(self, word: Word) -> Optional[WindowSpec]:
        text = word.text[len("window=") :]
        match = re.fullmatch(r"(\d+)([a-z]+)", text)
        if match is None or match.group(2) not in WINDOW_UNITS or int(match.group(1)) < 1:
            units = ", ".join(f"{u} ({k.value})" for u, k in WINDOW_UNITS.items())
            self.error(word, f"window '{text}' is not <count><unit>.", f"Write e.g. 'window=7d'; units: {units}.")
            return None
        return WindowSpec(int(match.group(1)), WINDOW_UNITS[match.group(2)])

    def _argument(self, keyword: Word, raw: str) -> None:
        name_match = re.compile(r"[^\s(=]*").match(raw, keyword.col)  # just past '$'
        name = name_match.group()
        name_word = Word(name, keyword.line, keyword.col + 1)
        if not name:
            self.error(keyword, "'$' needs an argument name.", "Write '-- $<name> (<type>) [= <default>]'.")
            return
        if not is_identifier(name):
            self.error(name_word, f"argument name '{name}' is not an allowed identifier.", _IDENTIFIER_HINT)
            return
        self.argument_names.add(name)
        pos = _skip_spaces(raw, name_match.end())
        if raw[pos : pos + 1] != "(" or ")" not in raw[pos:]:
            self.error(
                Word(raw[pos:].strip() or " ", keyword.line, pos + 1),
                f"argument '${name}' needs a type in parentheses.",
                f"Write '-- ${name} (<type>) [= <default>]' with a type among: {_TYPE_LIST}.",
            )
            return
        close = raw.index(")", pos)
        type_text = raw[pos + 1 : close].strip()
        type_word = Word(type_text, keyword.line, _skip_spaces(raw, pos + 1) + 1)
        type_ = ARGUMENT_TYPES.get(type_text.lower())
        if type_ is None:
            hint = did_you_mean(type_text.lower(), ARGUMENT_TYPES).strip()
            self.error(
                type_word,
                f"unknown argument type '{type_text}'.",
                hint or f"Types are: {_TYPE_LIST}.",
                span=max(1, len(type_text)),
            )
        pos = _skip_spaces(raw, close + 1)
        default, has_default = None, False
        if raw[pos:].strip():
            if raw[pos] != "=":
                self.error(
                    Word(raw[pos:].rstrip(), keyword.line, pos + 1),
                    f"unexpected '{raw[pos:].rstrip()}' after the type.",
                    "Write '= <default>' to give a default value.",
                )
                return
            start = _skip_spaces(raw, pos + 1)
            default_word = Word(raw[start:].rstrip(), keyword.line, start + 1)
            if not default_word.text:
                self.error(
                    Word("=", keyword.line, pos + 1),
                    f"argument '${name}' has '=' but no default.",
                    "Write a value after '=', or remove '='.",
                )
                return
            if type_ is not None:
                try:
                    default, has_default = convert_value(default_word.text, type_), True
                except ValueError as err:
                    message = f"default '{default_word.text}' is not a valid {type_.value}."
                    self.error(default_word, message, str(err))
                    return
        if type_ is None:
            return
        if name in self.arguments:
            first = self.arguments[name].location
            hint = f"The first declaration is on line {first.line}; remove one."
            self.error(name_word, f"argument '${name}' is declared twice.", hint)
            return
        location = self.src.location(keyword.line, keyword.col)
        self.arguments[name] = ArgumentSpec(name, type_, default, has_default, location=location)

    # -- catalog attributes ----------------------------------------------------------------

    def _needs_value(self, keyword: Word, rest: list[Word], form: str) -> bool:
        if rest:
            return True
        self.error(keyword, f"'-- {keyword.text}' needs a value.", f"Write '-- {keyword.text} {form}'.")
        return False

    def _group(self, keyword: Word, rest: list[Word], raw: str) -> None:
        if not self._needs_value(keyword, rest, "<name>"):
            return
        group = Word(raw[rest[0].col - 1 :].rstrip(), rest[0].line, rest[0].col)
        if self.group is not None:
            hint = "An asset belongs to one group; keep one '-- group' line."
            self.error(keyword, f"group is already set on line {self.group.line}.", hint)
        elif not VALID_GROUP_NAME_REGEX.match(group.text):
            self.error(
                group,
                f"group '{group.text}' is not a valid group name.",
                "Use letters, digits and underscores, with '/' between segments.",
            )
        else:
            self.group = group

    def _owner(self, keyword: Word, rest: list[Word], raw: str) -> None:
        if not self._needs_value(keyword, rest, "<email or team:name>"):
            return
        owner = rest[0]
        if len(rest) > 1:
            self.error(rest[1], "'-- owner' takes one owner per line.", "Repeat '-- owner' for each owner.")
        elif not is_valid_owner(owner.text):
            self.error(
                owner,
                f"owner '{owner.text}' is not an email address or 'team:<name>'.",
                "Write e.g. '-- owner alice@example.com' or '-- owner team:data-eng'.",
            )
        elif owner.text in self.owners:
            self.error(owner, f"owner '{owner.text}' is listed twice.", "Remove the repeated owner.")
        else:
            self.owners[owner.text] = owner

    def _tags(self, keyword: Word, rest: list[Word], raw: str) -> None:
        if not self._needs_value(keyword, rest, "<k=v,k2=v2>"):
            return
        for item in _comma_items(raw[rest[0].col - 1 :].rstrip(), rest[0]):
            key, eq, value = item.text.partition("=")
            if not item.text:
                self.error(item, "empty tag in the list.", "Write 'tags k=v,k2=v2'.", span=1)
            elif not eq:
                self.error(item, f"tag '{item.text}' has no value.", "Write 'key=value'.")
            elif not is_valid_tag_key(key):
                self.error(item, f"tag key '{key}' is not valid.", _TAG_HINT, span=max(1, len(key)))
            elif not is_valid_strict_tag_value(value):
                value_word = Word(value, item.line, item.col + len(key) + 1)
                self.error(value_word, f"tag value '{value}' is not valid.", _TAG_HINT)
            elif key in self.tags:
                message = f"tag '{key}' is already set on line {self.tags[key][1].line}."
                self.error(Word(key, item.line, item.col), message, "Keep one value per tag key.")
            else:
                self.tags[key] = (value, item)

    def _description(self, keyword: Word, rest: list[Word], raw: str) -> None:
        if self._needs_value(keyword, rest, "<text>"):
            self.description.append(raw[rest[0].col - 1 :].strip())

    def _kinds(self, keyword: Word, rest: list[Word], raw: str) -> None:
        if not self._needs_value(keyword, rest, "<kind1,kind2>"):
            return
        for item in _comma_items(raw[rest[0].col - 1 :].rstrip(), rest[0]):
            if not item.text:
                self.error(item, "empty kind in the list.", "Write 'kinds a,b'.", span=1)
            elif not is_valid_tag_key(KIND_PREFIX + item.text):
                self.error(item, f"kind '{item.text}' is not valid.", _TAG_HINT)
            elif item.text in self.kinds:
                self.error(item, f"kind '{item.text}' is listed twice.", "Remove the repeated kind.")
            else:
                self.kinds[item.text] = item


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _is_timezone(name: str) -> bool:
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _option_name(text: str) -> str:
    """``key=a,b`` → ``key=``; ``append`` → ``append``."""
    return text.split("=", 1)[0] + "=" if "=" in text else text


def _skip_spaces(raw: str, pos: int) -> int:
    while pos < len(raw) and raw[pos] in " \t":
        pos += 1
    return pos
