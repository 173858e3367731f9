"""What changed in a table: the schema diff and the rows added, removed and changed between
two Delta versions of it, or between its copies in two lakes (a dev lake and prod).

Rows are matched by key when the table has one (a merge's ``key=``, a history table's key
and ``valid_from``, a seed's key); without one, by the whole row, so a changed row shows as
one removed and one added. Counts come from one aggregation over one full outer join (by
key) or two ``EXCEPT ALL`` (by row); samples are bounded.

Example:
    >>> print(RowDiff("delta://s/t", "version 1", "version 2", ("id",), ["added: email string"],
    ...               1, 0, 1, {"added": ["id=3"], "changed": ["id=1: tier 'silver' -> 'gold'"]}).render())
    delta://s/t: version 1 -> version 2, rows matched by id
    schema: added: email string
    1 added, 0 removed, 1 changed
    + id=3
    ~ id=1: tier 'silver' -> 'gold'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.spec import WriteStrategy, quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: How many rows of each kind a diff shows.
DEFAULT_SAMPLE = 5
_IN_BEFORE, _IN_AFTER = "__assetlake_in_before", "__assetlake_in_after"
#: The two sides' values of a column, after the join on the key.
_B, _A = "__assetlake_before_", "__assetlake_after_"
_SIGNS = {"added": "+", "removed": "-", "changed": "~"}


@dataclass(frozen=True)
class RowDiff:
    """The difference between two versions of a table.

    Attributes:
        key: the columns rows are matched by; empty: by the whole row (no ``changed``).
        schema: the column changes (``added: c type``, ``removed: …``, ``retyped: c a -> b``).
        samples: up to the sample size of rows per kind, rendered.
    """

    table: str
    before: str
    after: str
    key: tuple[str, ...]
    schema: list[str]
    added: int
    removed: int
    changed: int
    samples: Mapping[str, list[str]] = field(default_factory=dict)

    def render(self) -> str:
        matched = f"rows matched by {', '.join(self.key)}" if self.key else "rows matched whole (no key)"
        lines = [f"{self.table}: {self.before} -> {self.after}, {matched}"]
        lines.append(f"schema: {'; '.join(self.schema) if self.schema else 'unchanged'}")
        counts = [f"{self.added} added", f"{self.removed} removed"] + ([f"{self.changed} changed"] if self.key else [])
        lines.append(", ".join(counts))
        for kind in ("added", "removed", "changed"):
            shown = self.samples.get(kind, [])
            lines.extend(f"{_SIGNS[kind]} {row}" for row in shown)
            total = getattr(self, kind)
            if total > len(shown) and shown:
                lines.append(f"{_SIGNS[kind]} … and {total - len(shown)} more")
        return "\n".join(lines)


def diff_rows(
    before: "DataFrame",
    after: "DataFrame",
    key: Sequence[str] = (),
    sample: int = DEFAULT_SAMPLE,
    table: str = "",
    labels: tuple[str, str] = ("before", "after"),
) -> RowDiff:
    """The difference from ``before`` to ``after`` (two DataFrames of one table).

    Raises:
        AssetlakeError: a key column is missing, or the key is not unique on one side.
    """
    schema = _schema_diff(before, after)
    before_cols = {c.lower(): c for c in before.columns}
    after_cols = {c.lower(): c for c in after.columns}
    missing = [k for k in key if k.lower() not in before_cols or k.lower() not in after_cols]
    if missing:
        raise AssetlakeError(f"{table}: key column(s) {missing} are not in both versions. Name other columns with --key, or none to compare whole rows.")
    common = [after_cols[c] for c in after_cols if c in before_cols]
    if not key:
        return _diff_whole_rows(before.select(*common), after.select(*common), schema, sample, table, labels)
    for side, frame in ((labels[0], before), (labels[1], after)):
        duplicated = frame.groupBy(*key).count().where("count > 1").count()
        if duplicated:
            raise AssetlakeError(
                f"{table}: {', '.join(key)} is not unique in {side} ({duplicated} keys appear more than once). "
                "Name a unique key with --key, or none to compare whole rows."
            )
    return _diff_by_key(before, after, list(key), [c for c in common if c.lower() not in {k.lower() for k in key}], schema, sample, table, labels)


def _diff_by_key(before, after, key, values, schema, sample, table, labels) -> RowDiff:
    from pyspark.sql import functions as F

    q = quote_identifier
    b = before.select(*key, *values).withColumn(_IN_BEFORE, F.lit(True))
    a = after.select(*key, *values).withColumn(_IN_AFTER, F.lit(True))
    for c in values:
        b, a = b.withColumnRenamed(c, _B + c), a.withColumnRenamed(c, _A + c)
    joined = b.join(a, on=key, how="full_outer")
    differs = " OR ".join(f"NOT ({q(_B + c)} <=> {q(_A + c)})" for c in values) or "false"
    kind = F.expr(
        f"CASE WHEN {q(_IN_BEFORE)} IS NULL THEN 'added' WHEN {q(_IN_AFTER)} IS NULL THEN 'removed' "
        f"WHEN {differs} THEN 'changed' END"
    )
    kinds = joined.withColumn("__assetlake_kind", kind).where("__assetlake_kind IS NOT NULL")
    counts = {r["__assetlake_kind"]: r["count"] for r in kinds.groupBy("__assetlake_kind").count().collect()}
    samples: dict[str, list[str]] = {}
    for name in ("added", "removed", "changed"):
        if not counts.get(name):
            continue
        rows = kinds.where(F.col("__assetlake_kind") == name).orderBy(*key).limit(sample).collect()
        samples[name] = [_render_keyed(name, row, key, values) for row in rows]
    return RowDiff(table, *labels, tuple(key), schema, counts.get("added", 0), counts.get("removed", 0), counts.get("changed", 0), samples)


def _render_keyed(kind: str, row: Any, key: Sequence[str], values: Sequence[str]) -> str:
    name = ", ".join(f"{k}={row[k]!r}" for k in key)
    if kind == "changed":
        changes = [f"{c} {row[_B + c]!r} -> {row[_A + c]!r}" for c in values if row[_B + c] != row[_A + c]]
        return f"{name}: {', '.join(changes)}"
    side = _A if kind == "added" else _B
    rest = ", ".join(f"{c}={row[side + c]!r}" for c in values)
    return f"{name}, {rest}" if rest else name


def _diff_whole_rows(before, after, schema, sample, table, labels) -> RowDiff:
    removed, added = before.exceptAll(after), after.exceptAll(before)
    counts = {"added": added.count(), "removed": removed.count()}
    samples = {
        name: [", ".join(f"{c}={row[c]!r}" for c in frame.columns) for row in frame.limit(sample).collect()]
        for name, frame in (("added", added), ("removed", removed))
        if counts[name]
    }
    return RowDiff(table, *labels, (), schema, counts["added"], counts["removed"], 0, samples)


def _schema_diff(before: "DataFrame", after: "DataFrame") -> list[str]:
    old = {f.name.lower(): (f.name, f.dataType.simpleString()) for f in before.schema.fields}
    new = {f.name.lower(): (f.name, f.dataType.simpleString()) for f in after.schema.fields}
    changes = [f"added: {n} {t}" for k, (n, t) in new.items() if k not in old]
    changes += [f"removed: {n} {t}" for k, (n, t) in old.items() if k not in new]
    changes += [f"retyped: {n} {old[k][1]} -> {t}" for k, (n, t) in new.items() if k in old and old[k][1] != t]
    return changes


def row_changes(strategy: str, operation_metrics: Mapping[str, str]) -> Optional[dict[str, int]]:
    """The rows a merge or history commit changed, by kind, from its own Delta metrics (no
    extra Spark work); ``None`` for other writes.

    Example:
        >>> row_changes("merge", {"numTargetRowsInserted": "2", "numTargetRowsUpdated": "1", "numTargetRowsDeleted": "0"})
        {'inserted': 2, 'updated': 1, 'deleted': 0}
        >>> row_changes("history", {"numTargetRowsInserted": "3", "numTargetRowsUpdated": "1"})
        {'versions_opened': 3, 'versions_closed': 1}
        >>> row_changes("replace", {"numOutputRows": "5"}) is None
        True
    """
    def metric(name: str) -> int:
        return int(operation_metrics.get(name) or 0)

    if strategy == WriteStrategy.MERGE.value and "numTargetRowsInserted" in operation_metrics:
        return {"inserted": metric("numTargetRowsInserted"), "updated": metric("numTargetRowsUpdated"), "deleted": metric("numTargetRowsDeleted")}
    if strategy == WriteStrategy.HISTORY.value and "numTargetRowsInserted" in operation_metrics:
        return {"versions_opened": metric("numTargetRowsInserted"), "versions_closed": metric("numTargetRowsUpdated")}
    return None


def diff_table(
    spark: Any,
    uri: Any,
    path: str,
    key: Sequence[str],
    from_version: Optional[int] = None,
    to_version: Optional[int] = None,
    against_path: Optional[str] = None,
    against_label: str = "",
    sample: int = DEFAULT_SAMPLE,
) -> RowDiff:
    """The diff of the table at ``path``: from ``from_version`` (default: the one before
    ``to_version``; before version 0: no rows) to ``to_version`` (default: the latest); or,
    with ``against_path``, from that copy of the table (another lake's, e.g. prod) at
    ``from_version`` (default: its latest) to this one at ``to_version``.

    The defaults pass over commits that change no rows (:data:`METADATA_ONLY_OPERATIONS`:
    an edited description or property, ``OPTIMIZE``): "the latest" is the newest commit that
    changed rows, and "the one before" the one that changed rows before it.

    Raises:
        AssetlakeError: a table or version that does not exist; a key that is not unique.
    """
    data_versions = _data_versions(spark, path) if to_version is None or (from_version is None and against_path is None) else []
    if to_version is None and data_versions:
        to_version = data_versions[0]
    after, to_version = _read_version(spark, uri, path, to_version, "Materialize it first, or check --lake-root.")
    if against_path is not None:
        before, from_version = _read_version(spark, uri, against_path, from_version, "Check --against.")
        labels = (f"{against_label} version {from_version}", f"this lake's version {to_version}")
    else:
        if from_version is None:
            earlier = [v for v in data_versions if v < to_version]
            from_version = earlier[0] if earlier else to_version - 1
        if from_version >= 0:
            before, _ = _read_version(spark, uri, path, from_version, "")
            before_label = f"version {from_version}"
        else:
            before, before_label = after.limit(0), "no table"
        labels = (before_label, f"version {to_version}")
    return diff_rows(before, after, key, sample, str(uri), labels)


#: Delta operations that change no rows; a diff's default versions pass over them.
METADATA_ONLY_OPERATIONS = frozenset({
    "SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "CHANGE COLUMN", "CHANGE COLUMNS", "RENAME COLUMN",
    "CLUSTER BY", "OPTIMIZE", "ADD CONSTRAINT", "DROP CONSTRAINT", "UPGRADE PROTOCOL",
    "VACUUM START", "VACUUM END",
})
#: How many recent commits the defaults look at.
_DATA_VERSION_DEPTH = 100


def _data_versions(spark: Any, path: str) -> list[int]:
    """The recent versions of the table at ``path`` whose commit changed rows, newest first."""
    from assetlake_dagster.lake.delta_sql import history_rows

    rows = history_rows(spark, path, _DATA_VERSION_DEPTH, "version", "operation") or []
    return [int(r["version"]) for r in rows if r["operation"] not in METADATA_ONLY_OPERATIONS]


def _read_version(spark: Any, uri: Any, path: str, version: Optional[int], missing_hint: str) -> tuple["DataFrame", int]:
    """The table at ``path`` as of ``version`` (default: its latest), and that version."""
    from assetlake_dagster.lake.delta_sql import read
    from assetlake_dagster.lake.versions import current_version

    latest = current_version(spark, path)
    if latest is None:
        raise AssetlakeError(f"{uri}: no Delta table at {path}. {missing_hint}".rstrip())
    version = latest if version is None else version
    if not 0 <= version <= latest:
        raise AssetlakeError(f"{uri}: version {version} does not exist at {path}; its versions are 0 to {latest}.")
    return read(spark, path, version), version
