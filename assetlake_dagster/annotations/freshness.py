"""``-- freshness fail=<duration> [warn=<duration>]`` or ``-- freshness cron <cron> lower_bound=<duration> [tz=<zone>]``.

How fresh the asset must stay, as Dagster's ``FreshnessPolicy``: a time window (the last
materialization at most ``fail=`` old, a warning past ``warn=``), or a cron deadline (by
each tick of the cron, a materialization within ``lower_bound=`` before it). A duration is
a whole number and a unit, ``m``, ``h`` or ``d``::

    -- freshness fail=26h warn=24h
    -- freshness cron 0 9 * * * lower_bound=1h tz=Europe/Berlin

The line is checked as Dagster checks the policy, so a line that loads here is one
``FreshnessPolicy`` accepts.
"""

import re
from datetime import timedelta
from typing import Optional

from assetlake_dagster.annotations.automation import parse_cron
from assetlake_dagster.annotations.fields import FieldLine, HeaderField
from assetlake_dagster.annotations.header import HeaderDraft, Word, option_name
from assetlake_dagster.errors import did_you_mean
from assetlake_dagster.spec import FreshnessSpec

WINDOW_FORM = "-- freshness fail=<duration> [warn=<duration>]"
CRON_FORM = "-- freshness cron <cron> lower_bound=<duration> [tz=<zone>]"
FORMS = f"'{WINDOW_FORM}' or '{CRON_FORM}'"
DURATION_UNITS = {"m": "minutes", "h": "hours", "d": "days"}
DURATION_HINT = "Write a whole number and a unit, m (minutes), h (hours) or d (days), e.g. '26h'."
#: The words a ``-- freshness`` line takes.
WINDOW_OPTIONS = ("fail=", "warn=")
CRON_OPTIONS = ("lower_bound=", "tz=")
_DURATION_RE = re.compile(r"([0-9]{1,6})([a-z]+)")


def parse_freshness(line: FieldLine) -> Optional[FreshnessSpec]:
    """A ``-- freshness`` line's :class:`FreshnessSpec`."""
    draft, keyword, rest = line.draft, line.keyword, line.rest
    if not rest:
        draft.error(keyword, "'-- freshness' needs a window or a cron deadline.", f"Write {FORMS}.")
        return None
    location = draft.src.location(keyword.line, keyword.col)
    if rest[0].text == "cron":
        spec = _cron_form(draft, rest[0], rest[1:])
    else:
        spec = _window_form(draft, keyword, rest)
    return None if spec is None else FreshnessSpec(**spec, location=location)


def _window_form(draft: HeaderDraft, keyword: Word, words: list[Word]) -> Optional[dict]:
    given: dict[str, Word] = {}
    for word in words:
        name = option_name(word.text)
        if name == "cron":
            draft.error(word, "'cron' must come right after 'freshness'.", f"Write '{CRON_FORM}'.")
            return None
        if name in CRON_OPTIONS:
            draft.error(word, f"'{name}' belongs to a cron deadline.", f"Write '{CRON_FORM}'.")
            return None
        if name not in WINDOW_OPTIONS:
            _unknown(draft, word, name)
            return None
        if name in given:
            draft.error(word, f"option '{name}' is given twice.", f"Keep one '{name}'.")
            return None
        given[name] = word
    if "fail=" not in given:
        draft.error(keyword, "'-- freshness' needs 'fail=', the window after which the asset fails.", f"Write '{WINDOW_FORM}', e.g. 'fail=26h'.")
        return None
    fail = _duration(draft, given["fail="])
    warn = _duration(draft, given["warn="]) if "warn=" in given else None
    if fail is None or ("warn=" in given and warn is None):
        return None
    if warn is not None and warn >= fail:
        draft.error(
            given["warn="],
            f"'{given['warn='].text}' is not shorter than '{given['fail='].text}'.",
            "The warning comes before the failure: make 'warn=' the shorter window, e.g. 'fail=26h warn=24h'.",
        )
        return None
    return {"fail": fail, "warn": warn}


def _cron_form(draft: HeaderDraft, cron_keyword: Word, words: list[Word]) -> Optional[dict]:
    lower: Optional[Word] = None
    cron_words: list[Word] = []
    for word in words:
        name = option_name(word.text)
        if "=" not in word.text or name == "tz=":
            cron_words.append(word)  # parse_cron reads the cron and 'tz='
        elif name in WINDOW_OPTIONS:
            draft.error(word, f"'{name}' belongs to a time window, not a cron deadline.", f"Write {FORMS}.")
            return None
        elif name != "lower_bound=":
            _unknown(draft, word, name)
            return None
        elif lower is not None:
            draft.error(word, "option 'lower_bound=' is given twice.", "Keep one 'lower_bound='.")
            return None
        else:
            lower = word
    parsed = parse_cron(draft, cron_keyword, cron_words, "'-- freshness cron'", CRON_FORM)
    if parsed is None:
        return None
    if lower is None:
        draft.error(
            cron_keyword,
            "a cron deadline needs 'lower_bound=', how long before the deadline a materialization counts.",
            f"Write '{CRON_FORM}', e.g. 'lower_bound=1h'.",
        )
        return None
    bound = _duration(draft, lower)
    if bound is None:
        return None
    cron, tz = parsed
    try:
        _dagster_cron_policy(cron, bound, tz)
    except Exception:  # noqa: BLE001 - the one check left is the bound against the cron's interval
        draft.error(
            lower,
            f"'{lower.text}' is longer than the time between two ticks of '{cron}'.",
            "Make 'lower_bound=' at most the cron's smallest interval, e.g. 'lower_bound=1h' for a daily cron.",
        )
        return None
    return {"cron": cron, "lower_bound": bound, "timezone": tz}


def _dagster_cron_policy(cron: str, bound: timedelta, tz: Optional[str]):
    import dagster as dg

    return dg.FreshnessPolicy.cron(deadline_cron=cron, lower_bound_delta=bound, timezone=tz or "UTC")


def _duration(draft: HeaderDraft, word: Word) -> Optional[timedelta]:
    """The duration after the ``=`` of ``word``, or ``None`` after reporting why not."""
    name = option_name(word.text)
    text = word.text[len(name) :]
    value = Word(text, word.line, word.col + len(name))
    match = _DURATION_RE.fullmatch(text)
    if not text:
        draft.error(word, f"'{name}' needs a duration.", DURATION_HINT)
        return None
    if match is None or match.group(2) not in DURATION_UNITS:
        unit = match.group(2) if match else ""
        hint = did_you_mean(unit, DURATION_UNITS).strip() if unit else ""
        draft.error(value, f"'{text}' is not a duration.", hint or DURATION_HINT)
        return None
    duration = timedelta(**{DURATION_UNITS[match.group(2)]: int(match.group(1))})
    if duration < timedelta(minutes=1):
        draft.error(value, f"'{name}{text}' is shorter than a minute.", "Dagster checks freshness to the minute; give at least '1m'.")
        return None
    return duration


def _unknown(draft: HeaderDraft, word: Word, name: str) -> None:
    hint = did_you_mean(name, (*WINDOW_OPTIONS, *CRON_OPTIONS, "cron")).strip()
    draft.error(word, f"unknown freshness option '{word.text}'.", hint or f"Write {FORMS}.")


#: The freshness line, declared once.
FIELDS = (
    HeaderField(
        "freshness", into="freshness", parse=parse_freshness, noun="freshness",
        once_hint="An asset has one freshness policy; keep one '-- freshness' line.",
    ),
)
