"""``-- maintain <cron> [tz=<zone>] [vacuum=<duration>|vacuum=window]``: scheduled maintenance.

On the cron, a maintenance job ``OPTIMIZE``s the table (compaction; clustering when it
declares ``cluster_by``) and, with ``vacuum=``, then ``VACUUM``s it keeping the files of
the versions younger than that (``window``: the table's restore window), under the guard of
:mod:`assetlake_dagster.lake.maintenance`, with the versions its code location's inputs pin,
by the path ``assetlake vacuum --project-dir`` takes (:func:`assetlake_dagster.defs.maintenance_jobs.guarded_vacuum`)::

    -- maintain 0 3 * * 0 vacuum=30d
    -- maintain @daily tz=Europe/Berlin vacuum=window
"""

import re
from typing import Optional

from assetlake_dagster.annotations.automation import parse_cron
from assetlake_dagster.annotations.fields import FieldLine, HeaderField
from assetlake_dagster.annotations.header import Word, option_name
from assetlake_dagster.spec import MaintainSpec

MAINTAIN_FORM = "-- maintain <cron> [tz=<zone>] [vacuum=<duration>|vacuum=window]"
VACUUM_HINT = "Write 'vacuum=<n>h' or 'vacuum=<n>d' (hours or days to keep), or 'vacuum=window' for the table's restore window."
_HOURS = {"h": 1, "d": 24}
_VACUUM_RE = re.compile(r"([0-9]{1,5})([a-z]+)")


def parse_maintain(line: FieldLine) -> Optional[MaintainSpec]:
    draft, keyword = line.draft, line.keyword
    vacuum_words = [w for w in line.rest if option_name(w.text) == "vacuum="]
    others = [w for w in line.rest if option_name(w.text) != "vacuum="]
    if len(vacuum_words) > 1:
        draft.error(vacuum_words[1], "option 'vacuum=' is given twice.", "Keep one 'vacuum='.")
        return None
    parsed = parse_cron(draft, keyword, others, "'-- maintain'", MAINTAIN_FORM)
    vacuum = _vacuum(line, vacuum_words[0]) if vacuum_words else (False, None)
    if parsed is None or vacuum is None:
        return None
    cron, tz = parsed
    return MaintainSpec(cron, tz, vacuum=vacuum[0], retain_hours=vacuum[1], location=draft.src.location(keyword.line, keyword.col))


def _vacuum(line: FieldLine, word: Word) -> Optional[tuple[bool, Optional[int]]]:
    text = word.text[len("vacuum=") :]
    value = Word(text, word.line, word.col + len("vacuum="))
    if text == "window":
        return True, None
    match = _VACUUM_RE.fullmatch(text)
    if match is None or match.group(2) not in _HOURS:
        line.error(value if text else word, f"'{text}' is not a retention." if text else "'vacuum=' needs a retention.", VACUUM_HINT)
        return None
    hours = int(match.group(1)) * _HOURS[match.group(2)]
    if hours < 1:
        line.error(value, f"'vacuum={text}' keeps nothing.", VACUUM_HINT)
        return None
    return True, hours


#: The maintenance line, declared once.
FIELDS = (
    HeaderField(
        "maintain", into="maintain", parse=parse_maintain, noun="maintenance",
        once_hint="A table has one maintenance schedule; keep one '-- maintain' line.",
    ),
)
