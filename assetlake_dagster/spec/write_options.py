"""A managed write's options: one typed object per strategy.

Each class's constructor is the one place where the combinations of its options are checked,
and :func:`write_options` is the one place where an option given to a strategy that does not
take it is refused (which strategy takes which option is read from the classes' fields). The
``-- materialize`` grammar and ``managed_write`` both build their options here: the grammar
reports each :class:`OptionProblem` at the word it is about, ``managed_write`` raises the
:class:`WriteOptionsError`. What is checked before, where the value is read, is its syntax: an
identifier, a ``deletes=`` word, a ``within=`` predicate.

Example:
    >>> write_options(WriteStrategy.MERGE, key=("id",), keep=("created_at",))
    MergeWriteOptions(key=('id',), update=(), keep=('created_at',), within=None, deletes=None)
    >>> write_options(WriteStrategy.APPEND, track=("tier",))
    Traceback (most recent call last):
    ...
    assetlake_dagster.spec.write_options.WriteOptionsError: 'track=' applies to history, not to append. It is a history option: add 'history' after 'key=<c1,c2>', or remove it.
"""

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from assetlake_dagster.errors import SourceLocation, UsageError
from assetlake_dagster.spec.model import MaterializeSpec, MergeOptions, WriteStrategy, write_contract
from assetlake_dagster.spec.names import IDENTIFIER_HINT, TableUri, is_identifier


@dataclass(frozen=True)
class OptionProblem:
    """One broken rule of a write's options.

    Attributes:
        option: the option it is about, as its field is named (``key``, ``deletes``...).
        message: what is wrong, e.g. ``track column 'id' is a key column.``
        hint: how to fix it.
        column: the column of ``option`` it is about, when it is about one.
    """

    option: str
    message: str
    hint: str
    column: Optional[str] = None


class WriteOptionsError(UsageError):
    """A write's options break the rules of their strategy.

    Attributes:
        problems: every broken rule, in the order of the options.
    """

    def __init__(self, problems: Sequence[OptionProblem], where: str = ""):
        self.problems = tuple(problems)
        text = " ".join(f"{p.message} {p.hint}" for p in self.problems)
        super().__init__(f"{where}: {text}" if where else text)


#: How to fix an option given to a strategy that does not take it.
_MISPLACED_HINTS = {
    "key": "Only a merge and a history have a key; remove it.",
    "track": "It is a history option: add 'history' after 'key=<c1,c2>', or remove it.",
    "valid_from": "It is a history option: add 'history' after 'key=<c1,c2>', or remove it.",
    "update": "It is a merge option: give 'key=<c1,c2>' without 'append' or 'history', or remove it.",
    "keep": "It is a merge option: give 'key=<c1,c2>' without 'append' or 'history', or remove it.",
    "within": "It is a merge option: give 'key=<c1,c2>' without 'append' or 'history', or remove it.",
    "deletes": "'deletes=delete' is a merge's (key=<c1,c2>) and 'deletes=close' a history's; remove it.",
    "new_rows": "It appends the SELECT over the rows the upstream gained since the last run: write 'append new_rows'.",
    "late": "It is a history option: add 'history' after 'key=<c1,c2>' and 'valid_from=<column>', or remove it.",
}
#: What ``late=`` takes: refuse a version earlier than its key's latest (the default), or insert it.
LATE_VALUES = ("refuse", "insert")
_KEY_HINT = "A match is found by the key, which never changes; name only non-key columns."


@dataclass(frozen=True)
class _Options:
    """What every strategy's options share: the constructor checks them (:meth:`problems`)."""

    STRATEGY: ClassVar[WriteStrategy]

    def __post_init__(self) -> None:
        problems = list(self.problems())
        if problems:
            raise WriteOptionsError(problems)

    def problems(self) -> Iterator[OptionProblem]:
        """Every rule the options break (none: nothing to combine)."""
        return iter(())


@dataclass(frozen=True)
class ReplaceWriteOptions(_Options):
    """``replace``: the table becomes the rows; it takes no option."""

    STRATEGY: ClassVar[WriteStrategy] = WriteStrategy.REPLACE


@dataclass(frozen=True)
class ManualWriteOptions(_Options):
    """``manual``: the SQL writes the table itself; it takes no option."""

    STRATEGY: ClassVar[WriteStrategy] = WriteStrategy.MANUAL


@dataclass(frozen=True)
class ViewWriteOptions(_Options):
    """``view``: the SELECT becomes a view in the catalog; no data is written, so no option."""

    STRATEGY: ClassVar[WriteStrategy] = WriteStrategy.VIEW


@dataclass(frozen=True)
class AppendWriteOptions(_Options):
    """``append``: insert only; ``new_rows`` appends what the upstream gained since the last run."""

    STRATEGY: ClassVar[WriteStrategy] = WriteStrategy.APPEND
    new_rows: bool = False


def _column_problems(option: str, columns: Sequence[str], key: Sequence[str], hint: str) -> Iterator[OptionProblem]:
    keys = {k.lower() for k in key}
    for column in columns:
        if not is_identifier(column):
            yield OptionProblem(option, f"{option} column '{column}' is not an allowed identifier.", IDENTIFIER_HINT, column)
        elif column.lower() in keys:
            yield OptionProblem(option, f"{option} column '{column}' is a key column.", hint, column)


def _key_problems(strategy: WriteStrategy, key: Sequence[str]) -> Iterator[OptionProblem]:
    if not key:
        what = "an entity across its versions" if strategy is WriteStrategy.HISTORY else "a row across runs"
        yield OptionProblem("key", f"'{strategy.value}' needs 'key=<c1,c2>'.", f"The key identifies {what}; add e.g. 'key=id'.")
    for column in key:
        if not is_identifier(column):
            yield OptionProblem("key", f"key column '{column}' is not an allowed identifier.", IDENTIFIER_HINT, column)


@dataclass(frozen=True)
class MergeWriteOptions(_Options):
    """``merge``: upsert on ``key``; a match sets the ``update`` columns or all but ``keep``;
    ``within`` bounds the table's rows it reads; ``deletes='delete'`` deletes absent keys."""

    STRATEGY: ClassVar[WriteStrategy] = WriteStrategy.MERGE
    key: tuple[str, ...] = ()
    update: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    within: Optional[str] = None
    deletes: Optional[str] = None

    def problems(self) -> Iterator[OptionProblem]:
        yield from _key_problems(self.STRATEGY, self.key)
        if self.update and self.keep:
            yield OptionProblem(
                "keep", "'update=' and 'keep=' cannot both be given.",
                "Name the columns a match updates (update=) or the ones it keeps (keep=), not both.",
            )
        yield from _column_problems("update", self.update, self.key, _KEY_HINT)
        yield from _column_problems("keep", self.keep, self.key, _KEY_HINT)
        if self.deletes not in (None, "delete"):
            yield OptionProblem(
                "deletes", f"'deletes={self.deletes}' does not apply to a merge.",
                "A merge deletes absent keys (there is no version to close); write 'deletes=delete', or add 'history'.",
            )


@dataclass(frozen=True)
class HistoryWriteOptions(_Options):
    """``history`` (SCD2): versions of each ``key``, opened by a change of the ``track``
    columns, starting at the run's time or at ``valid_from``; ``deletes='close'`` closes the
    current version of absent keys; ``late='insert'`` places a version earlier than its key's
    latest among the key's versions."""

    STRATEGY: ClassVar[WriteStrategy] = WriteStrategy.HISTORY
    key: tuple[str, ...] = ()
    track: tuple[str, ...] = ()
    valid_from: Optional[str] = None
    deletes: Optional[str] = None
    late: Optional[str] = None

    def problems(self) -> Iterator[OptionProblem]:
        yield from _key_problems(self.STRATEGY, self.key)
        yield from _column_problems(
            "track", self.track, self.key, "The key identifies the entity and never changes; track only non-key columns."
        )
        if self.valid_from is not None:
            yield from _column_problems(
                "valid_from", [self.valid_from], self.key,
                "Name the column holding when the source changed the row, e.g. valid_from=updated_at.",
            )
        if self.deletes not in (None, "close"):
            yield OptionProblem(
                "deletes", f"'deletes={self.deletes}' does not apply to a history.",
                "A history never deletes a version; write 'deletes=close' to close the current version of absent keys.",
            )
        if self.late not in (None, *LATE_VALUES):
            yield OptionProblem("late", f"unknown late= value '{self.late}'.", "Write 'late=insert', or 'late=refuse' (the default).")
        elif self.late == "insert" and self.valid_from is None:
            yield OptionProblem(
                "late", "'late=insert' needs 'valid_from=<column>'.",
                "A late version is placed by its own timestamp: name the column holding it, e.g. valid_from=updated_at.",
            )
        elif self.late == "insert" and self.deletes == "close":
            yield OptionProblem(
                "late", "'late=insert' cannot be combined with 'deletes=close'.",
                "A key closed at the run's time has no timestamp of the source's to be ordered by; keep one of them.",
            )


#: Each strategy's options class.
OPTIONS_BY_STRATEGY: dict[WriteStrategy, type[_Options]] = {
    cls.STRATEGY: cls
    for cls in (
        ReplaceWriteOptions, AppendWriteOptions, MergeWriteOptions, HistoryWriteOptions, ManualWriteOptions, ViewWriteOptions
    )
}


def _takes(cls: type[_Options]) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _is_given(value: Any) -> bool:
    return value not in (None, (), [], False, "")


def write_options(strategy: WriteStrategy, **given: Any) -> _Options:
    """The options of a ``strategy`` write, checked: options the strategy does not take,
    then the combinations of those it does (its class's constructor).

    Args:
        strategy: the write strategy.
        **given: options by field name (``key``, ``track``, ``valid_from``, ``deletes``,
            ``update``, ``keep``, ``within``, ``new_rows``); an empty value is not given.

    Raises:
        WriteOptionsError: with every problem, each naming its option (and column).

    Example:
        >>> write_options(WriteStrategy.HISTORY, key=("id",), deletes="close").deletes
        'close'
    """
    cls = OPTIONS_BY_STRATEGY[strategy]
    takes = _takes(cls)
    misplaced = []
    for option, value in given.items():
        if option in takes or not _is_given(value):
            continue
        owners = " and ".join(s.value for s, c in OPTIONS_BY_STRATEGY.items() if option in _takes(c))
        written = option if option == "new_rows" else f"{option}="
        hint = {
            WriteStrategy.MANUAL: "A manual script writes its own table; remove it or 'manual'.",
            WriteStrategy.VIEW: "A view writes no data; remove it, or 'view' to write a table.",
        }.get(strategy, _MISPLACED_HINTS[option])
        misplaced.append(OptionProblem(option, f"'{written}' applies to {owners}, not to {strategy.value}.", hint))
    if misplaced:
        raise WriteOptionsError(misplaced)
    return cls(**{option: value for option, value in given.items() if option in takes and _is_given(value)})


def materialize_spec(uri: TableUri, options: _Options, location: Optional[SourceLocation] = None) -> MaterializeSpec:
    """The write contract of ``uri`` written with ``options``.

    Example:
        >>> spec = materialize_spec(TableUri("s", "t"), write_options(WriteStrategy.MERGE, key=("id",), deletes="delete"))
        >>> spec.strategy.value, spec.key, spec.merge.deletes
        ('merge', ('id',), True)
    """
    return MaterializeSpec(uri, options.STRATEGY, location=location, **_contract_fields(options))


def contract_metadata(options: _Options, uri: Optional[TableUri] = None) -> dict[str, Any]:
    """The JSON form of the write contract of ``options`` (``table`` only when ``uri`` is given).

    Example:
        >>> contract_metadata(write_options(WriteStrategy.APPEND))
        {'strategy': 'append', 'key': [], 'track': [], 'deletes': None}
    """
    fields = _contract_fields(options)
    return write_contract(
        options.STRATEGY, fields["key"], fields["track"], fields["close_deletes"], uri, fields["merge"],
        fields["valid_from"], fields["new_rows"], fields["late_insert"],
    )


def _contract_fields(options: _Options) -> dict[str, Any]:
    merge = MergeOptions()
    if isinstance(options, MergeWriteOptions):
        merge = MergeOptions(options.update, options.keep, options.within, options.deletes == "delete")
    return {
        "key": tuple(getattr(options, "key", ())),
        "track": tuple(getattr(options, "track", ())),
        "close_deletes": getattr(options, "deletes", None) == "close",
        "valid_from": getattr(options, "valid_from", None),
        "merge": merge,
        "new_rows": bool(getattr(options, "new_rows", False)),
        "late_insert": getattr(options, "late", None) == "insert",
    }
