"""Which assets' code changed against what a lake last ran, and what downstream that makes
stale (``assetlake plan --changed``).

Each managed commit's stamp carries the code version of the asset that wrote it (a SQL
file's or seed's hash), so a lake itself says which code its tables hold: no Dagster
instance of the prod deployment is needed. A table is *changed* when its file's code
version differs from the one its latest stamped commit recorded, *new* when the lake has no
table for it, *unknown* when no recent commit recorded one (written before stamps carried
it, or by hand); every asset downstream of those is *stale*.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Optional

from assetlake_dagster.lake.delta_log import DeltaLog, DeltaLogError, DeltaLogExpiredError, DeltaTableMissingError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import TableUri

#: How many of a table's latest commits are searched for a stamp (maintenance commits have none).
SEARCHED_COMMITS = 50


@dataclass(frozen=True)
class CodeChange:
    """One asset whose code differs from what the lake holds.

    Attributes:
        status: ``changed``, ``new`` or ``unknown``.
        ran: the code version the lake's table was last written with, if known.
        now: the file's code version.
    """

    uri: TableUri
    path: str
    status: str
    ran: Optional[str]
    now: str


@dataclass(frozen=True)
class ChangeReport:
    changed: tuple[CodeChange, ...]
    #: Assets downstream of a changed one, each with the changed table it comes from.
    stale: tuple[tuple[TableUri, TableUri], ...]

    def render(self, lake_root: str) -> str:
        if not self.changed:
            return f"nothing changed: every file's code version is the one {lake_root} last ran"
        lines = [f"changed against {lake_root} (code versions):"]
        for c in self.changed:
            if c.status == "changed":
                what = f"ran {(c.ran or '')[:12]}, now {c.now[:12]}"
            else:
                what = "not in that lake yet" if c.status == "new" else "no code version recorded there"
            lines.append(f"  {c.uri}  {c.path}: {what}")
        lines.append("stale downstream:" if self.stale else "stale downstream: none")
        lines.extend(f"  {uri} (from {cause})" for uri, cause in self.stale)
        return "\n".join(lines)


def code_changes(lake: Lake, assets: Iterable[tuple[TableUri, str, str, Sequence[TableUri]]]) -> ChangeReport:
    """Compare each asset's code version with the one ``lake`` last recorded for its table.

    Args:
        assets: ``(table, file, code version, upstream tables)`` of each asset of the project.
    """
    assets = list(assets)
    changed = []
    for uri, path, now, _ in assets:
        status, ran = _recorded(lake, uri, now)
        if status is not None:
            changed.append(CodeChange(uri, path, status, ran, now))
    readers: dict[TableUri, list[TableUri]] = {}
    for uri, _, _, upstreams in assets:
        for upstream in upstreams:
            readers.setdefault(upstream, []).append(uri)
    stale: dict[TableUri, TableUri] = {}
    todo = [(c.uri, c.uri) for c in changed]
    seen = {c.uri for c in changed}
    while todo:
        table, cause = todo.pop(0)
        for reader in readers.get(table, ()):
            if reader not in seen:
                seen.add(reader)
                stale[reader] = cause
                todo.append((reader, cause))
    return ChangeReport(tuple(changed), tuple(stale.items()))


def _recorded(lake: Lake, uri: TableUri, now: str) -> tuple[Optional[str], Optional[str]]:
    """``(status, code version ran)``; status ``None`` when unchanged."""
    try:
        log = DeltaLog.open(lake.table_path(uri), lake.files)
        latest = log.latest_version
        try:
            commits = log.read_commits(max(-1, latest - SEARCHED_COMMITS), latest)
        except DeltaLogExpiredError as gone:  # log cleanup removed the oldest of them
            commits = log.read_commits(gone.first_readable - 1, latest)
    except DeltaTableMissingError:
        return "new", None
    except DeltaLogError:
        return "unknown", None
    asset = f"{uri.schema}/{uri.table}"
    for commit in reversed(commits):
        stamp = _stamp(commit.user_metadata)
        if stamp.get("asset") == asset and stamp.get("code_version"):
            ran = stamp["code_version"]
            return (None, ran) if ran == now else ("changed", ran)
    return "unknown", None


def _stamp(user_metadata: Optional[str]) -> dict:
    from assetlake_dagster.writes.commit import STAMP_TAG

    try:
        stamp = json.loads(user_metadata or "{}").get(STAMP_TAG)
    except (ValueError, AttributeError):
        return {}
    return stamp if isinstance(stamp, dict) else {}
