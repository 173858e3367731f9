"""``-- schedule <cron> [tz=<zone>]`` and ``-- automation eager|on_cron <cron> [tz=<zone>]|on_missing``.

When an asset runs by itself: on a cron schedule (a Dagster schedule), or by a declarative
automation condition (evaluated by the automation sensor). A cron is checked with Dagster's
own validator, so a line that loads here is one ``ScheduleDefinition`` and
``AutomationCondition.on_cron`` accept; a bad cron is reported at its first field, the
message naming the bad one::

    -- schedule 0 2 * * * tz=Europe/Berlin
    -- automation on_cron 0 * * * *
"""

from typing import Optional

from assetlake_dagster.annotations.fields import FieldLine, HeaderField
from assetlake_dagster.annotations.header import HeaderDraft, Word, option_name, parse_timezone
from assetlake_dagster.defs.dagster_internals import has_out_of_range_cron_interval, is_valid_cron_string
from assetlake_dagster.errors import did_you_mean
from assetlake_dagster.spec import AutomationKind, AutomationSpec, ScheduleSpec

SCHEDULE_FORM = "-- schedule <minute> <hour> <day-of-month> <month> <day-of-week> [tz=<zone>]"
AUTOMATION_FORM = "-- automation eager', '-- automation on_cron <cron> [tz=<zone>]' or '-- automation on_missing"
CRON_HINT = "Write five fields: minute hour day-of-month month day-of-week, e.g. '0 2 * * *'."
#: The five cron fields, in order, as messages name them, with the values each takes.
CRON_FIELDS = (
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day-of-month", "1-31"),
    ("month", "1-12 or JAN-DEC"),
    ("day-of-week", "0-6 or SUN-SAT"),
)
#: The ``@`` aliases Dagster's cron validator accepts.
CRON_ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
#: Options a cron line takes after its cron.
CRON_OPTIONS = ("tz=",)


def parse_schedule(line: FieldLine) -> Optional[ScheduleSpec]:
    """A ``-- schedule`` line's :class:`ScheduleSpec`."""
    draft, keyword = line.draft, line.keyword
    parsed = parse_cron(draft, keyword, line.rest, "'-- schedule'", SCHEDULE_FORM)
    if parsed is None:
        return None
    cron, tz = parsed
    return ScheduleSpec(cron, tz, location=draft.src.location(keyword.line, keyword.col))


def parse_automation(line: FieldLine) -> Optional[AutomationSpec]:
    """An ``-- automation`` line's :class:`AutomationSpec`."""
    draft, keyword, rest = line.draft, line.keyword, line.rest
    if not rest:
        draft.error(keyword, "'-- automation' needs a condition.", f"Write '{AUTOMATION_FORM}'.")
        return None
    kind_word, words = rest[0], rest[1:]
    try:
        kind = AutomationKind(kind_word.text)
    except ValueError:
        kinds = [k.value for k in AutomationKind]
        hint = did_you_mean(kind_word.text, kinds).strip() or f"Conditions are: {', '.join(kinds)}."
        draft.error(kind_word, f"unknown automation condition '{kind_word.text}'.", hint)
        return None
    location = draft.src.location(keyword.line, keyword.col)
    if kind is not AutomationKind.ON_CRON:
        if words:
            draft.error(
                words[0],
                f"'{kind.value}' takes nothing after it, got '{words[0].text}'.",
                f"Write '-- automation {kind.value}' alone; only 'on_cron' takes a cron.",
            )
            return None
        return AutomationSpec(kind, location=location)
    parsed = parse_cron(draft, kind_word, words, "'on_cron'", "-- automation on_cron <cron> [tz=<zone>]")
    if parsed is None:
        return None
    return AutomationSpec(kind, cron=parsed[0], timezone=parsed[1], location=location)


def parse_cron(
    draft: HeaderDraft, anchor: Word, words: list[Word], what: str, form: str
) -> Optional[tuple[str, Optional[str]]]:
    """``<cron> [tz=<zone>]`` from ``words``: the cron (fields one space apart) and the zone.

    Args:
        anchor: the word a missing cron is reported at (the keyword before the cron).
        what: how the message names the line, e.g. ``'-- schedule'``.
        form: the line's full form, for hints.

    Returns:
        ``(cron, zone or None)``, or ``None`` after reporting why not.
    """
    cron_words: list[Word] = []
    zone: Optional[Word] = None
    for word in words:
        if "=" not in word.text:
            if zone is not None:
                draft.error(zone, "'tz=' must come after the cron schedule.", f"Write '{form}'.")
                return None
            cron_words.append(word)
            continue
        name = option_name(word.text)
        if name not in CRON_OPTIONS:
            hint = did_you_mean(name, CRON_OPTIONS).strip()
            draft.error(word, f"unknown option '{word.text}'.", hint or f"Write '{form}'.")
            return None
        if zone is not None:
            draft.error(word, "option 'tz=' is given twice.", "Keep one 'tz='.")
            return None
        zone = word
    if not cron_words:
        draft.error(anchor, f"{what} needs a cron schedule.", f"Write '{form}', e.g. '0 2 * * *' for 02:00 every day.")
        return None
    cron = _check_cron(draft, cron_words)
    tz = parse_timezone(draft, zone) if zone is not None else None
    if cron is None or (zone is not None and tz is None):
        return None
    return cron, tz


def _check_cron(draft: HeaderDraft, words: list[Word]) -> Optional[str]:
    """The cron of ``words``, or ``None`` after reporting, underlining the whole cron."""
    cron = " ".join(w.text for w in words)
    first, last = words[0], words[-1]
    span = last.col + len(last.text) - first.col
    fields = [w.text for w in words]
    if _is_valid(cron):
        for index in range(len(fields)) if len(fields) == len(CRON_FIELDS) else ():
            if _out_of_range(_alone(fields, index)):
                name, values = CRON_FIELDS[index]
                draft.error(
                    first,
                    f"the step in '{fields[index]}' is larger than the {name} field ({values}), "
                    "so Dagster would run it more often than written.",
                    "Use a step that fits the field or list the values, e.g. '0 */2 * * *' for every two hours.",
                    span=span,
                )
                return None
        return cron
    if cron.startswith("@") and len(words) == 1:
        hint = did_you_mean(cron.lower(), CRON_ALIASES).strip()
        draft.error(first, f"unknown cron alias '{cron}'.", hint or CRON_HINT)
        return None
    if len(fields) != len(CRON_FIELDS):
        draft.error(first, f"cron schedule '{cron}' has {len(fields)} fields, not 5.", CRON_HINT, span=span)
        return None
    bad = next((i for i in range(len(fields)) if not _is_valid(_alone(fields, i))), None)
    if bad is not None:
        name, values = CRON_FIELDS[bad]
        message = f"cron schedule '{cron}' is not valid: '{fields[bad]}' is not a valid {name} ({values})."
        draft.error(first, message, CRON_HINT, span=span)
    else:  # every field is valid alone, not together: Dagster refuses 30 and 31 February
        message = f"cron schedule '{cron}' is not valid: its day and month never occur together."
        draft.error(first, message, "Pick a day the month has, e.g. '0 2 28 2 *'.", span=span)
    return None


def _alone(fields: list[str], index: int) -> str:
    """The cron with every field but ``index`` a ``*``: is this one field valid by itself?"""
    return " ".join(field if i == index else "*" for i, field in enumerate(fields))


def _is_valid(cron: str) -> bool:
    try:
        return is_valid_cron_string(cron)
    # Hostile text must become a located error, whatever the cron library raises on it.
    except Exception:  # noqa: BLE001
        return False


def _out_of_range(cron: str) -> bool:
    try:
        return bool(has_out_of_range_cron_interval(cron))
    except Exception:  # noqa: BLE001 - valid crons only; a failure means no known problem
        return False


#: The lines that say when an asset runs by itself, one declaration each.
FIELDS = (
    HeaderField(
        "schedule", into="schedule", parse=parse_schedule, noun="a schedule",
        once_hint="An asset has one schedule; keep one '-- schedule' line.",
    ),
    HeaderField(
        "automation", into="automation", parse=parse_automation, noun="automation",
        once_hint="An asset has one automation condition; keep one '-- automation' line.",
    ),
)
