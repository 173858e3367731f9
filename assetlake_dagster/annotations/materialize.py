"""``-- materialize [manual|scd2] delta://<schema>/<table> [options]``: the target and its strategy.

Options: ``append``, ``key=<c1,c2>`` (merge) with ``update=<c1,c2>`` or ``keep=<c1,c2>``,
``within="<predicate>"`` and ``deletes=delete``, ``history`` with ``track=``, ``deletes=close`` and
``valid_from=<column>`` (SCD2). One line per file; a file without one is an error.
"""

from typing import Optional

from assetlake_dagster.annotations.header import (
    IDENTIFIER_HINT,
    HeaderDraft,
    Word,
    option_name,
    parse_uri,
    split_quoted_words,
)
from assetlake_dagster.errors import did_you_mean
from assetlake_dagster.spec import MaterializeSpec, MergeOptions, WriteStrategy, is_identifier
from assetlake_dagster.sql.target_predicate import TargetPredicate

MATERIALIZE_FORM = "-- materialize delta://<schema>/<table> [append] [key=<c1,c2>]"
HISTORY_FORM = (
    "-- materialize delta://<schema>/<table> key=<c1,c2> history [track=<c1,c2>] [deletes=close] [valid_from=<column>]"
)
MERGE_FORM = (
    '-- materialize delta://<schema>/<table> key=<c1,c2> [update=<c1,c2> | keep=<c1,c2>] [within="<predicate>"] '
    "[deletes=delete]"
)
#: Options of the materialize line, for did-you-mean.
MATERIALIZE_OPTIONS = (
    "append", "new_rows", "key=", "history", "track=", "deletes=", "valid_from=", "update=", "keep=", "within="
)
#: Options that only mean something with ``history``.
HISTORY_OPTIONS = ("track=", "valid_from=")
#: What ``deletes=`` does to a key the SELECT no longer returns: a merge deletes it, a
#: history closes its current version.
DELETES_VALUES = {"delete": "merge", "close": "history"}
#: Options that only mean something for a merge (``key=`` without ``history``).
MERGE_OPTIONS = ("update=", "keep=", "within=")
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
    if words and words[0].text in ("manual", "scd2"):
        lead = words.pop(0)
        if lead.text == "manual":
            draft.manual = True
        else:
            draft.history = lead
        if words and words[0].text in ("manual", "scd2"):
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
    history_problem = _check_history(draft, keyword, options)
    merge_problem = _check_merge_options(draft, options, merge_columns)
    deletes_problem = _check_deletes(draft, options)
    if "new_rows" in options and "append" not in options and not draft.manual:
        draft.error(
            options["new_rows"],
            "'new_rows' needs 'append'.",
            "It appends the SELECT over the rows the upstream gained since the last run: write 'append new_rows'.",
        )
    if draft.manual:
        for name in ("append", "new_rows", "key=", "history", "deletes=", *HISTORY_OPTIONS, *MERGE_OPTIONS):
            if name in options:
                draft.error(
                    options[name],
                    f"'manual' cannot be combined with '{name}'.",
                    f"A manual script writes its own table; remove '{options[name].text}' or 'manual'.",
                )
    if uri is None:
        return
    track: tuple[str, ...] = ()
    valid_from: Optional[str] = None
    if draft.manual:
        strategy, key = WriteStrategy.MANUAL, ()
    elif draft.history is not None and not history_problem:
        strategy, key = WriteStrategy.HISTORY, tuple(w.text for w in draft.key_columns)
        track = tuple(w.text for w in draft.track_columns)
        valid_from = draft.valid_from_column.text if draft.valid_from_column else None
    elif "append" in options:  # append wins over key= (Windmill semantics)
        strategy, key = WriteStrategy.APPEND, ()
    elif "key=" in options:
        strategy, key = WriteStrategy.MERGE, tuple(w.text for w in draft.key_columns)
    else:
        strategy, key = WriteStrategy.REPLACE, ()
    if strategy not in (WriteStrategy.MERGE, WriteStrategy.HISTORY):
        draft.key_columns = ()
    if strategy is not WriteStrategy.HISTORY:
        draft.track_columns = ()
        draft.valid_from_column = None
    merge = MergeOptions()
    if strategy is WriteStrategy.MERGE and not merge_problem:
        merge = MergeOptions(
            update=tuple(w.text for w in merge_columns.get("update=", ())),
            keep=tuple(w.text for w in merge_columns.get("keep=", ())),
            within=within.text if within else None,
            deletes="deletes=" in options and not deletes_problem,
        )
        draft.merge_columns = tuple(
            (option[:-1], column) for option, columns in merge_columns.items() for column in columns
        ) + draft.merge_columns
    else:
        draft.merge_columns = ()
    location = draft.src.location(words[0].line, words[0].col)
    draft.materialize = MaterializeSpec(
        uri,
        strategy,
        key,
        track=track,
        close_deletes=strategy is WriteStrategy.HISTORY and "deletes=" in options and not deletes_problem,
        valid_from=valid_from,
        merge=merge,
        location=location,
        new_rows=strategy is WriteStrategy.APPEND and "new_rows" in options,
    )

def check_materialized(draft: HeaderDraft) -> None:
    """A file without a materialize line produces no table: report it at the top of the file."""
    if draft.materialize_line is None:
        hint = f"Add '{MATERIALIZE_FORM}' at the top of the file."
        draft.error(Word("", 1, 1), "no '-- materialize' annotation.", hint)


def _check_history(draft: HeaderDraft, keyword: Word, options: dict[str, Word]) -> bool:
    """The SCD2 option rules; whether any was broken."""
    before = len(draft.diagnostics)
    history = draft.history
    if history is None:
        for name in HISTORY_OPTIONS:
            if name in options:
                draft.error(
                    options[name],
                    f"'{name}' needs 'history'.",
                    f"It is an SCD2 history option; add 'history' after 'key=<c1,c2>' or remove "
                    f"'{options[name].text}'.",
                )
        return len(draft.diagnostics) > before
    if draft.manual:
        return True  # reported with the other 'manual' conflicts
    if "key=" not in options:
        draft.error(
            history,
            f"'{history.text}' needs 'key=<c1,c2>'.",
            "The key identifies an entity across its versions; add e.g. 'key=id'.",
        )
    if "append" in options:
        draft.error(
            options["append"],
            f"'{history.text}' cannot be combined with 'append'.",
            f"History keeps versions itself; remove 'append' or '{history.text}'.",
        )
    keys = {w.text.lower() for w in draft.key_columns}
    for column in draft.track_columns:
        if column.text.lower() in keys:
            draft.error(
                column,
                f"track column '{column.text}' is a key column.",
                "The key identifies the entity and never changes; track only non-key columns.",
            )
    stamp = draft.valid_from_column
    if stamp is not None and stamp.text.lower() in keys:
        draft.error(
            stamp,
            f"valid_from column '{stamp.text}' is a key column.",
            "Name the column holding when the source changed the row, e.g. valid_from=updated_at.",
        )
    return len(draft.diagnostics) > before


def _check_deletes(draft: HeaderDraft, options: dict[str, Word]) -> bool:
    """``deletes=`` rules: ``delete`` on a merge, ``close`` on a history; whether one was broken."""
    word = options.get("deletes=")
    if word is None:
        return False
    if draft.manual:
        return True  # reported with the other 'manual' conflicts
    value = word.text[len("deletes=") :]
    if value not in DELETES_VALUES:
        return True  # reported where it was read
    if "append" in options or "key=" not in options:
        draft.error(
            word,
            f"'{word.text}' needs 'key=<c1,c2>'.",
            f"Deleted keys are a merge's (deletes=delete: {MERGE_FORM}) or a history's (deletes=close: {HISTORY_FORM}).",
        )
        return True
    wanted = "close" if draft.history is not None else "delete"
    if value != wanted:
        if draft.history is not None:
            how = "A history never deletes a version; write 'deletes=close' to close the current version of absent keys"
        else:
            how = "A merge deletes absent keys (there is no version to close); write 'deletes=delete', or add 'history'"
        draft.error(word, f"'{word.text}' does not apply to a {DELETES_VALUES[wanted]}.", how + ".")
        return True
    return False


def _check_merge_options(
    draft: HeaderDraft, options: dict[str, Word], merge_columns: dict[str, tuple[Word, ...]]
) -> bool:
    """The merge option rules (a merge's, one of update=/keep=, no key column); whether any
    was broken."""
    before = len(draft.diagnostics)
    given = [options[name] for name in MERGE_OPTIONS if name in options]
    if draft.manual:
        return bool(given)  # reported with the other 'manual' conflicts
    for word in given:
        name = option_name(word.text)
        if draft.history is not None:
            draft.error(word, f"'{name}' applies to a merge, not to '{draft.history.text}'.",
                        f"History keeps every version of every column; remove '{name}'.", span=len(name))
        elif "append" in options:
            draft.error(word, f"'{name}' applies to a merge, not to 'append'.",
                        f"Remove 'append' to merge on key=, or remove '{name}'.", span=len(name))
        elif "key=" not in options:
            draft.error(word, f"'{name}' needs 'key=<c1,c2>'.",
                        f"It is a merge option: {MERGE_FORM}.", span=len(name))
    if "update=" in options and "keep=" in options:
        draft.error(options["keep="], "'update=' and 'keep=' cannot both be given.",
                    "Name the columns a match updates (update=) or the ones it keeps (keep=), not both.", span=len("keep="))
    keys = {w.text.lower() for w in draft.key_columns}
    for name, columns in merge_columns.items():
        for column in columns:
            if column.text.lower() in keys:
                draft.error(column, f"{name[:-1]} column '{column.text}' is a key column.",
                            "A match is found by the key, which never changes; name only non-key columns.")
    return len(draft.diagnostics) > before


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
