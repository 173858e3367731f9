"""``-- $name (type) [= default]``: a SQL argument, bound to ``:name`` in the query.

Types are the :class:`~assetlake_dagster.spec.ArgumentType` values and a few SQL
spellings (``integer``, ``double``…); a default is converted to the type when parsed, so
a bad one is reported with its line. A ``timestamp`` without an offset
(``= 2024-01-02T09:30:00``) is a wall time in the Spark session's zone when it is bound.
"""

import re

from assetlake_dagster.annotations.header import HeaderDraft, Word
from assetlake_dagster.spec.names import IDENTIFIER_HINT
from assetlake_dagster.errors import did_you_mean
from assetlake_dagster.spec import ArgumentSpec, ArgumentType, convert_value, is_identifier

#: What a ``$name`` line's keyword starts with.
ARGUMENT_PREFIX = "$"
ARGUMENT_TYPES: dict[str, ArgumentType] = {
    **{t.value: t for t in ArgumentType},
    "str": ArgumentType.STRING,
    "integer": ArgumentType.INT,
    "bigint": ArgumentType.INT,
    "double": ArgumentType.FLOAT,
    "boolean": ArgumentType.BOOL,
}
_TYPE_LIST = ", ".join(t.value for t in ArgumentType)


def parse_argument(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    """Parse a ``-- $name (type) [= default]`` line into ``draft.arguments``."""
    name_match = re.compile(r"[^\s(=]*").match(raw, keyword.col)  # just past '$'
    name = name_match.group()
    name_word = Word(name, keyword.line, keyword.col + 1)
    if not name:
        draft.error(keyword, "'$' needs an argument name.", "Write '-- $<name> (<type>) [= <default>]'.")
        return
    if not is_identifier(name):
        draft.error(name_word, f"argument name '{name}' is not an allowed identifier.", IDENTIFIER_HINT)
        return
    draft.argument_names.add(name)
    pos = _skip_spaces(raw, name_match.end())
    if raw[pos : pos + 1] != "(" or ")" not in raw[pos:]:
        draft.error(
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
        draft.error(
            type_word,
            f"unknown argument type '{type_text}'.",
            hint or f"Types are: {_TYPE_LIST}.",
            span=max(1, len(type_text)),
        )
    pos = _skip_spaces(raw, close + 1)
    default, has_default = None, False
    if raw[pos:].strip():
        if raw[pos] != "=":
            draft.error(
                Word(raw[pos:].rstrip(), keyword.line, pos + 1),
                f"unexpected '{raw[pos:].rstrip()}' after the type.",
                "Write '= <default>' to give a default value.",
            )
            return
        start = _skip_spaces(raw, pos + 1)
        default_word = Word(raw[start:].rstrip(), keyword.line, start + 1)
        if not default_word.text:
            draft.error(
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
                draft.error(default_word, message, str(err))
                return
    if type_ is None:
        return
    if name in draft.arguments:
        first = draft.arguments[name].location
        hint = f"The first declaration is on line {first.line}; remove one."
        draft.error(name_word, f"argument '${name}' is declared twice.", hint)
        return
    location = draft.src.location(keyword.line, keyword.col)
    draft.arguments[name] = ArgumentSpec(name, type_, default, has_default, location=location)


def _skip_spaces(raw: str, pos: int) -> int:
    while pos < len(raw) and raw[pos] in " \t":
        pos += 1
    return pos
