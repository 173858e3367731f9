"""Schema history: a version number per table schema, and what changed between versions.

Each materialization records ``assetlake/schema_version``: 1 for the first schema a table
is seen with, the previous materialization's number while names, types, nullability and
order stay the same, and one more when any of them changes, with the change itself as
``assetlake/schema_diff`` (one line per added, removed, renamed (respelt in another case),
retyped or re-nulled column, and the new order if only the order moved). The previous schema
is the one recorded on the asset's previous materialization, so the numbering follows what
Dagster shows, run after run.

Which changes a write accepts is each strategy's policy (:mod:`assetlake_dagster.writes.base`);
this module only numbers and describes what was committed.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ColumnShape:
    """One column as the schema history compares it."""

    name: str
    type: str
    nullable: bool


def schema_diff(previous: Sequence[ColumnShape], current: Sequence[ColumnShape]) -> list[str]:
    """What changed from ``previous`` to ``current``, one line per change (``[]``: nothing).

    Example:
        >>> a, b = ColumnShape("id", "int", True), ColumnShape("score", "double", True)
        >>> schema_diff([a, b], [ColumnShape("score", "int", True), ColumnShape("note", "string", True)])
        ['removed id int', 'added note string', 'retyped score double -> int']
        >>> schema_diff([a, b], [b, a])
        ['reordered id, score -> score, id']
    """
    before = {c.name.lower(): c for c in previous}
    after = {c.name.lower(): c for c in current}
    changes = [f"removed {c.name} {c.type}" for k, c in before.items() if k not in after]
    changes += [f"added {c.name} {c.type}" for k, c in after.items() if k not in before]
    for k, c in after.items():
        old = before.get(k)
        if old is None:
            continue
        if old.name != c.name:  # Delta names are case-insensitive: the same column, respelt
            changes.append(f"renamed {old.name} -> {c.name}")
        if old.type != c.type:
            changes.append(f"retyped {c.name} {old.type} -> {c.type}")
        if old.nullable != c.nullable:
            changes.append(f"{c.name} {'nullable' if old.nullable else 'not null'} -> {'nullable' if c.nullable else 'not null'}")
    if not changes and [c.name.lower() for c in previous] != [c.name.lower() for c in current]:
        changes.append(f"reordered {', '.join(c.name for c in previous)} -> {', '.join(c.name for c in current)}")
    return changes


def next_schema_version(
    previous_version: Optional[int], previous: Optional[Sequence[ColumnShape]], current: Sequence[ColumnShape]
) -> tuple[int, list[str]]:
    """The schema version of ``current`` after a materialization recorded as
    (``previous_version``, ``previous``), and the diff when it changed.

    Example:
        >>> cols = [ColumnShape("id", "int", True)]
        >>> next_schema_version(None, None, cols), next_schema_version(1, cols, cols)
        ((1, []), (1, []))
        >>> next_schema_version(1, cols, cols + [ColumnShape("x", "string", True)])
        (2, ['added x string'])
    """
    if previous_version is None or previous is None:
        return 1, []
    diff = schema_diff(previous, current)
    return (previous_version + 1, diff) if diff else (previous_version, [])
