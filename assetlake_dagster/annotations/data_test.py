"""``-- data_test …``: the checks a slice must pass before it is committed.

Built-in kinds (``unique``, ``not_null``, ``accepted_values``, ``relationships``) or a
custom ``<path/to/test.sql>``; ``warn`` (or ``on_fail=warn``) at the end makes a failure a
warning, ``on_fail=quarantine`` sends the failing rows to the table's quarantine table and
publishes the rest (row-level kinds only: ``not_null``, ``accepted_values``, ``relationships``). Whether a
``relationships`` table exists is a cross-file check (:mod:`assetlake_dagster.project.dag`).
"""

import dataclasses
import unicodedata
from typing import Optional

from assetlake_dagster.annotations.header import HeaderDraft, Word, parse_uri
from assetlake_dagster.spec.names import IDENTIFIER_HINT
from assetlake_dagster.errors import did_you_mean
from assetlake_dagster.spec import DataTestKind, DataTestSpec, is_identifier

DATA_TEST_FORMS = {
    DataTestKind.UNIQUE: "unique <c1[,c2]>",
    DataTestKind.NOT_NULL: "not_null <column>",
    DataTestKind.ACCEPTED_VALUES: "accepted_values <column> = a,b,c",
    DataTestKind.RELATIONSHIPS: "relationships <column> -> delta://<schema>/<table>.<column>",
}
DATA_TEST_KINDS = tuple(k.value for k in DATA_TEST_FORMS)
DATA_TEST_FORM = (
    "-- data_test unique|not_null <col> | accepted_values <col> = a,b | relationships <col> -> delta://s/t.c "
    "| <path/to/test.sql> [warn | on_fail=quarantine]"
)
#: What a failing test does: fail the run (the default), warn, or send its rows aside.
ON_FAIL_VALUES = ("fail", "warn", "quarantine")
#: The kinds whose failures are rows of the table, which quarantine can send aside.
QUARANTINE_KINDS = (DataTestKind.NOT_NULL, DataTestKind.ACCEPTED_VALUES, DataTestKind.RELATIONSHIPS)


def parse_data_test(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    """Parse a ``-- data_test`` line into ``draft.data_tests``."""
    words = list(rest)
    blocking, quarantine = True, None
    if words and words[-1].text == "warn":
        blocking = False
        words.pop()
    elif words and words[-1].text.startswith("on_fail="):
        on_fail = words.pop()
        value = on_fail.text[len("on_fail="):]
        if value not in ON_FAIL_VALUES:
            draft.error(on_fail, f"unknown on_fail= value '{value}'.",
                        "Write 'on_fail=quarantine' (send the failing rows aside, publish the rest), 'on_fail=warn' or "
                        "'on_fail=fail' (the default).")
            return
        blocking = value == "fail"
        quarantine = on_fail if value == "quarantine" else None
    if not words:
        draft.error(keyword, "'-- data_test' needs a test.", f"Write '{DATA_TEST_FORM}'.")
        return
    head, args = words[0], words[1:]
    location = draft.src.location(head.line, head.col)
    test: Optional[DataTestSpec] = None
    if head.text.endswith(".sql"):
        if args:
            draft.error(args[0], f"unexpected '{args[0].text}' after the test file.", "Write '-- data_test <path.sql> [warn]'.")
            return
        bad = next((ch for ch in head.text if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")), None)
        if bad is not None:
            draft.error(
                head,
                f"the test file name {head.text!r} contains the control character {bad!r}.",
                "Name the file with printable characters, e.g. 'tests/no_negative_amounts.sql'.",
            )
            return
        test = DataTestSpec(DataTestKind.CUSTOM, path=head.text, blocking=blocking, location=location)
    elif head.text not in DATA_TEST_KINDS:
        hint = did_you_mean(head.text, DATA_TEST_KINDS).strip()
        draft.error(head, f"unknown data test '{head.text}'.", hint or f"Write '{DATA_TEST_FORM}'.")
        return
    else:
        kind = DataTestKind(head.text)
        test = _builtin_test(draft, kind, head, args, raw, blocking)
    if test is None:
        return
    if quarantine is not None:
        if test.kind not in QUARANTINE_KINDS:
            kinds = ", ".join(k.value for k in QUARANTINE_KINDS)
            draft.error(
                quarantine, f"a {test.kind.value} test cannot quarantine rows.",
                f"Its failures are not rows of the table one can set aside; quarantine works with {kinds}: "
                "use 'warn', or let it block.",
            )
            return
        test = dataclasses.replace(test, quarantine=True)
    if any(t.name == test.name for t in draft.data_tests):
        draft.error(head, f"data test '{test.name}' is declared twice.", "Remove the repeated line.")
        return
    draft.data_tests.append(test)


def _builtin_test(
    draft: HeaderDraft, kind: DataTestKind, head: Word, args: list[Word], raw: str, blocking: bool
) -> Optional[DataTestSpec]:
    form = DATA_TEST_FORMS[kind]
    if not args:
        draft.error(head, f"'{kind.value}' needs a column.", f"Write '-- data_test {form}'.")
        return None
    column_word = args[0]
    names = column_word.text.split(",") if kind is DataTestKind.UNIQUE else [column_word.text]
    if not all(is_identifier(n) for n in names):
        draft.error(column_word, f"column '{column_word.text}' is not an allowed identifier.", IDENTIFIER_HINT)
        return None
    location = draft.src.location(column_word.line, column_word.col)
    columns = tuple(names)
    if kind in (DataTestKind.UNIQUE, DataTestKind.NOT_NULL):
        if len(args) > 1:
            draft.error(args[1], f"unexpected '{args[1].text}'.", f"Write '-- data_test {form} [warn]'.")
            return None
        return DataTestSpec(kind, columns, blocking=blocking, location=location)
    if kind is DataTestKind.ACCEPTED_VALUES:
        if len(args) < 2 or args[1].text != "=" or len(args) < 3:
            draft.error(args[1] if len(args) > 1 else column_word, "accepted_values needs '= a,b,c'.", f"Write '-- data_test {form}'.")
            return None
        first = args[2]
        text = raw[first.col - 1 : args[-1].col - 1 + len(args[-1].text)]
        values = _accepted_values(draft, text, first, form)
        if values is None:
            return None
        return DataTestSpec(kind, columns, values=tuple(values), blocking=blocking, location=location)
    # relationships <col> -> delta://s/t.c
    if len(args) != 3 or args[1].text != "->" or "." not in args[2].text:
        word = args[1] if len(args) > 1 else column_word
        draft.error(word, "relationships needs '-> delta://<schema>/<table>.<column>'.", f"Write '-- data_test {form}'.")
        return None
    ref_text, _, ref_column = args[2].text.rpartition(".")
    uri = parse_uri(draft, Word(ref_text, args[2].line, args[2].col), target=False)
    if uri is None:
        return None
    if not is_identifier(ref_column):
        draft.error(args[2], f"referenced column '{ref_column}' is not an allowed identifier.", IDENTIFIER_HINT)
        return None
    return DataTestSpec(kind, columns, ref_uri=uri, ref_column=ref_column, blocking=blocking, location=location)


def _accepted_values(draft: HeaderDraft, text: str, first: Word, form: str) -> Optional[list[str]]:
    """``a, 'b,c', "it's", 'it''s'`` -> ``['a', 'b,c', "it's", "it's"]``, or None after an error.

    A bare value runs to the next comma, stripped (inner quotes and spaces kept: ``it's``,
    ``two words``). A value that starts with ``'`` or ``"`` runs to its closing quote and
    may hold commas, spaces and the other quote; its own quote is doubled inside.
    """
    values: list[str] = []
    i, n = 0, len(text)

    def at(index: int) -> Word:
        return Word(text[index:index + 1] or " ", first.line, first.col + index)

    while True:
        while i < n and text[i].isspace():
            i += 1
        start = i
        if i < n and text[i] in "'\"":
            quote, i, value = text[i], i + 1, []
            while True:
                if i >= n:
                    draft.error(at(start), "unterminated quote in the value list.",
                                f"Close it with {quote}, or double it inside the value ({quote * 2}).")
                    return None
                if text[i] == quote and text[i + 1:i + 2] == quote:
                    value.append(quote)
                    i += 2
                elif text[i] == quote:
                    i += 1
                    break
                else:
                    value.append(text[i])
                    i += 1
            while i < n and text[i].isspace():
                i += 1
            if i < n and text[i] != ",":
                draft.error(at(i), "unexpected text after a quoted value.", "Separate values with commas.")
                return None
            item = "".join(value)
        else:
            end = text.find(",", i)
            end = n if end < 0 else end
            item, i = text[i:end].strip(), end
        if not item:
            draft.error(at(start), "empty value in the list.", f"Write '-- data_test {form}'.")
            return None
        values.append(item)
        if i >= n:
            return values
        i += 1  # the comma
