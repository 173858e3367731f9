"""Layout lines: ``-- cluster_by <col>[,<col>…]`` and ``-- properties <key>=<value> …``.

How the Delta table is laid out, :class:`~assetlake_dagster.spec.LayoutSpec`
(``SqlAssetSpec.layout``): liquid clustering columns (at most four, as Delta allows) and
Delta table properties. A property is one Delta knows (:data:`DELTA_PROPERTIES`, with the
kind of value each takes), or a user property without the ``delta.`` prefix; a value with
spaces is written in double quotes::

    -- cluster_by customer_id, order_date
    -- properties delta.enableChangeDataFeed=true delta.logRetentionDuration="interval 60 days"

Whether a clustering column exists is checked against the SELECT's columns
(:mod:`assetlake_dagster.project.load`); the IO manager applies the layout
(:mod:`assetlake_dagster.writes.layout`).
"""

import re
from typing import Callable, Optional

from assetlake_dagster.annotations.fields import FieldLine, HeaderField, Item, Repeat
from assetlake_dagster.annotations.header import Word, comma_items
from assetlake_dagster.spec.names import IDENTIFIER_HINT
from assetlake_dagster.errors import did_you_mean
from assetlake_dagster.spec import MAX_CLUSTER_COLUMNS, ClusterColumn, interval_hours, is_identifier

CLUSTER_BY_FORM = "-- cluster_by <column>[,<column>…]"
PROPERTIES_FORM = '-- properties <key>=<value> [<key>="<value with spaces>"] …'
_PROPERTY_RE = re.compile(r'([^\s=]*)=("([^"]*)"|\S*)')


def _choice(*values: str) -> tuple[Callable[[str], bool], str]:
    return (lambda v: v in values), " or ".join(f"'{v}'" for v in values)


_BOOLEAN = _choice("true", "false")
_INTERVAL = (lambda v: interval_hours(v) is not None), "an interval such as \"interval 30 days\""
_POSITIVE = (lambda v: v.isdigit() and int(v) > 0), "a whole number above 0"
_COLUMNS = (lambda v: all(is_identifier(c.strip()) for c in v.split(","))), "column names separated by commas"

#: The Delta table properties a ``-- properties`` line may set, with the values each takes
#: (``dagster/test_table_layout.py`` checks that Delta accepts every one of them).
DELTA_PROPERTIES: dict[str, tuple[Callable[[str], bool], str]] = {
    "delta.enableChangeDataFeed": _BOOLEAN,
    "delta.enableDeletionVectors": _BOOLEAN,
    "delta.enableRowTracking": _BOOLEAN,
    "delta.appendOnly": _BOOLEAN,
    "delta.autoOptimize.optimizeWrite": _BOOLEAN,
    "delta.autoOptimize.autoCompact": _BOOLEAN,
    "delta.checkpointInterval": _POSITIVE,
    "delta.checkpointPolicy": _choice("classic", "v2"),
    "delta.logRetentionDuration": _INTERVAL,
    "delta.deletedFileRetentionDuration": _INTERVAL,
    "delta.setTransactionRetentionDuration": _INTERVAL,
    "delta.dataSkippingNumIndexedCols": ((lambda v: v.lstrip("-").isdigit() and int(v) >= -1), "a whole number, -1 for all columns"),
    "delta.dataSkippingStatsColumns": _COLUMNS,
    "delta.isolationLevel": _choice("Serializable", "WriteSerializable"),
}
#: Each known property by its lower-case name, to name a misspelt case.
_BY_LOWER_NAME = {name.lower(): name for name in DELTA_PROPERTIES}
_WORD_RE = re.compile(r"\S+")


def parse_cluster_by(line: FieldLine) -> Optional[tuple[ClusterColumn, ...]]:
    columns: dict[str, ClusterColumn] = {}
    ok = True
    for item in comma_items(line.text().text, line.rest[0]):
        if not item.text:
            line.error(item, "empty column in the list.", f"Write '{CLUSTER_BY_FORM}'.", span=1)
            ok = False
        elif not is_identifier(item.text):
            line.error(item, f"'{item.text}' is not an allowed column name.", IDENTIFIER_HINT)
            ok = False
        elif item.text.lower() in columns:
            line.error(item, f"column '{item.text}' is listed twice.", "Remove the repeated column.")
            ok = False
        else:
            columns[item.text.lower()] = ClusterColumn(item.text, line.draft.src.location(item.line, item.col))
    if ok and len(columns) > MAX_CLUSTER_COLUMNS:
        extra = list(columns.values())[MAX_CLUSTER_COLUMNS]
        line.error(
            Word(extra.name, extra.location.line, extra.location.col),
            f"Delta clusters by at most {MAX_CLUSTER_COLUMNS} columns, got {len(columns)}.",
            "Keep the columns that most queries filter on.",
        )
        ok = False
    return tuple(columns.values()) if ok else None


def parse_properties(line: FieldLine) -> list[Item]:
    items = []
    seen = dict(line.seen)
    text, position = line.raw, line.rest[0].col - 1
    while position < len(text):
        if text[position].isspace():
            position += 1
            continue
        match = _PROPERTY_RE.match(text, position)
        if match is None or not match.group(1):
            bad = _WORD_RE.match(text, position)
            word = Word(bad.group(), line.keyword.line, position + 1)
            line.error(word, f"'{word.text}' is not a <key>=<value> property.", f"Write '{PROPERTIES_FORM}'.")
            position = bad.end()
            continue
        key, value = match.group(1), match.group(3) if match.group(3) is not None else match.group(2)
        key_word = Word(key, line.keyword.line, position + 1)
        value_word = Word(match.group(2), line.keyword.line, position + len(key) + 2)
        position = match.end()
        if match.group(2).startswith('"') and match.group(3) is None:
            line.error(value_word, "the value has no closing '\"'.", 'Write a value with spaces in double quotes: "interval 30 days".')
        elif key in seen:
            line.error(key_word, f"property '{key}' is already set on line {seen[key].line}.", "Keep one value per property.")
        elif _check_property(line, key_word, value, value_word):
            seen[key] = key_word
            items.append(Item(key, (key, value), key_word))
    return items


def _check_property(line: FieldLine, key: Word, value: str, value_word: Word) -> bool:
    if not key.text.startswith("delta."):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", key.text):
            line.error(key, f"property key '{key.text}' is not valid.", "Use letters, digits, '_', '-' and '.'.")
            return False
        return True  # a user property: Delta keeps it as is
    name = _BY_LOWER_NAME.get(key.text.lower())
    if name is None:
        hint = did_you_mean(key.text, list(DELTA_PROPERTIES)).strip() or (
            "Known: " + ", ".join(DELTA_PROPERTIES) + ". A property of your own goes without the 'delta.' prefix."
        )
        line.error(key, f"unknown Delta table property '{key.text}'.", hint)
        return False
    if name != key.text:
        line.error(key, f"Delta spells this property '{name}'.", f"Write '{name}={value}'.")
        return False
    accepts, expected = DELTA_PROPERTIES[name]
    if not accepts(value):
        line.error(value_word, f"'{value}' is not a value of {name}.", f"Write {expected}.", span=max(1, len(value_word.text)))
        return False
    return True


#: The layout lines, one declaration each.
FIELDS = (
    HeaderField(
        "cluster_by", into="layout.cluster_by", parse=parse_cluster_by, form=CLUSTER_BY_FORM, noun="cluster_by",
        once_hint="A table has one set of clustering columns; keep one '-- cluster_by' line.",
    ),
    HeaderField("properties", into="layout.properties", parse=parse_properties, form=PROPERTIES_FORM, repeat=Repeat.EACH),
)
