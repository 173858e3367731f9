"""Catalog lines: ``-- group``, ``-- owner``, ``-- tags``, ``-- description``, ``-- kinds``,
``-- deprecated``.

They become the asset's Dagster catalog attributes, :class:`~assetlake_dagster.spec.CatalogSpec`
(``SqlAssetSpec.catalog``): each is a declared field (:data:`FIELDS`). Each value is checked
with Dagster's own validators, so a bad owner, tag or group fails here with a line number
instead of later inside ``dagster.AssetSpec`` without one.
"""

from typing import Optional

from assetlake_dagster.annotations.fields import FieldLine, HeaderField, Item, Repeat
from assetlake_dagster.annotations.header import Word, comma_items
from assetlake_dagster.defs.dagster_internals import (
    KIND_PREFIX,
    VALID_GROUP_NAME_REGEX,
    is_valid_owner,
    is_valid_strict_tag_value,
    is_valid_tag_key,
)

_TAG_HINT = "Use letters, digits, '_', '-' and '.', at most 63 characters."


def parse_group(line: FieldLine) -> Optional[str]:
    group = line.text()
    if VALID_GROUP_NAME_REGEX.match(group.text):
        return group.text
    line.error(
        group,
        f"group '{group.text}' is not a valid group name.",
        "Use letters, digits and underscores, with '/' between segments.",
    )
    return None


def parse_owner(line: FieldLine) -> Optional[list[Item]]:
    owner = line.rest[0]
    if len(line.rest) > 1:
        line.error(line.rest[1], "'-- owner' takes one owner per line.", "Repeat '-- owner' for each owner.")
    elif not is_valid_owner(owner.text):
        line.error(
            owner,
            f"owner '{owner.text}' is not an email address or 'team:<name>'.",
            "Write e.g. '-- owner alice@example.com' or '-- owner team:data-eng'.",
        )
    elif owner.text in line.seen:
        line.error(owner, f"owner '{owner.text}' is listed twice.", "Remove the repeated owner.")
    else:
        return [Item(owner.text, owner.text, owner)]
    return None


def parse_tags(line: FieldLine) -> list[Item]:
    items: list[Item] = []
    seen = dict(line.seen)
    for item in comma_items(line.text().text, line.rest[0]):
        key, eq, value = item.text.partition("=")
        if not item.text:
            line.error(item, "empty tag in the list.", "Write 'tags k=v,k2=v2'.", span=1)
        elif not eq:
            line.error(item, f"tag '{item.text}' has no value.", "Write 'key=value'.")
        elif not is_valid_tag_key(key):
            line.error(item, f"tag key '{key}' is not valid.", _TAG_HINT, span=max(1, len(key)))
        elif not is_valid_strict_tag_value(value):
            value_word = Word(value, item.line, item.col + len(key) + 1)
            line.error(value_word, f"tag value '{value}' is not valid.", _TAG_HINT)
        elif key in seen:
            message = f"tag '{key}' is already set on line {seen[key].line}."
            line.error(Word(key, item.line, item.col), message, "Keep one value per tag key.")
        else:
            seen[key] = item
            items.append(Item(key, (key, value), item))
    return items


def parse_description(line: FieldLine) -> str:
    return line.text().text.strip()


def parse_kinds(line: FieldLine) -> list[Item]:
    items: list[Item] = []
    seen = dict(line.seen)
    for item in comma_items(line.text().text, line.rest[0]):
        if not item.text:
            line.error(item, "empty kind in the list.", "Write 'kinds a,b'.", span=1)
        elif not is_valid_tag_key(KIND_PREFIX + item.text):
            line.error(item, f"kind '{item.text}' is not valid.", _TAG_HINT)
        elif item.text in seen:
            line.error(item, f"kind '{item.text}' is listed twice.", "Remove the repeated kind.")
        else:
            seen[item.text] = item
            items.append(Item(item.text, item.text, item))
    return items


#: The catalog lines, one declaration each.
FIELDS = (
    HeaderField(
        "group", into="catalog.group", parse=parse_group, form="-- group <name>", noun="group",
        once_hint="An asset belongs to one group; keep one '-- group' line.",
    ),
    HeaderField("owner", into="catalog.owners", parse=parse_owner, form="-- owner <email or team:name>", repeat=Repeat.EACH),
    HeaderField("tags", into="catalog.tags", parse=parse_tags, form="-- tags <k=v,k2=v2>", repeat=Repeat.EACH),
    HeaderField("description", into="catalog.description", parse=parse_description, form="-- description <text>", repeat=Repeat.JOIN),
    HeaderField("kinds", into="catalog.kinds", parse=parse_kinds, form="-- kinds <kind1,kind2>", repeat=Repeat.EACH),
    HeaderField(
        "deprecated", into="catalog.deprecated", parse=parse_description, form="-- deprecated <what to read instead>",
        repeat=Repeat.JOIN,
    ),
)
