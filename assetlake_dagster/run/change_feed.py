"""Reading only what changed upstream: a merge's run over its upstream's change data feed.

When the last run of a ``key=`` merge read version ``a`` of its one upstream and the
upstream is now at ``b`` (:class:`~assetlake_dagster.run.decision.Run` ``changes_since``),
and the file's SELECT has a shape that allows it
(:func:`~assetlake_dagster.sql.incremental.incremental_shape`), the run reads Delta's change
data feed of versions ``a+1..b`` instead of the whole upstream:

* the rows the upstream **gained** and **lost** between ``a`` and ``b``, as multisets: each
  distinct row counted +1 per post-image (``insert``, ``update_postimage``) and -1 per
  pre-image (``delete``, ``update_preimage``); a positive net is gained, a negative lost. A
  row inserted and updated twice in the range telescopes to its last image; one inserted and
  deleted, to nothing.
* **row-local** SELECT: it runs over the gained rows. Every output row the full read would
  produce and the table does not hold already comes from one of them; the merge upserts
  them, as the full read's merge would. By default a merge never deletes, so lost rows
  change nothing; with ``deletes=delete`` the SELECT also runs over the lost rows, and the
  keys they produced that the gained rows do not produce again are deleted (the keys of a
  full read are unique, so no unchanged row produces them).
* **grouped on the key**: the groups of every gained or lost row are recomputed over the
  upstream at ``b`` (a semi-join on the group columns, NULL-safe); every other group's
  result is what the table holds. With ``deletes=delete`` a recomputed group that yields
  no row (none left, or filtered out) is deleted.

The rows go to the IO manager's merge as a change set
(:data:`~assetlake_dagster.writes.merge.DELETED_MARKER` marks the keys to delete).

Anything it cannot vouch for reads in full, with the reason in the log: the feed not
enabled over the range, a schema or property change, versions no longer in the log or
vacuumed, or types Spark cannot group by (maps).

An ``append new_rows`` (:func:`read_new_rows`) always reads the feed, from the upstream
versions its table's rows were read up to (:func:`appended_up_to`, stamped on its commits)
to the upstream's latest, and appends the SELECT over the gained rows: there is no full read
to fall back on (it would append every row again), so what the feed cannot serve fails the
run. Its first run reads the upstream in full, at one version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from assetlake_dagster.sql.incremental import GROUPED, IncrementalShape, incremental_shape
from assetlake_dagster.lake.delta_log import DeltaLog
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.lake.table_properties import CHANGE_DATA_FEED_PROPERTY, is_enabled
from assetlake_dagster.spark.error_logs import errors_reported_by_caller
from assetlake_dagster.spark.session import local_checkpoint
from assetlake_dagster.spec import SqlAssetSpec, TableUri, quote_identifier
from assetlake_dagster.sql.rewrite import with_tables_replaced
from assetlake_dagster.run.sql_runner import run_sql_file
from assetlake_dagster.writes.commit import READ_FIELD, stamp_in
from assetlake_dagster.writes.merge import DELETED_MARKER

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, SparkSession

    from assetlake_dagster.run.decision import RunInputs

#: Run metadata: how the run read its inputs (``{"mode": "change_feed" | "full", ...}``).
READ_KEY = "assetlake/read"
_GAINED = ("insert", "update_postimage")
#: The net count of a row over the range (post-images +1, pre-images -1).
_NET = "__assetlake_net"
HOW_TO_ENABLE = (
    f"set it with '-- properties {CHANGE_DATA_FEED_PROPERTY}=true' in the file that writes it "
    f"(or change_data_feed=True on the Spark resource for new tables; ALTER TABLE … SET TBLPROPERTIES "
    f"({CHANGE_DATA_FEED_PROPERTY}=true) for one that exists)"
)


@dataclass(frozen=True)
class ChangeRead:
    """The rows a run writes when it reads only its upstream's changes.

    Attributes:
        rows: the file's SELECT over the changes (lazy; the changes themselves are staged).
        message: what was read, for the run's log.
        metadata: :data:`READ_KEY`'s value.
    """

    rows: "DataFrame"
    message: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


def read_changes(
    spark: "SparkSession",
    lake: Lake,
    spec: SqlAssetSpec,
    args: Mapping[str, Any],
    since: "RunInputs",
    now: "RunInputs",
) -> Union[ChangeRead, str]:
    """The SELECT of ``spec`` over what its upstream changed since the run that read
    ``since``, or why it must read in full.

    Example:
        >>> read = read_changes(spark, lake, spec, {}, since, now)  # doctest: +SKIP
        >>> read.message  # doctest: +SKIP
        'reads only the changes of delta://raw/orders (row-local SELECT; change feed versions 5..5: 12 rows gained, 3 lost)'
    """
    shape = incremental_shape(spec)
    if isinstance(shape, str):
        return shape
    name = str(shape.table)
    start, end = since.tables.get(name), now.tables.get(name)
    if start is None or end is None:
        return f"the versions of {name} it read are not recorded"
    path = lake.table_path(shape.table)
    try:
        with errors_reported_by_caller():
            upstream, gained, lost = _changes(spark, DeltaLog.open(path, lake.files), name, start, end)
            rows, groups = _rows(spark, spec, args, shape, upstream, gained, lost)
            counts = _counts(gained, lost)
    except _FullRead as reason:
        return str(reason)
    except Exception as exc:  # noqa: BLE001 - the full read is always correct
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"the change feed of {name} (versions {start + 1}..{end}) could not be read: {first[:300]}"
    if groups is not None:
        counts["groups"] = groups
    shown = f"{counts['rows_gained']} rows gained, {counts['rows_lost']} lost" + (
        f", {groups} groups recomputed" if groups is not None else ""
    ) + ("; keys no longer produced are deleted" if spec.materialize.merge.deletes else "")
    return ChangeRead(
        rows,
        f"reads only the changes of {name} ({shape.kind} SELECT; change feed versions {start + 1}..{end}: {shown})",
        {"mode": "change_feed", "table": name, "shape": shape.kind, "from_version": start, "to_version": end, **counts},
    )


def read_new_rows(
    spark: "SparkSession", lake: Lake, spec: SqlAssetSpec, args: Mapping[str, Any], start: Optional[int]
) -> Union[ChangeRead, str]:
    """The SELECT of an ``append new_rows`` file over the rows its upstream gained after
    version ``start`` (``None``: the first run, over the whole upstream at its latest
    version), or why it cannot be read.

    Example:
        >>> read_new_rows(spark, lake, spec, {}, 4).message  # doctest: +SKIP
        'appends the rows delta://raw/events gained (change feed versions 5..6: 120 rows gained)'
    """
    shape = incremental_shape(spec)
    if isinstance(shape, str):
        return shape
    name = str(shape.table)
    try:
        with errors_reported_by_caller():
            log = DeltaLog.open(lake.table_path(shape.table), lake.files)
            end = log.latest_version
            if start is None:
                _check_feed(log, name)  # the next run reads it: say so now
                upstream = spark.read.format("delta").option("versionAsOf", end).load(log.table_path)
                rows, _ = _rows(spark, spec, args, shape, upstream, upstream, upstream.where("false"))
                return ChangeRead(
                    rows,
                    f"appends its SELECT over all of {name} (version {end}): the table's first rows",
                    {"mode": "full", "table": name, "to_version": end},
                )
            upstream, gained, lost = _changes(spark, log, name, start, end, strict=False)
            rows, _ = _rows(spark, spec, args, shape, upstream, gained, lost)
            counts = _counts(gained, lost)
    except _FullRead as reason:
        return str(reason)
    except Exception as exc:  # noqa: BLE001 - said in the run's failure
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"the change feed of {name} could not be read: {first[:300]}"
    return ChangeRead(
        rows,
        f"appends the rows {name} gained (change feed versions {start + 1}..{end}: {counts['rows_gained']} rows "
        f"gained, {counts['rows_lost']} lost)",
        {"mode": "change_feed", "table": name, "shape": shape.kind, "from_version": start, "to_version": end, **counts},
    )


def appended_up_to(lake: Lake, uri: TableUri) -> Optional[dict[str, int]]:
    """The upstream versions the rows of the ``append new_rows`` table ``uri`` were read up
    to: the stamp of its latest commit that has them (read from its Delta log, newest
    first, without Spark); ``None`` when no commit of the table has them.

    Raises:
        DeltaTableMissingError: the table does not exist yet.
    """
    log = DeltaLog.open(lake.table_path(uri), lake.files)
    end = log.latest_version
    while end >= log.first_readable:
        start = max(log.first_readable, end - _COMMITS_PER_READ + 1)
        for commit in reversed(log.read_commits(start - 1, end)):
            read = stamp_in(commit.user_metadata).get(READ_FIELD)
            try:
                if isinstance(read, dict) and read:
                    return {str(table): int(version) for table, version in read.items()}
            except (ValueError, TypeError):
                continue  # a version that is not a number: not a stamp of ours
        end = start - 1
    return None


#: Commits read at a time when looking back for an append's stamp.
_COMMITS_PER_READ = 100


def _counts(gained: "DataFrame", lost: "DataFrame") -> dict[str, int]:
    """How many rows were gained and lost (one Spark job over the staged net rows)."""
    row = gained.selectExpr("1 AS g", "0 AS l").unionByName(lost.selectExpr("0 AS g", "1 AS l")).selectExpr(
        "coalesce(sum(g), 0) AS g", "coalesce(sum(l), 0) AS l"
    ).first()
    return {"rows_gained": int(row["g"]), "rows_lost": int(row["l"])}


class _FullRead(Exception):
    """A reason, found while reading, to read in full."""


def _check_feed(log: DeltaLog, name: str) -> None:
    """:class:`_FullRead` unless the table of ``log`` keeps a change data feed."""
    if not is_enabled(log.read_metadata().configuration, CHANGE_DATA_FEED_PROPERTY):
        raise _FullRead(f"{name} keeps no change data feed ({CHANGE_DATA_FEED_PROPERTY} is not set): {HOW_TO_ENABLE}")


def _changes(
    spark: "SparkSession", log: DeltaLog, name: str, start: int, end: int, strict: bool = True
) -> tuple["DataFrame", "DataFrame", "DataFrame"]:
    """The table of ``log`` (``name``) at version ``end``, and the rows it gained and lost
    from version ``start`` to ``end``, staged; :class:`_FullRead` when its log says the feed
    cannot serve them (``strict``: also when its schema or properties changed in the range,
    which a full read serves for sure; else Delta reads across an additive change and
    refuses the others).

    One read of the feed and one aggregation: each distinct row with its post-images counted
    +1 and its pre-images -1; a positive net is gained (that many times), a negative lost.
    """
    _check_feed(log, name)
    path = log.table_path
    if start + 1 < log.first_readable:
        raise _FullRead(f"versions {start + 1}..{end} of the upstream are no longer in its log")
    changed = next((c for c in log.read_commits(start, end) if c.changed_metadata), None) if strict else None
    if changed is not None:
        raise _FullRead(f"the upstream's schema or properties changed at version {changed.version} ({changed.operation})")
    table = spark.read.format("delta").option("versionAsOf", end).load(path)
    columns = [quote_identifier(f.name) for f in table.schema.fields]
    if start == end:
        empty = table.where("false")
        return table, empty, empty
    feed = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", start + 1)
        .option("endingVersion", end)
        .load(path)
    )
    gained_types = ", ".join(f"'{t}'" for t in _GAINED)
    signed = feed.selectExpr(*columns, f"CASE WHEN _change_type IN ({gained_types}) THEN 1 ELSE -1 END AS {_NET}")
    net = local_checkpoint(
        signed.groupBy(*[signed[c] for c in columns])
        .agg({_NET: "sum"})
        .withColumnRenamed(f"sum({_NET})", _NET)
        .where(f"{_NET} <> 0")
    )
    # A row present n times more (or fewer) is n rows: repeated, as EXCEPT ALL would.
    gained = net.where(f"{_NET} > 0").selectExpr(*columns, f"explode(sequence(1, {_NET})) AS {_NET}").drop(_NET)
    lost = net.where(f"{_NET} < 0").selectExpr(*columns, f"explode(sequence(1, -{_NET})) AS {_NET}").drop(_NET)
    return table, gained, lost


def _rows(
    spark: "SparkSession",
    spec: SqlAssetSpec,
    args: Mapping[str, Any],
    shape: IncrementalShape,
    upstream: "DataFrame",
    gained: "DataFrame",
    lost: "DataFrame",
) -> tuple["DataFrame", Any]:
    """The SELECT over the rows that can change its result (a change set with the keys to
    delete, with ``deletes=delete``), and the number of groups recomputed."""
    view = "_assetlake_changes_" + hashlib.sha1(str(spec.uri).encode("utf-8")).hexdigest()[:12]
    key = spec.materialize.key
    groups = deleted = None
    if shape.kind == GROUPED:
        touched = gained.unionByName(lost).selectExpr(*[quote_identifier(c) for c in shape.group_columns]).distinct()
        touched = local_checkpoint(touched)
        groups = touched.count()
        matches = [
            upstream[quote_identifier(c)].eqNullSafe(touched[quote_identifier(c)]) for c in shape.group_columns
        ]
        source = upstream.join(touched.hint("broadcast"), on=matches, how="left_semi")
        if spec.materialize.merge.deletes:
            group_of = dict(shape.key_columns)
            deleted = touched.selectExpr(
                *[f"{quote_identifier(group_of[k.lower()])} AS {quote_identifier(k)}" for k in key]
            )
    else:
        source = gained
        if spec.materialize.merge.deletes:
            lost_view = view + "_lost"
            lost.createOrReplaceTempView(lost_view)
            deleted = run_sql_file(spark, with_tables_replaced(spec, {shape.table: lost_view}), args)
            deleted = deleted.select(*[deleted[quote_identifier(k)] for k in key]).distinct()
    source.createOrReplaceTempView(view)
    rows = run_sql_file(spark, with_tables_replaced(spec, {shape.table: view}), args)
    if deleted is None:
        return rows, groups
    # The keys it produced before and no longer produces: the lost rows' (a row-local
    # SELECT's), or the recomputed groups', less the keys of the rows to upsert.
    gone = deleted.join(rows.select(*[rows[quote_identifier(k)] for k in key]), on=list(key), how="left_anti")
    marker = quote_identifier(DELETED_MARKER)
    change_set = rows.selectExpr("*", f"false AS {marker}").unionByName(
        gone.selectExpr(*[quote_identifier(k) for k in key], f"true AS {marker}"), allowMissingColumns=True
    )
    return change_set, groups
