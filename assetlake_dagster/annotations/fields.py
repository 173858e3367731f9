"""Header fields, each declared once: its keyword, how a line reads, how repeated lines
combine, and the spec attribute it fills.

A *field* is a header line whose value goes straight into :class:`~assetlake_dagster.spec.SqlAssetSpec`
(or into one of its bundles, such as :class:`~assetlake_dagster.spec.CatalogSpec`), as
SQLMesh's ``ModelMeta`` declares a model's properties. What every field shares is done
here, once: a line without a value, a second line of a field that takes one ("already set
on line 3"), joining or collecting repeated lines, and putting the value where it goes. A
field's own module only reads one line's words into a value::

    HeaderField("group", into="catalog.group", parse=parse_group, form="-- group <name>",
                noun="group", once_hint="An asset belongs to one group; keep one '-- group' line.")

The lines that need other lines to mean anything (``materialize``, ``on``, ``partitioned``,
``data_test``, ``column``, ``$arguments``) keep parsers of their own in
:data:`~assetlake_dagster.annotations.keywords.LINE_PARSERS`: their checks cross lines and
files (``project/dag.py``, ``project/load.py``). The declarations live with their parsers (``FIELDS`` in
``catalog_attributes.py``, ``automation.py``, ``freshness.py``) and are gathered in
:data:`~assetlake_dagster.annotations.keywords.FIELDS`.
"""

import dataclasses
import enum
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional

from assetlake_dagster.annotations.header import HeaderDraft, Word

#: Bundles of spec attributes a field may fill as ``<bundle>.<attribute>`` (``catalog.group``).
BUNDLE_SEPARATOR = "."


class Repeat(enum.Enum):
    """How the lines of one field combine."""

    #: One line per file; a second is an error naming the first.
    ONCE = "once"
    #: Every line adds items (``-- owner``, ``-- tags``): the value is the tuple of all items.
    EACH = "each"
    #: Every line adds text (``-- description``): the value is the lines joined by a space.
    JOIN = "join"


class Item(NamedTuple):
    """One item of a :attr:`Repeat.EACH` field: its key (for repeats), value and position."""

    key: str
    value: Any
    word: Word


@dataclass
class FieldLine:
    """One line of a field, as its parser sees it.

    Attributes:
        draft: the file's draft (for ``draft.src`` and errors).
        keyword: the line's first word.
        rest: the words after it.
        raw: the whole line as written.
        seen: the items of earlier lines by key (:attr:`Repeat.EACH` fields), so that a
            parser can name the line an item was first given on.
    """

    draft: HeaderDraft
    keyword: Word
    rest: list[Word]
    raw: str
    seen: Mapping[str, Word] = field(default_factory=dict)

    def error(self, word: Word, message: str, hint: str = "", span: Optional[int] = None) -> None:
        """Report a problem underlining ``word``."""
        self.draft.error(word, message, hint, span=span)

    def text(self) -> Word:
        """The rest of the line as one word (a group name or a description may hold spaces)."""
        first = self.rest[0]
        return Word(self.raw[first.col - 1 :].rstrip(), first.line, first.col)


#: Reads one line: the field's value (a list of :class:`Item` for :attr:`Repeat.EACH`), or
#: ``None`` after reporting why there is none.
FieldParser = Callable[[FieldLine], Any]


@dataclass(frozen=True)
class HeaderField:
    """A header keyword that fills one spec attribute.

    Attributes:
        keyword: the line's first word (``-- <keyword> …``).
        into: the :class:`~assetlake_dagster.spec.SqlAssetSpec` attribute it fills, or
            ``<bundle>.<attribute>`` for an attribute of a bundle (``catalog.group``).
        parse: reads one line's words into its value.
        form: how the line is written; when set, a line without a value is reported here
            with it (``'-- group' needs a value. Write '-- group <name>'.``), otherwise the
            parser reads the empty line and says what is missing.
        repeat: how several lines of the field combine.
        noun: how a second line names the first (``a schedule is already set on line 2.``);
            :attr:`Repeat.ONCE` fields only.
        once_hint: the fix for a second line; :attr:`Repeat.ONCE` fields only.

    Example:
        >>> from assetlake_dagster.annotations.keywords import FIELDS_BY_KEYWORD
        >>> field = FIELDS_BY_KEYWORD["group"]
        >>> field.into, field.repeat.value
        ('catalog.group', 'once')
    """

    keyword: str
    into: str
    parse: FieldParser
    form: Optional[str] = None
    repeat: Repeat = Repeat.ONCE
    noun: str = ""
    once_hint: str = ""


@dataclass
class _FieldState:
    declared: HeaderField
    first: Word  # the keyword of the field's first line
    values: list = field(default_factory=list)  # ONCE/JOIN: one per valid line
    items: dict[str, Item] = field(default_factory=dict)  # EACH: by key, in order


def parse_field_line(draft: HeaderDraft, declared: HeaderField, keyword: Word, rest: list[Word], raw: str) -> None:
    """Read one line of a declared field into ``draft.fields``."""
    state = draft.fields.get(declared.into)
    if declared.repeat is Repeat.ONCE and state is not None:
        draft.error(keyword, f"{declared.noun or declared.keyword} is already set on line {state.first.line}.", declared.once_hint)
        return
    if state is None:
        state = draft.fields[declared.into] = _FieldState(declared, first=keyword)
    if not rest and declared.form is not None:
        draft.error(keyword, f"'-- {keyword.text}' needs a value.", f"Write '{declared.form}'.")
        return
    seen = {key: item.word for key, item in state.items.items()}
    value = declared.parse(FieldLine(draft, keyword, rest, raw, seen))
    if value is None:
        return
    if declared.repeat is Repeat.EACH:
        for item in value:
            state.items.setdefault(item.key, item)
    else:
        state.values.append(value)


def field_values(draft: HeaderDraft) -> dict[str, Any]:
    """The value of every field the file gives, by its ``into`` path (absent: not set)."""
    values: dict[str, Any] = {}
    for into, state in draft.fields.items():
        declared = state.declared
        if declared.repeat is Repeat.EACH:
            values[into] = tuple(item.value for item in state.items.values())
        elif declared.repeat is Repeat.JOIN:
            if state.values:
                values[into] = " ".join(state.values)
        elif state.values:
            values[into] = state.values[0]
    return values


def spec_arguments(values: Mapping[str, Any], spec_type: type) -> dict[str, Any]:
    """Keyword arguments of ``spec_type`` (``SqlAssetSpec``) for the fields' values: a
    plain attribute as is, ``<bundle>.<attribute>`` values gathered into their bundle.

    Example:
        >>> from assetlake_dagster.spec import SqlAssetSpec
        >>> spec_arguments({"catalog.group": "sales", "catalog.owners": ("team:data",)}, SqlAssetSpec)
        {'catalog': CatalogSpec(group='sales', owners=('team:data',), tags=(), description=None, kinds=())}
    """
    hints = typing.get_type_hints(spec_type)
    arguments: dict[str, Any] = {}
    bundles: dict[str, dict[str, Any]] = {}
    for into, value in values.items():
        bundle, _, attribute = into.rpartition(BUNDLE_SEPARATOR)
        if bundle:
            bundles.setdefault(bundle, {})[attribute] = value
        else:
            arguments[into] = value
    for bundle, fields in bundles.items():
        arguments[bundle] = hints[bundle](**fields)
    return arguments


def declared_attributes(spec_type: type) -> set[str]:
    """Every ``into`` path ``spec_type`` offers: its attributes, and its bundles' as
    ``<bundle>.<attribute>`` (a bundle is an attribute whose type is a dataclass)."""
    paths = set()
    for name, hint in typing.get_type_hints(spec_type).items():
        paths.add(name)
        if dataclasses.is_dataclass(hint):
            paths |= {f"{name}{BUNDLE_SEPARATOR}{f.name}" for f in dataclasses.fields(hint)}
    return paths
