"""Catalog lines: ``-- group``, ``-- owner``, ``-- tags``, ``-- description``, ``-- kinds``.

They become the asset's Dagster catalog attributes. Each value is checked with Dagster's
own validators, so a bad owner, tag or group fails here with a line number instead of
later inside ``dagster.AssetSpec`` without one.
"""

from assetlake_dagster.annotations.header import HeaderDraft, Word, comma_items
from assetlake_dagster.dagster_internals import (
    KIND_PREFIX,
    VALID_GROUP_NAME_REGEX,
    is_valid_owner,
    is_valid_strict_tag_value,
    is_valid_tag_key,
)

_TAG_HINT = "Use letters, digits, '_', '-' and '.', at most 63 characters."


def parse_group(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    if not _needs_value(draft, keyword, rest, "<name>"):
        return
    group = Word(raw[rest[0].col - 1 :].rstrip(), rest[0].line, rest[0].col)
    if draft.group is not None:
        hint = "An asset belongs to one group; keep one '-- group' line."
        draft.error(keyword, f"group is already set on line {draft.group.line}.", hint)
    elif not VALID_GROUP_NAME_REGEX.match(group.text):
        draft.error(
            group,
            f"group '{group.text}' is not a valid group name.",
            "Use letters, digits and underscores, with '/' between segments.",
        )
    else:
        draft.group = group


def parse_owner(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    if not _needs_value(draft, keyword, rest, "<email or team:name>"):
        return
    owner = rest[0]
    if len(rest) > 1:
        draft.error(rest[1], "'-- owner' takes one owner per line.", "Repeat '-- owner' for each owner.")
    elif not is_valid_owner(owner.text):
        draft.error(
            owner,
            f"owner '{owner.text}' is not an email address or 'team:<name>'.",
            "Write e.g. '-- owner alice@example.com' or '-- owner team:data-eng'.",
        )
    elif owner.text in draft.owners:
        draft.error(owner, f"owner '{owner.text}' is listed twice.", "Remove the repeated owner.")
    else:
        draft.owners[owner.text] = owner


def parse_tags(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    if not _needs_value(draft, keyword, rest, "<k=v,k2=v2>"):
        return
    for item in comma_items(raw[rest[0].col - 1 :].rstrip(), rest[0]):
        key, eq, value = item.text.partition("=")
        if not item.text:
            draft.error(item, "empty tag in the list.", "Write 'tags k=v,k2=v2'.", span=1)
        elif not eq:
            draft.error(item, f"tag '{item.text}' has no value.", "Write 'key=value'.")
        elif not is_valid_tag_key(key):
            draft.error(item, f"tag key '{key}' is not valid.", _TAG_HINT, span=max(1, len(key)))
        elif not is_valid_strict_tag_value(value):
            value_word = Word(value, item.line, item.col + len(key) + 1)
            draft.error(value_word, f"tag value '{value}' is not valid.", _TAG_HINT)
        elif key in draft.tags:
            message = f"tag '{key}' is already set on line {draft.tags[key][1].line}."
            draft.error(Word(key, item.line, item.col), message, "Keep one value per tag key.")
        else:
            draft.tags[key] = (value, item)


def parse_description(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    if _needs_value(draft, keyword, rest, "<text>"):
        draft.description.append(raw[rest[0].col - 1 :].strip())


def parse_kinds(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    if not _needs_value(draft, keyword, rest, "<kind1,kind2>"):
        return
    for item in comma_items(raw[rest[0].col - 1 :].rstrip(), rest[0]):
        if not item.text:
            draft.error(item, "empty kind in the list.", "Write 'kinds a,b'.", span=1)
        elif not is_valid_tag_key(KIND_PREFIX + item.text):
            draft.error(item, f"kind '{item.text}' is not valid.", _TAG_HINT)
        elif item.text in draft.kinds:
            draft.error(item, f"kind '{item.text}' is listed twice.", "Remove the repeated kind.")
        else:
            draft.kinds[item.text] = item


def _needs_value(draft: HeaderDraft, keyword: Word, rest: list[Word], form: str) -> bool:
    if rest:
        return True
    draft.error(keyword, f"'-- {keyword.text}' needs a value.", f"Write '-- {keyword.text} {form}'.")
    return False
