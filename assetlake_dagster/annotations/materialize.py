"""``-- materialize [manual|scd2|view] delta://<schema>/<table> [options]``: the target and its strategy.

Options: ``append``, ``key=<c1,c2>`` (merge) with ``update=<c1,c2>`` or ``keep=<c1,c2>``,
``within="<predicate>"`` and ``deletes=delete``, ``history`` with ``track=``, ``deletes=close``,
``valid_from=<column>`` and ``late=insert`` (SCD2). One line per file; a file without one is an error.

The line's words choose the strategy, and each option's value is read (and its syntax
checked) here; which options a strategy takes and how they combine is checked once, by its
options class in :mod:`assetlake_dagster.spec.write_options`, which ``managed_write`` builds too.
Each problem it finds is reported at the word it is about.
"""

from typing import Any, Optional

from assetlake_dagster.annotations.header import (
    HeaderDraft,
    Word,
    option_name,
    parse_uri,
    split_quoted_words,
)
from assetlake_dagster.spec.names import IDENTIFIER_HINT
from assetlake_dagster.errors import did_you_mean
from assetlake_dagster.spec import WriteStrategy, is_identifier
from assetlake_dagster.spec.write_options import (
    LATE_VALUES,
    HistoryWriteOptions,
    MergeWriteOptions,
    OptionProblem,
    WriteOptionsError,
    materialize_spec,
    write_options,
)
from assetlake_dagster.sql.target_predicate import TargetPredicate

MATERIALIZE_FORM = "-- materialize delta://<schema>/<table> [append] [key=<c1,c2>]"
HISTORY_FORM = (
    "-- materialize delta://<schema>/<table> key=<c1,c2> history [track=<c1,c2>] [deletes=close] "
    "[valid_from=<column> [late=insert]]"
)
MERGE_FORM = (
    '-- materialize delta://<schema>/<table> key=<c1,c2> [update=<c1,c2> | keep=<c1,c2>] [within="<predicate>"] '
    "[deletes=delete]"
)
#: The words that may stand before the table URI, each choosing the strategy.
LEAD_WORDS = ("manual", "scd2", "view")
#: Options of the materialize line, for did-you-mean.
MATERIALIZE_OPTIONS = (
    "append", "new_rows", "key=", "history", "track=", "deletes=", "valid_from=", "late=", "update=", "keep=", "within="
)
#: The history options, whose other tools' names point at the history form.
HISTORY_OPTIONS = ("track=", "valid_from=", "late=")
#: The words ``deletes=`` takes: a merge deletes an absent key, a history closes its current
#: version (which strategy takes which is spec/write_options.py's to check).
DELETES_VALUES = ("delete", "close")
#: Other tools' names for the merge options (dbt's model configs), to point at ours.
OTHER_NAMES = {
    "merge_update_columns=": "update=",
    "merge_exclude_columns=": "keep=",
    "exclude=": "keep=",
    "incremental_predicates=": "within=",
    "predicate=": "within=",
    "predicates=": "within=",
    "where=": "within=",
    # dbt's timestamp strategy, Delta Live Tables' SEQUENCE BY
    "updated_at=": "valid_from=",
    "sequence_by=": "valid_from=",
}
#: Options recognised now but implemented by a later feature (option -> the feature).
LATER_OPTIONS: dict[str, str] = {}


def parse_materialize(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    """Parse a ``-- materialize`` line into ``draft.materialize`` (and its key/track columns)."""
    if draft.materialize_line is not None:
        draft.error(
            keyword,
            "more than one '-- materialize' annotation.",
            f"The first is on line {draft.materialize_line}; a file produces exactly one table.",
        )
        return
    draft.materialize_line = keyword.line
    words = list(rest)
    if words and words[0].text in LEAD_WORDS:
        lead = words.pop(0)
        if lead.text == "manual":
            draft.manual = True
        elif lead.text == "view":
            draft.view = lead
        else:
            draft.history = lead
        if words and words[0].text in LEAD_WORDS:
            other = words.pop(0)
            draft.error(
                other,
                f"'{lead.text}' cannot be combined with '{other.text}'.",
                "Keep one of them before the table URI.",
            )
            draft.manual = True
    if not words:
        draft.error(keyword, "'-- materialize' needs a table URI.", f"Write '{MATERIALIZE_FORM}'.")
        return
    words = [words[0], *split_quoted_words(raw, words[1].col - 1, keyword.line)] if len(words) > 1 else words
    uri = parse_uri(draft, words[0], target=True)
    options: dict[str, Word] = {}
    merge_columns: dict[str, tuple[Word, ...]] = {}
    within: Optional[TargetPredicate] = None
    for word in words[1:]:
        name = option_name(word.text)
        if name in options:
            draft.error(word, f"option '{name}' is given twice.", f"Keep one '{name}'.")
            continue
        options[name] = word
        if name == "key=":
            draft.key_columns = _columns(draft, word, "key")
        elif name == "history":
            if draft.history is not None:
                draft.error(word, f"'history' repeats '{draft.history.text}'.", "Keep one of them.")
            else:
                draft.history = word
        elif name == "track=":
            draft.track_columns = _columns(draft, word, "track")
        elif name == "deletes=":
            value = word.text[len("deletes=") :]
            if value not in DELETES_VALUES:
                draft.error(
                    word,
                    f"unknown deletes= value '{value}'.",
                    "Write 'deletes=delete' on a merge (delete the keys the SELECT no longer returns) or "
                    "'deletes=close' on a history (close their current version); without it they stay.",
                )
        elif name == "valid_from=":
            draft.valid_from_column = _single_column(draft, word, "valid_from")
        elif name == "late=":
            if word.text[len("late="):] not in LATE_VALUES:
                draft.error(
                    word, f"unknown late= value '{word.text[len('late='):]}'.",
                    "Write 'late=insert' (a version earlier than its key's latest is placed among its versions) "
                    "or 'late=refuse' (the default: such a version fails the run).",
                )
        elif name in ("update=", "keep="):
            merge_columns[name] = _columns(draft, word, name[:-1])
        elif name == "within=":
            within = _within(draft, word)
        elif name in OTHER_NAMES:
            ours = OTHER_NAMES[name]
            form = HISTORY_FORM if ours in HISTORY_OPTIONS else MERGE_FORM
            draft.error(word, f"unknown option '{name}'.", f"Write '{ours}' (the same thing here): {form}.")
        elif name in LATER_OPTIONS:
            _later_option(draft, word, name)
        elif name == "manual":
            draft.error(
                word,
                "'manual' must come before the table URI.",
                "Write '-- materialize manual delta://<schema>/<table>'.",
            )
        elif name not in ("append", "new_rows"):
            hint = did_you_mean(name, MATERIALIZE_OPTIONS).strip()
            draft.error(
                word, f"unknown option '{word.text}'.", hint or "Options are 'append' and 'key=<c1,c2>'."
            )
    strategy = _strategy(draft, options)
    given = _given_options(draft, options, strategy, merge_columns, within)
    try:
        written = write_options(strategy, **given)
    except WriteOptionsError as err:
        for problem in err.problems:
            if problem.option == "key" and not given["key"] and "key=" in options:
                continue  # key= was given, and its columns' problems reported where it was read
            draft.error(_problem_word(draft, keyword, options, merge_columns, problem), problem.message, problem.hint)
        # The file does not load; the rest of its checks see the strategy with its key only.
        written = _without_options(strategy, given)
    if not isinstance(written, (MergeWriteOptions, HistoryWriteOptions)):
        draft.key_columns = ()
    if not isinstance(written, HistoryWriteOptions) or not written.track:
        draft.track_columns = ()
    if not isinstance(written, HistoryWriteOptions) or written.valid_from is None:
        draft.valid_from_column = None
    if isinstance(written, MergeWriteOptions) and (written.update or written.keep or written.within):
        draft.merge_columns = tuple(
            (option[:-1], column) for option, columns in merge_columns.items() for column in columns
        ) + draft.merge_columns
    else:
        draft.merge_columns = ()
    if uri is not None:
        draft.materialize = materialize_spec(uri, written, draft.src.location(words[0].line, words[0].col))


def _strategy(draft: HeaderDraft, options: dict[str, Word]) -> WriteStrategy:
    """The strategy the line's words choose; two strategy words together are reported here."""
    if draft.view is not None and not draft.manual:
        _refuse_strategy_words(draft, options, "view", "A view writes no data; remove '{text}', or 'view' to write a table.")
        return WriteStrategy.VIEW
    if draft.manual:
        _refuse_strategy_words(draft, options, "manual", "A manual script writes its own table; remove '{text}' or 'manual'.")
        return WriteStrategy.MANUAL
    if draft.history is not None:
        if "append" in options:
            draft.error(
                options["append"],
                f"'{draft.history.text}' cannot be combined with 'append'.",
                f"History keeps versions itself; remove 'append' or '{draft.history.text}'.",
            )
        return WriteStrategy.HISTORY
    if "append" in options:  # append wins over key= (Windmill semantics)
        return WriteStrategy.APPEND
    return WriteStrategy.MERGE if "key=" in options else WriteStrategy.REPLACE


def _refuse_strategy_words(draft: HeaderDraft, options: dict[str, Word], lead: str, hint: str) -> None:
    """Report 'append' or 'history' beside the lead word ``lead`` (``manual``, ``view``) that
    chose the strategy already; ``hint`` names the word as ``{text}``."""
    for name in ("append", "history"):
        if name in options:
            draft.error(options[name], f"'{lead}' cannot be combined with '{name}'.", hint.format(text=options[name].text))


def _given_options(
    draft: HeaderDraft,
    options: dict[str, Word],
    strategy: WriteStrategy,
    merge_columns: dict[str, tuple[Word, ...]],
    within: Optional[TargetPredicate],
) -> dict[str, Any]:
    """The options the line gives, by field name, each read already (a value whose syntax
    was wrong is left out: it was reported where it was read)."""
    deletes = options.get("deletes=")
    deletes_value = deletes.text[len("deletes="):] if deletes is not None else None
    late = options.get("late=")
    late_value = late.text[len("late="):] if late is not None else None
    return {
        # Under 'append', key= says nothing (append wins); so does 'history' under 'manual'.
        "key": () if strategy is WriteStrategy.APPEND else tuple(w.text for w in draft.key_columns),
        "track": tuple(w.text for w in draft.track_columns),
        "valid_from": draft.valid_from_column.text if draft.valid_from_column else None,
        "deletes": deletes_value if deletes_value in DELETES_VALUES else None,
        "update": tuple(w.text for w in merge_columns.get("update=", ())),
        "keep": tuple(w.text for w in merge_columns.get("keep=", ())),
        "within": within.text if within else None,
        "new_rows": "new_rows" in options,
        "late": late_value if late_value in LATE_VALUES else None,
    }


def _problem_word(
    draft: HeaderDraft,
    keyword: Word,
    options: dict[str, Word],
    merge_columns: dict[str, tuple[Word, ...]],
    problem: OptionProblem,
) -> Word:
    """The word a problem is about: its column, else its option, else the strategy's word."""
    if problem.column is not None:
        columns = {
            "key": draft.key_columns,
            "track": draft.track_columns,
            "valid_from": (draft.valid_from_column,) if draft.valid_from_column else (),
            **{name[:-1]: words for name, words in merge_columns.items()},
        }.get(problem.option, ())
        for word in columns:
            if word.text == problem.column:
                return word
    option = options.get(problem.option) or options.get(f"{problem.option}=")
    return option or draft.history or keyword


def _without_options(strategy: WriteStrategy, given: dict[str, Any]):
    """The strategy with its key only, or a replace when that is not valid either."""
    try:
        return write_options(strategy, key=given["key"]) if given["key"] else write_options(strategy)
    except WriteOptionsError:
        return write_options(WriteStrategy.REPLACE)


def check_materialized(draft: HeaderDraft) -> None:
    """A file without a materialize line produces no table: report it at the top of the file."""
    if draft.materialize_line is None:
        hint = f"Add '{MATERIALIZE_FORM}' at the top of the file."
        draft.error(Word("", 1, 1), "no '-- materialize' annotation.", hint)


def _within(draft: HeaderDraft, word: Word) -> Optional[TargetPredicate]:
    """The ``within=`` predicate, its columns added to ``draft.merge_columns`` with their positions."""
    value = word.text[len("within=") :]
    col = word.col + len("within=")
    if value.startswith('"'):
        if len(value) < 2 or not value.endswith('"'):
            draft.error(word, "the within= predicate has no closing '\"'.", 'Write within="<predicate>", e.g. within="order_date >= date_sub(current_date(), 7)".')
            return None
        value, col = value[1:-1], col + 1
    if '"' in value:
        draft.error(word, "the within= predicate holds a double quote.", "Quote strings in it with single quotes: status = 'open'.")
        return None
    try:
        predicate = TargetPredicate.parse(value)
    except ValueError as problem:
        draft.error(word, f"within= predicate '{value}': {problem}.",
                    'Write one condition on the table\'s columns, e.g. within="order_date >= date_sub(current_date(), 7)".')
        return None
    draft.merge_columns += tuple(
        ("within", Word(name, word.line, col + start)) for name, start in predicate.column_starts
    )
    return predicate


def _columns(draft: HeaderDraft, word: Word, option: str) -> tuple[Word, ...]:
    prefix = f"{option}="
    columns, seen, col = [], set(), word.col + len(prefix)
    names = word.text[len(prefix) :].split(",")
    if not all(names):
        hint = f"Write '{option}=<c1,c2>' without spaces."
        draft.error(word, f"'{word.text}' has an empty column name.", hint)
        return ()
    for name in names:
        column = Word(name, word.line, col)
        col += len(name) + 1
        if not is_identifier(name):
            draft.error(column, f"{option} column '{name}' is not an allowed identifier.", IDENTIFIER_HINT)
        elif name.lower() in seen:
            draft.error(column, f"{option} column '{name}' is listed twice.", "Remove the repeated column.")
        else:
            seen.add(name.lower())
            columns.append(column)
    return tuple(columns)


def _single_column(draft: HeaderDraft, word: Word, option: str) -> Optional[Word]:
    """The one column an option such as ``valid_from=<column>`` names, with its position."""
    name = word.text[len(option) + 1 :]
    column = Word(name, word.line, word.col + len(option) + 1)
    if not name:
        draft.error(word, f"'{word.text}' names no column.", f"Write '{option}=<column>', e.g. {option}=updated_at.")
    elif "," in name:
        draft.error(column, f"{option}= takes one column, not '{name}'.", f"Write '{option}=<column>'.")
    elif not is_identifier(name):
        draft.error(column, f"{option} column '{name}' is not an allowed identifier.", IDENTIFIER_HINT)
    else:
        return column
    return None


def _later_option(draft: HeaderDraft, word: Word, name: str) -> None:
    draft.error(
        word,
        f"{name} is not supported yet.",
        f"Remove '{word.text}'; it arrives with {LATER_OPTIONS[name]} support.",
    )
