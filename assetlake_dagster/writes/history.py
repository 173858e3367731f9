"""History (SCD2): keep every version of every key, in one MERGE commit per run.

The SELECT returns the current snapshot, one row per key. Each run diffs it against the
table's current rows: a changed tracked column closes the current version and opens a new
one, a new (or reappearing) key opens a version, and with ``deletes=close`` an absent key
has its current version closed. All of it is one ``MERGE INTO`` (Delta's staged-updates
pattern), so a run commits once or not at all.

Rules from RELIABILITY.md: change detection is NULL-safe (``<=>``, dbt-core#1516); MAP
columns cannot be compared, so they cannot be tracked; NULL and duplicate keys fail before
writing; one UTC run timestamp (microseconds) is shared by every row of the run, bound as a
parameter, and must be later than every timestamp already in the table; an empty diff
creates no version (a no-op MERGE can still commit: delta-io/delta#1812).

The timestamp check and the MERGE are one decision (rule 19): two runs that each checked
"now" and then merged committed ``valid_to < valid_from`` and overlapping versions, since
the later MERGE ran on the other run's rows. So a run reads the table, takes its timestamp,
checks it and merges under :func:`~assetlake_dagster.writes.commit.table_lock`, and every
attempt (a retry too) takes a fresh timestamp after a fresh read.
"""

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Callable, Optional

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from assetlake_dagster.delta_sql import path_identifier, read
from assetlake_dagster.spec import (
    HISTORY_COLUMNS,
    IS_CURRENT,
    VALID_FROM,
    VALID_TO,
    MaterializeSpec,
    WriteStrategy,
    quote_identifier,
)
from assetlake_dagster.writes.base import (
    WritePlan,
    WriteStrategyBase,
    check_columns,
    delta_schema,
    slice_rows,
)
from assetlake_dagster.writes.commit import (
    WriteResult,
    WriteTarget,
    current_version,
    no_commit,
    result_from_history,
    stamped_session,
    table_lock,
)
from assetlake_dagster.writes.sql import SOURCE_ALIAS, TARGET_ALIAS, change_condition, check_keys, key_condition

#: The parameter marker every timestamp of the run is bound to.
RUN_TS_PARAM = "run_ts"
#: Names of the merge-key columns of the staged source; data columns may not use the prefix.
MERGE_KEY_PREFIX = "__assetlake_merge_key_"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def utc_now() -> dt.datetime:
    """The default clock: now, in UTC, to the microsecond."""
    return dt.datetime.now(dt.timezone.utc)


def to_micros(ts: dt.datetime) -> int:
    """Microseconds since the epoch of an aware (or naive = UTC) datetime.

    Example:
        >>> to_micros(dt.datetime(1970, 1, 1, 0, 0, 1))
        1000000
    """
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.timezone.utc)
    return (ts - _EPOCH) // dt.timedelta(microseconds=1)


def history_merge_statement(
    table: str,
    key: Sequence[str],
    columns: Sequence[str],
    track: Sequence[str],
    close_deletes: bool,
    snapshot: str = "snapshot",
) -> str:
    """The one Spark SQL MERGE a history run executes (also shown by plans).

    The source is the snapshot twice (Delta's staged-updates pattern): every row with its
    key as merge key, which matches the key's current version (closing it when a tracked
    column changed) or, when the key has no current version, inserts it; plus, with a NULL
    merge key, the rows whose tracked columns changed, which never match and so insert the
    new versions. ``:run_ts`` is a bound parameter.

    Args:
        table: the target, e.g. ``delta.`/lake/s/t```.
        key: the key columns.
        columns: the data columns of the snapshot (key included), in order.
        track: the tracked columns (non-empty unless the table has no non-key column).
        close_deletes: close the current version of keys absent from the snapshot.
        snapshot: the name of the snapshot view.

    Example:
        >>> print(history_merge_statement("delta.`/lake/s/t`", ["id"], ["id", "name"], ["name"], True))
        MERGE INTO delta.`/lake/s/t` AS t
        USING (
          SELECT s.`id` AS `__assetlake_merge_key_0`, s.`id`, s.`name` FROM snapshot AS s
          UNION ALL
          SELECT NULL AS `__assetlake_merge_key_0`, s.`id`, s.`name` FROM snapshot AS s
          JOIN delta.`/lake/s/t` AS t ON t.`id` = s.`id` AND t.`is_current`
          WHERE NOT (t.`name` <=> s.`name`)
        ) AS s
        ON t.`id` = s.`__assetlake_merge_key_0` AND t.`is_current`
        WHEN MATCHED AND (NOT (t.`name` <=> s.`name`)) THEN UPDATE SET `valid_to` = :run_ts, `is_current` = false
        WHEN NOT MATCHED THEN INSERT (`id`, `name`, `valid_from`, `valid_to`, `is_current`) VALUES (s.`id`, s.`name`, :run_ts, NULL, true)
        WHEN NOT MATCHED BY SOURCE AND t.`is_current` THEN UPDATE SET `valid_to` = :run_ts, `is_current` = false
    """
    t, s = TARGET_ALIAS, SOURCE_ALIAS
    q = quote_identifier
    current = f"{t}.{q(IS_CURRENT)}"
    merge_keys = [q(f"{MERGE_KEY_PREFIX}{i}") for i in range(len(key))]
    data = ", ".join(f"{s}.{q(c)}" for c in columns)
    on_key = key_condition(key)
    matched_keys = ", ".join(f"{s}.{q(k)} AS {m}" for k, m in zip(key, merge_keys))
    lines = [
        f"MERGE INTO {table} AS {t}",
        "USING (",
        f"  SELECT {matched_keys}, {data} FROM {snapshot} AS {s}",
    ]
    changed = change_condition(track) if track else ""
    if changed:
        null_keys = ", ".join(f"NULL AS {m}" for m in merge_keys)
        lines += [
            "  UNION ALL",
            f"  SELECT {null_keys}, {data} FROM {snapshot} AS {s}",
            f"  JOIN {table} AS {t} ON {on_key} AND {current}",
            f"  WHERE {changed}",
        ]
    on_merge_key = " AND ".join(f"{t}.{q(k)} = {s}.{m}" for k, m in zip(key, merge_keys))
    close = f"UPDATE SET {q(VALID_TO)} = :{RUN_TS_PARAM}, {q(IS_CURRENT)} = false"
    names = ", ".join(q(c) for c in (*columns, *HISTORY_COLUMNS))
    lines += [f") AS {s}", f"ON {on_merge_key} AND {current}"]
    if changed:
        lines.append(f"WHEN MATCHED AND ({changed}) THEN {close}")
    lines.append(f"WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({data}, :{RUN_TS_PARAM}, NULL, true)")
    if close_deletes:
        lines.append(f"WHEN NOT MATCHED BY SOURCE AND {current} THEN {close}")
    return "\n".join(lines)


def change_counts_query(
    table: str, key: Sequence[str], track: Sequence[str], close_deletes: bool, snapshot: str
) -> str:
    """How many versions the MERGE would close for a change, open, and close for a delete.

    Example:
        >>> print(change_counts_query("tbl", ["id"], ["name"], False, "snap"))
        SELECT
          (SELECT count(*) FROM snap AS s JOIN tbl AS t ON t.`id` = s.`id` AND t.`is_current` WHERE NOT (t.`name` <=> s.`name`)) AS changed,
          (SELECT count(*) FROM snap AS s LEFT ANTI JOIN tbl AS t ON t.`id` = s.`id` AND t.`is_current`) AS opened,
          0 AS closed
    """
    t, s, q = TARGET_ALIAS, SOURCE_ALIAS, quote_identifier
    on = key_condition(key) + f" AND {t}.{q(IS_CURRENT)}"
    changed, opened, closed = "0", "", "0"
    if track:
        where = change_condition(track)
        changed = f"(SELECT count(*) FROM {snapshot} AS {s} JOIN {table} AS {t} ON {on} WHERE {where})"
    opened = f"(SELECT count(*) FROM {snapshot} AS {s} LEFT ANTI JOIN {table} AS {t} ON {on})"
    if close_deletes:
        closed = (
            f"(SELECT count(*) FROM {table} AS {t} LEFT ANTI JOIN {snapshot} AS {s} ON {on} "
            f"WHERE {t}.{q(IS_CURRENT)})"
        )
    return f"SELECT\n  {changed} AS changed,\n  {opened} AS opened,\n  {closed} AS closed"


class HistoryWrite(WriteStrategyBase):
    """SCD2 history on ``key=``: one MERGE commit per changing run, none otherwise.

    Args:
        clock: returns the run timestamp (UTC); tests inject their own. It is read under
            the table lock, after the table, so it is later than any run committed before.

    Example:
        >>> HistoryWrite(clock=lambda: dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))  # doctest: +ELLIPSIS
        <...HistoryWrite object at ...>
    """

    strategy = WriteStrategy.HISTORY
    title = "SCD2 history"
    needs_key = True
    history_options = True
    # Versions are per key across the whole table; a slice cannot close another's rows.
    whole_table_only = True
    current_view = True

    def __init__(self, clock: Callable[[], dt.datetime] = utc_now):
        self.clock = clock

    def describe(self, spec: MaterializeSpec) -> str:
        track = ", ".join(spec.track) or "every non-key column"
        deletes = "close" if spec.close_deletes else "soft (absent keys stay current)"
        return f"history on key ({', '.join(spec.key)}), track {track}, deletes {deletes}"

    def test_scope(self, partitioned: bool) -> str:
        return "the slice" if partitioned else "the current rows"

    def staged_scope(self, spark: SparkSession, rows: DataFrame, target: WriteTarget) -> tuple[DataFrame, str]:
        """The data columns of the rows that will be current: with ``deletes=close`` the
        snapshot, otherwise also the current keys absent from it."""
        current = slice_rows(spark, target)
        if current is None:
            return super().staged_scope(spark, rows, target)
        if target.close_deletes:
            return rows, "staged current rows"
        live = current_rows(current)
        kept = live.join(rows.select(*target.key), on=list(target.key), how="left_anti")
        return kept.unionByName(rows, allowMissingColumns=True), "staged current rows"

    def committed_scope(self, spark: SparkSession, target: WriteTarget) -> tuple[Optional[DataFrame], str]:
        """The current rows' data columns (the slice, if ever asked for a partitioned one)."""
        table, text = super().committed_scope(spark, target)
        if table is None or target.partitioned:
            return table, text
        return current_rows(table), "committed current rows"

    def plan(self, target: WriteTarget, columns: Optional[Sequence[str]] = None) -> WritePlan:
        key = list(target.key)
        if columns:
            shown = list(columns)
            track = _default_track(target, shown)
        else:
            track = list(target.track) or ["other_columns"]
            shown = key + track
        return WritePlan(
            operation=(
                "Delta MERGE keeping SCD2 history (close changed versions, open new ones"
                + (", close absent keys" if target.close_deletes else "; absent keys stay current")
                + "; no commit when nothing changed); the first run creates the table with one WRITE"
            ),
            statement=history_merge_statement(
                path_identifier(target.path), key, shown, track, target.close_deletes, snapshot="snapshot"
            ),
            predicate=" AND ".join(f"{TARGET_ALIAS}.{quote_identifier(k)} = ..." for k in key)
            + f" AND {TARGET_ALIAS}.{quote_identifier(IS_CURRENT)}",
        )

    def write(
        self,
        spark: SparkSession,
        df: DataFrame,
        target: WriteTarget,
        run_timestamp: Optional[dt.datetime] = None,
    ) -> WriteResult:
        check_columns(self, target, df.columns)
        spelled = {c.lower(): c for c in df.columns}
        missing = [c for c in (*target.key, *target.track) if c.lower() not in spelled]
        if missing:
            raise self.fail(
                target,
                f"key/track columns {missing} are not in the rows (columns: {df.columns}). "
                "Project them in the SELECT or fix key=/track=.",
                allow_retries=False,
            )
        clashing = [c for c in df.columns if c.lower().startswith(MERGE_KEY_PREFIX)]
        if clashing:
            raise self.fail(
                target,
                f"columns {clashing} use the prefix {MERGE_KEY_PREFIX!r}, which the history MERGE "
                "uses internally. Rename them in the SELECT.",
                allow_retries=False,
            )
        key = [spelled[k.lower()] for k in target.key]
        track = _default_track(target, df.columns)
        self._check_trackable(target, df, track)
        staged = df.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            check_keys(self, staged, target)
            # From here to the commit no other history run on this table may commit: a run
            # that checked its timestamp against the table before another committed would
            # close that run's versions before they began.
            with table_lock(spark, target.path):
                existing = delta_schema(spark, target.path)
                if existing is None:
                    return self._create(spark, staged, target, self._run_timestamp(run_timestamp))
                return self._merge(spark, staged, target, key, track, run_timestamp)
        finally:
            staged.unpersist()

    def _run_timestamp(self, given: Optional[dt.datetime]) -> dt.datetime:
        """The run's timestamp: the given one (tests), else the clock, now."""
        return _as_utc(given if given is not None else self.clock())

    def _check_trackable(self, target: WriteTarget, df: DataFrame, track: Sequence[str]) -> None:
        types = {f.name.lower(): f.dataType.simpleString() for f in df.schema.fields}
        maps = [c for c in track if "map<" in types[c.lower()]]
        if maps:
            default = "" if target.track else " (without track=, every non-key column is tracked)"
            raise self.fail(
                target,
                f"tracked columns {maps} contain MAP values, which Spark cannot compare, so their "
                f"changes cannot be detected{default}. List the columns to track in track= without "
                "them, or convert them in the SELECT (e.g. to_json(col)).",
                allow_retries=False,
            )

    def _create(
        self, spark: SparkSession, staged: DataFrame, target: WriteTarget, run_ts: dt.datetime
    ) -> WriteResult:
        view = f"_assetlake_snapshot_{uuid.uuid4().hex}"
        staged.createOrReplaceTempView(view)
        try:
            q = quote_identifier
            rows = spark.sql(
                f"SELECT *, CAST(:{RUN_TS_PARAM} AS TIMESTAMP) AS {q(VALID_FROM)}, "
                f"CAST(NULL AS TIMESTAMP) AS {q(VALID_TO)}, true AS {q(IS_CURRENT)} FROM {view}",
                args={RUN_TS_PARAM: run_ts},
            )
            # mode "error" (errorifexists; the only spelling Spark Connect accepts): of two concurrent first runs, the second fails instead of
            # appending a second set of current rows.
            (
                rows.write.format("delta")
                .mode("error")
                .option("userMetadata", target.stamp.user_metadata())
                .save(target.path)
            )
        finally:
            spark.catalog.dropTempView(view)
        return result_from_history(spark, target, committed=True, rows_key=("numOutputRows",))

    def _merge(
        self,
        spark: SparkSession,
        staged: DataFrame,
        target: WriteTarget,
        key: list[str],
        track: list[str],
        run_timestamp: Optional[dt.datetime],
    ) -> WriteResult:
        table_df = read(spark, target.path)
        self._check_frozen_schema(target, staged, table_df)
        table = path_identifier(target.path)
        q = quote_identifier
        # valid_to counts too: a closing delete stamps valid_to without opening a version.
        latest_ts = f"greatest({q(VALID_FROM)}, coalesce({q(VALID_TO)}, {q(VALID_FROM)}))"
        latest = spark.sql(f"SELECT unix_micros(max({latest_ts})) AS latest FROM {table}").first()["latest"]
        # Taken after the read: every run committed before it took its own timestamp earlier.
        run_ts = self._run_timestamp(run_timestamp)
        if latest is not None and to_micros(run_ts) <= latest:
            raise self.fail(
                target,
                f"non-monotonic run timestamp: {run_ts.isoformat()} is not later than "
                f"{_from_micros(latest).isoformat()}, the latest valid_from/valid_to in the table. "
                "Every history run needs a later UTC timestamp than the one before; check the "
                "clock of the machine running it.",
                allow_retries=False,
            )
        view = f"_assetlake_snapshot_{uuid.uuid4().hex}"
        staged.createOrReplaceTempView(view)
        try:
            counts = spark.sql(change_counts_query(table, key, track, target.close_deletes, view)).first()
            if not (counts["changed"] or counts["opened"] or counts["closed"]):
                version = current_version(spark, target.path)
                return no_commit(version)
            # MERGE through SQL, not the DeltaTable builder: the same statement runs on a
            # classic session and on a Spark Connect server without the Delta Connect plugin.
            statement = history_merge_statement(
                table, key, list(staged.columns), track, target.close_deletes, snapshot=view
            )
            with stamped_session(spark, target.stamp):
                spark.sql(statement, args={RUN_TS_PARAM: run_ts}).collect()
        finally:
            spark.catalog.dropTempView(view)
        return result_from_history(
            spark, target, committed=True, rows_key=("numTargetRowsInserted", "numTargetRowsUpdated")
        )

    def _check_frozen_schema(self, target: WriteTarget, staged: DataFrame, table_df: DataFrame) -> None:
        managed = {c.lower() for c in HISTORY_COLUMNS}
        table = {
            f.name.lower(): (f.name, f.dataType.simpleString())
            for f in table_df.schema.fields
            if f.name.lower() not in managed
        }
        rows = {f.name.lower(): (f.name, f.dataType.simpleString()) for f in staged.schema.fields}
        added = [f"{n} {t}" for k, (n, t) in rows.items() if k not in table]
        removed = [f"{n} {t}" for k, (n, t) in table.items() if k not in rows]
        retyped = [f"{n} {table[k][1]} -> {t}" for k, (n, t) in rows.items() if k in table and table[k][1] != t]
        if not (added or removed or retyped):
            return
        diff = "; ".join(
            f"{label}: {', '.join(items)}"
            for label, items in (("added", added), ("removed", removed), ("retyped", retyped))
            if items
        )
        raise self.fail(
            target,
            f"the SELECT's columns differ from the history table's ({diff}). The schema of a "
            "history table is frozen after its first run: closed versions cannot be reshaped. "
            f"To change it, drop the table folder {target.path} (its history is lost) and run "
            "again, or write to a new table. Nothing was written.",
            allow_retries=False,
        )


def current_rows(table: DataFrame) -> DataFrame:
    """The current version of each key, without the managed validity columns."""
    return table.where(table[IS_CURRENT]).drop(*HISTORY_COLUMNS)


def _default_track(target: WriteTarget, columns: Sequence[str]) -> list[str]:
    """``track=`` in the rows' spelling, or every non-key column."""
    spelled = {c.lower(): c for c in columns}
    if target.track:
        return [spelled.get(c.lower(), c) for c in target.track]
    keys = {k.lower() for k in target.key}
    return [c for c in columns if c.lower() not in keys]


def _as_utc(ts: dt.datetime) -> dt.datetime:
    """Aware UTC (naive means UTC), to the microsecond (Python's own resolution)."""
    return ts.replace(tzinfo=dt.timezone.utc) if ts.tzinfo is None else ts.astimezone(dt.timezone.utc)


def _from_micros(micros: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=micros)
