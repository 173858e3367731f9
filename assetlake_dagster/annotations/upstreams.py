"""``-- on delta://<schema>/<table> [window=<n><unit>]``: an upstream declared by hand.

Upstreams the SQL reads are inferred; a declared one adds a dependency the SQL does not
show (a manual script's input) or reads only the trailing ``window=`` partitions.
"""

import re
from typing import Optional

from assetlake_dagster.annotations.header import HeaderDraft, Word, option_name, parse_uri
from assetlake_dagster.errors import did_you_mean
from assetlake_dagster.spec import WINDOW_UNITS, UpstreamSpec, WindowSpec


def parse_on(draft: HeaderDraft, keyword: Word, rest: list[Word], raw: str) -> None:
    """Parse an ``-- on`` line into ``draft.upstreams``."""
    if not rest:
        draft.error(keyword, "'-- on' needs a table URI.", "Write '-- on delta://<schema>/<table>'.")
        return
    uri = parse_uri(draft, rest[0], target=False)
    window = None
    for word in rest[1:]:
        if word.text.startswith("window=") and window is None:
            window = _window(draft, word)
            if window is None:
                return
        else:
            hint = did_you_mean(option_name(word.text), ["window="]).strip()
            draft.error(
                word, f"unknown option '{word.text}'.", hint or "Declare one table per '-- on' line."
            )
    if uri is None:
        return
    if uri in draft.upstreams:
        first = draft.upstreams[uri].location
        message = f"'{uri}' is already declared on line {first.line}."
        draft.error(rest[0], message, "Remove the repeated line.")
        return
    location = draft.src.location(rest[0].line, rest[0].col)
    draft.upstreams[uri] = UpstreamSpec(uri, declared=True, window=window, location=location)


#: The largest window per unit: 100 years of partitions.
MAX_WINDOW = {"h": 100 * 366 * 24, "d": 100 * 366, "w": 100 * 53, "mo": 100 * 12}


def _window(draft: HeaderDraft, word: Word) -> Optional[WindowSpec]:
    text = word.text[len("window=") :]
    match = re.fullmatch(r"([0-9]+)([a-z]+)", text)
    if match is None or match.group(2) not in WINDOW_UNITS or int(match.group(1)) < 1:
        units = ", ".join(f"{u} ({k.value})" for u, k in WINDOW_UNITS.items())
        draft.error(word, f"window '{text}' is not <count><unit>.", f"Write e.g. 'window=7d'; units: {units}.")
        return None
    largest = MAX_WINDOW[match.group(2)]
    if int(match.group(1)) > largest:
        # A window reaching past year 1 overflowed Python's datetime when Dagster mapped it.
        draft.error(
            word,
            f"window={text} reaches back more than 100 years.",
            f"Use at most window={largest}{match.group(2)}; to read all of the upstream, drop window=.",
        )
        return None
    return WindowSpec(int(match.group(1)), WINDOW_UNITS[match.group(2)])
