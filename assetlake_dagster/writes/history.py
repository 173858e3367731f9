"""History (SCD2): keep every version of every key, in one MERGE commit per run.

The SELECT returns the current snapshot, one row per key. Each run diffs it against the
table's current rows: a changed tracked column closes the current version and opens a new
one, a new (or reappearing) key opens a version, and with ``deletes=close`` an absent key
has its current version closed. The diff is computed once, in one join of the snapshot with
the current rows, and staged; the run commits nothing when it is empty, and otherwise one
``MERGE INTO`` (Delta's staged-updates pattern) over the staged changes, so a run commits
once or not at all.

Rules from RELIABILITY.md: change detection is NULL-safe (``<=>``, dbt-core#1516); MAP
columns cannot be compared, so they cannot be tracked; NULL and duplicate keys fail before
writing; one UTC run timestamp (microseconds) is shared by every row of the run, bound as a
parameter, and must be later than every timestamp already in the table; an empty diff
creates no version (a no-op MERGE can still commit: delta-io/delta#1812).

The timestamp check and the MERGE are one decision (rule 19): two runs that each checked
"now" and then merged committed ``valid_to < valid_from`` and overlapping versions, since
the later MERGE ran on the other run's rows. So a run reads the table, takes its timestamp,
checks it and merges under :func:`~assetlake_dagster.writes.commit.table_lock`, and every
attempt (a retry too) takes a fresh timestamp after a fresh read. A run whose diff is empty
writes nothing and takes no timestamp (reading the latest one scans the whole history).

With ``valid_from=<column>`` the versions run on the source's clock instead: a version
starts at its row's value of that column (and closes the key's previous version there),
so replaying the same snapshots rebuilds the same history. Each new version must start
strictly later than every ``valid_from``/``valid_to`` its key has; a NULL, an equal or an
earlier timestamp (a late or repeated change) fails the run, naming the keys, before
anything is written. A key closed by ``deletes=close`` has no source row: it closes at the
run's clock, which must also be later than its key's versions.

With ``late=insert`` (on ``valid_from``) an earlier timestamp is placed instead: each new start
of a key is a version, the version it falls in ends at it, and it ends where that one ended
(:func:`late_staged_changes_query`, :func:`late_history_merge_statement`). No row is dropped
for repeating the version before it, so the table is a function of the set of rows delivered:
the same rows in any order give the same history.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, Optional

from assetlake_dagster.lake.delta_sql import path_identifier, read
from assetlake_dagster.spark.session import local_checkpoint, persist_rows, release_checkpoint
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
from assetlake_dagster.writes.commit import WriteResult, WriteTarget, no_commit, result_from_history, stamped_session, table_lock
from assetlake_dagster.writes.create import create_table, needs_create_statement
from assetlake_dagster.lake.file_statistics import table_timestamp_bound
from assetlake_dagster.lake.versions import current_version, reads_log_here
from assetlake_dagster.writes.sql import (
    SOURCE_ALIAS,
    TARGET_ALIAS,
    change_condition,
    check_keys,
    check_staged_keys,
    key_condition,
)

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, SparkSession


#: The parameter marker every timestamp of the run is bound to.
RUN_TS_PARAM = "run_ts"
#: The types a ``valid_from=`` column may have (Spark's simple type names).
SOURCE_TIMESTAMP_TYPES = ("timestamp", "timestamp_ntz", "date")
#: How many offending keys a refused run names.
SHOWN_KEYS = 5
#: The prefix of the staged changes' own columns; data columns may not use it.
INTERNAL_PREFIX = "__assetlake_"
#: Names of the merge-key columns of the MERGE's source.
MERGE_KEY_PREFIX = f"{INTERNAL_PREFIX}merge_key_"
#: The staged changes' column saying what a row does: one of :data:`ACTIONS`.
ACTION_COLUMN = f"{INTERNAL_PREFIX}action"
#: How many snapshot rows share a row's key (a duplicate when more than one).
KEY_ROWS_COLUMN = f"{INTERNAL_PREFIX}key_rows"
#: Close a key's current version and open a new one; open a first (or reappearing)
#: version; close the current version of a key absent from the snapshot; a snapshot row
#: whose key is NULL or duplicated (the run fails, naming them, before any MERGE).
ACTIONS = ("change", "open", "close", "invalid")
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


def staged_changes_query(
    table: str,
    key: Sequence[str],
    columns: Sequence[str],
    track: Sequence[str],
    close_deletes: bool,
    snapshot: str = "snapshot",
) -> str:
    """The run's diff, computed once: each snapshot row that changes the table, and with
    ``deletes=close`` each current key absent from the snapshot, with its action; and each
    snapshot row whose key is NULL or duplicated, as ``invalid``.

    One join of the snapshot with the table's current rows (only their key and tracked
    columns are read). The key check rides along: the rows per key are counted by a window
    partitioned on the key, which the join on the key reuses, so it costs no pass of its
    own. The result is staged (checkpointed) before anything else reads it: its invalid
    rows fail the run, its counts decide whether to commit at all, and it is the MERGE's
    whole source, so the MERGE joins the table with the changes only.

    Example:
        >>> print(staged_changes_query("tbl", ["id"], ["id", "name"], ["name"], True, "snap"))
        SELECT CASE WHEN s.`__assetlake_key_rows` > 1 OR s.`id` IS NULL AND s.`__assetlake_key_rows` IS NOT NULL THEN 'invalid' WHEN t.`id` IS NULL THEN 'open' WHEN s.`__assetlake_key_rows` IS NULL THEN 'close' ELSE 'change' END AS `__assetlake_action`,
          coalesce(s.`id`, t.`id`) AS `id`, s.`name`, s.`__assetlake_key_rows`
        FROM (SELECT *, count(*) OVER (PARTITION BY `id`) AS `__assetlake_key_rows` FROM snap) AS s
        FULL OUTER JOIN (SELECT `id`, `name` FROM tbl WHERE `is_current`) AS t ON t.`id` = s.`id`
        WHERE s.`__assetlake_key_rows` > 1 OR s.`id` IS NULL AND s.`__assetlake_key_rows` IS NOT NULL OR t.`id` IS NULL OR s.`__assetlake_key_rows` IS NULL OR NOT (t.`name` <=> s.`name`)
    """
    t, s, q = TARGET_ALIAS, SOURCE_ALIAS, quote_identifier
    keys = {k.lower() for k in key}
    rows = f"{s}.{q(KEY_ROWS_COLUMN)}"
    # A current row's key is never NULL (checked when it was written), so a NULL key on the
    # table's side means "no current row"; the snapshot side has no row when its count is NULL.
    absent_t, absent_s = f"{t}.{q(key[0])} IS NULL", f"{rows} IS NULL"
    null_key = " OR ".join(f"{s}.{q(k)} IS NULL" for k in key)
    invalid = f"{rows} > 1 OR " + (f"({null_key})" if len(key) > 1 else null_key) + f" AND {rows} IS NOT NULL"
    action = (
        f"CASE WHEN {invalid} THEN 'invalid' WHEN {absent_t} THEN 'open' "
        + (f"WHEN {absent_s} THEN 'close' " if close_deletes else "")
        + f"ELSE 'change' END AS {q(ACTION_COLUMN)}"
    )
    data = ", ".join(
        f"coalesce({s}.{q(c)}, {t}.{q(c)}) AS {q(c)}" if c.lower() in keys else f"{s}.{q(c)}" for c in columns
    )
    partition = ", ".join(q(k) for k in key)
    current = ", ".join(q(c) for c in dict.fromkeys([*key, *track]))
    join = "FULL OUTER JOIN" if close_deletes else "LEFT JOIN"
    wanted = [invalid, absent_t] + ([absent_s] if close_deletes else []) + ([change_condition(track)] if track else [])
    return "\n".join(
        [
            f"SELECT {action},",
            f"  {data}, {rows}",
            f"FROM (SELECT *, count(*) OVER (PARTITION BY {partition}) AS {q(KEY_ROWS_COLUMN)} FROM {snapshot}) AS {s}",
            f"{join} (SELECT {current} FROM {table} WHERE {q(IS_CURRENT)}) AS {t} ON {key_condition(key)}",
            f"WHERE {' OR '.join(wanted)}",
        ]
    )


def history_merge_statement(
    table: str,
    key: Sequence[str],
    columns: Sequence[str],
    changes: str = "changes",
    valid_from: Optional[str] = None,
) -> str:
    """The one Spark SQL MERGE a history run executes (also shown by plans), over the
    staged changes (:func:`staged_changes_query`).

    Delta's staged-updates pattern: a ``change`` row is in the source twice, with its key
    as merge key (it matches the key's current version and closes it) and with a NULL
    merge key (it never matches, so it inserts the new version); an ``open`` row only
    inserts, a ``close`` row only closes. ``:run_ts`` is a bound parameter.

    Args:
        table: the target, e.g. ``delta.`/lake/s/t```.
        key: the key columns.
        columns: the data columns of the snapshot (key included), in order.
        changes: the name of the staged changes' view.
        valid_from: the column whose value starts a version (``valid_from=``); a ``close``
            row has none, and closes at ``:run_ts``. Default: every version at ``:run_ts``.

    Example:
        >>> print(history_merge_statement("delta.`/lake/s/t`", ["id"], ["id", "name"]))
        MERGE INTO delta.`/lake/s/t` AS t
        USING (
          SELECT s.`id` AS `__assetlake_merge_key_0`, s.* FROM changes AS s WHERE s.`__assetlake_action` <> 'open'
          UNION ALL
          SELECT NULL AS `__assetlake_merge_key_0`, s.* FROM changes AS s WHERE s.`__assetlake_action` <> 'close'
        ) AS s
        ON t.`id` = s.`__assetlake_merge_key_0` AND t.`is_current`
        WHEN MATCHED THEN UPDATE SET `valid_to` = :run_ts, `is_current` = false
        WHEN NOT MATCHED AND s.`__assetlake_action` <> 'close' THEN INSERT (`id`, `name`, `valid_from`, `valid_to`, `is_current`) VALUES (s.`id`, s.`name`, :run_ts, NULL, true)
        >>> print(history_merge_statement("delta.`/lake/s/t`", ["id"], ["id", "at"], valid_from="at").splitlines()[-2])
        WHEN MATCHED THEN UPDATE SET `valid_to` = coalesce(CAST(s.`at` AS TIMESTAMP), :run_ts), `is_current` = false
    """
    t, s, q = TARGET_ALIAS, SOURCE_ALIAS, quote_identifier
    starts = f":{RUN_TS_PARAM}" if valid_from is None else f"CAST({s}.{q(valid_from)} AS TIMESTAMP)"
    # A close row carries no source values (its key is absent from the snapshot).
    ends = f":{RUN_TS_PARAM}" if valid_from is None else f"coalesce({starts}, :{RUN_TS_PARAM})"
    action = f"{s}.{q(ACTION_COLUMN)}"
    matched_keys, null_keys, on_merge_key, names, data = _staged_updates(key, columns)
    return "\n".join(
        [
            f"MERGE INTO {table} AS {t}",
            "USING (",
            f"  SELECT {matched_keys}, {s}.* FROM {changes} AS {s} WHERE {action} <> 'open'",
            "  UNION ALL",
            f"  SELECT {null_keys}, {s}.* FROM {changes} AS {s} WHERE {action} <> 'close'",
            f") AS {s}",
            f"ON {on_merge_key} AND {t}.{q(IS_CURRENT)}",
            f"WHEN MATCHED THEN UPDATE SET {q(VALID_TO)} = {ends}, {q(IS_CURRENT)} = false",
            f"WHEN NOT MATCHED AND {action} <> 'close' THEN INSERT ({names}) VALUES ({data}, {starts}, NULL, true)",
        ]
    )


#: The late path's own columns: the row's start, and the key's versions around it.
STARTS_COLUMN = f"{INTERNAL_PREFIX}starts"
PREV_FROM_COLUMN = f"{INTERNAL_PREFIX}prev_from"
PREV_TO_COLUMN = f"{INTERNAL_PREFIX}prev_to"
NEXT_FROM_COLUMN = f"{INTERNAL_PREFIX}next_from"
#: The merge-key column naming which version a late row closes (its key's previous one).
MERGE_FROM_COLUMN = f"{INTERNAL_PREFIX}merge_from"


def late_staged_changes_query(
    table: str,
    key: Sequence[str],
    columns: Sequence[str],
    track: Sequence[str],
    valid_from: str,
    snapshot: str = "snapshot",
) -> str:
    """The run's diff with ``late=insert``: each snapshot row whose start its key does not
    have yet, placed among the key's versions (the start of the version before it, that
    version's end, and the start of the version after it), as ``insert``; a row whose key
    has a version starting at the same time with other tracked values as ``conflict``; a
    row without a start as ``no_start``; a NULL or duplicated key as ``invalid``. A row
    whose key has that very version already is no change.

    Example:
        >>> print(late_staged_changes_query("tbl", ["id"], ["id", "v", "at"], ["v"], "at", "snap"))  # doctest: +ELLIPSIS
        SELECT CASE WHEN s.`__assetlake_key_rows` > 1 OR s.`id` IS NULL THEN 'invalid' WHEN s.`__assetlake_starts` IS NULL THEN 'no_start' ...
    """
    t, s, q = TARGET_ALIAS, SOURCE_ALIAS, quote_identifier
    rows, starts = f"{s}.{q(KEY_ROWS_COLUMN)}", f"{s}.{q(STARTS_COLUMN)}"
    null_key = " OR ".join(f"{s}.{q(k)} IS NULL" for k in key)
    invalid = f"{rows} > 1 OR " + (f"({null_key})" if len(key) > 1 else null_key)
    keys = ", ".join(q(k) for k in key)
    tracked = ", ".join(q(c) for c in dict.fromkeys(track))
    before = f"CASE WHEN {t}.{q(VALID_FROM)} < {starts} THEN {t}.{q(VALID_FROM)} END"
    same = f"{t}.{q(VALID_FROM)} = {starts}"
    differs = change_condition(track) if track else "false"
    placement = (
        f"SELECT {', '.join(f'{s}.{q(k)}' for k in key)}, {starts}, "
        f"max({before}) AS {q(PREV_FROM_COLUMN)}, "
        f"max_by({t}.{q(VALID_TO)}, {before}) AS {q(PREV_TO_COLUMN)}, "
        f"min(CASE WHEN {t}.{q(VALID_FROM)} > {starts} THEN {t}.{q(VALID_FROM)} END) AS {q(NEXT_FROM_COLUMN)}, "
        f"count(CASE WHEN {same} THEN 1 END) AS same, "
        f"count(CASE WHEN {same} AND ({differs}) THEN 1 END) AS conflicts "
        f"FROM snapshot_rows AS {s} "
        f"LEFT JOIN (SELECT {keys}, {q(VALID_FROM)}, {q(VALID_TO)}{', ' + tracked if tracked else ''} FROM {table}) AS {t} "
        f"ON {key_condition(key)} "
        f"GROUP BY {', '.join(f'{s}.{q(k)}' for k in key)}, {starts}"
    )
    p = "p"
    on = " AND ".join(f"{p}.{q(k)} = {s}.{q(k)}" for k in key) + f" AND {p}.{q(STARTS_COLUMN)} = {starts}"
    action = (
        f"CASE WHEN {invalid} THEN 'invalid' WHEN {starts} IS NULL THEN 'no_start' "
        f"WHEN {p}.conflicts > 0 THEN 'conflict' ELSE 'insert' END AS {q(ACTION_COLUMN)}"
    )
    data = ", ".join(f"{s}.{q(c)}" for c in columns)
    carried = ", ".join(f"{p}.{q(c)}" for c in (PREV_FROM_COLUMN, PREV_TO_COLUMN, NEXT_FROM_COLUMN))
    return "\n".join(
        [
            f"WITH snapshot_rows AS (SELECT *, count(*) OVER (PARTITION BY {keys}) AS {q(KEY_ROWS_COLUMN)}, "
            f"CAST({q(valid_from)} AS TIMESTAMP) AS {q(STARTS_COLUMN)} FROM {snapshot})",
            f"SELECT {action},",
            f"  {data}, {rows}, {starts}, {carried}",
            f"FROM snapshot_rows AS {s}",
            f"LEFT JOIN ({placement}) AS {p} ON {on}",
            f"WHERE {invalid} OR {starts} IS NULL OR {p}.conflicts > 0 OR {p}.same IS NULL OR {p}.same = 0",
        ]
    )


def late_history_merge_statement(table: str, key: Sequence[str], columns: Sequence[str], changes: str = "changes") -> str:
    """The one MERGE of a ``late=insert`` run, over :func:`late_staged_changes_query`'s rows.

    Each row inserts its version, from its start to the next version's start (open, and
    current, when it is the latest; to its previous version's end when that one was closed
    later). Its previous version, if any, now ends at the row's start: the row is in the
    source a second time with that version's key and start as merge key, and matches it.

    Example:
        >>> print(late_history_merge_statement("delta.`/lake/s/t`", ["id"], ["id", "v", "at"]))  # doctest: +ELLIPSIS
        MERGE INTO delta.`/lake/s/t` AS t
        ...
        ON t.`id` = s.`__assetlake_merge_key_0` AND t.`valid_from` = s.`__assetlake_merge_from`
        WHEN MATCHED THEN UPDATE SET `valid_to` = s.`__assetlake_starts`, `is_current` = false
        ...
    """
    t, s, q = TARGET_ALIAS, SOURCE_ALIAS, quote_identifier
    starts, prev_from, prev_to = (f"{s}.{q(c)}" for c in (STARTS_COLUMN, PREV_FROM_COLUMN, PREV_TO_COLUMN))
    closes_previous = f"{prev_from} IS NOT NULL AND ({prev_to} IS NULL OR {prev_to} > {starts})"
    ends = f"coalesce({s}.{q(NEXT_FROM_COLUMN)}, CASE WHEN {prev_to} > {starts} THEN {prev_to} END)"
    matched_keys, null_keys, on_merge_key, names, data = _staged_updates(key, columns)
    return "\n".join(
        [
            f"MERGE INTO {table} AS {t}",
            "USING (",
            f"  SELECT {matched_keys}, {prev_from} AS {q(MERGE_FROM_COLUMN)}, {s}.* FROM {changes} AS {s} WHERE {closes_previous}",
            "  UNION ALL",
            f"  SELECT {null_keys}, NULL AS {q(MERGE_FROM_COLUMN)}, {s}.* FROM {changes} AS {s}",
            f") AS {s}",
            f"ON {on_merge_key} AND {t}.{q(VALID_FROM)} = {s}.{q(MERGE_FROM_COLUMN)}",
            f"WHEN MATCHED THEN UPDATE SET {q(VALID_TO)} = {starts}, {q(IS_CURRENT)} = false",
            f"WHEN NOT MATCHED AND {s}.{q(MERGE_FROM_COLUMN)} IS NULL THEN INSERT ({names}) VALUES ({data}, {starts}, {ends}, {ends} IS NULL)",
        ]
    )


def _staged_updates(key: Sequence[str], columns: Sequence[str]) -> tuple[str, str, str, str, str]:
    """What both history MERGEs take from Delta's staged-updates pattern: the source's merge
    keys (a row's own key, or NULLs so that it never matches), the ON clause over them, and
    the inserted columns with their values."""
    t, s, q = TARGET_ALIAS, SOURCE_ALIAS, quote_identifier
    merge_keys = [q(f"{MERGE_KEY_PREFIX}{i}") for i in range(len(key))]
    return (
        ", ".join(f"{s}.{q(k)} AS {m}" for k, m in zip(key, merge_keys)),
        ", ".join(f"NULL AS {m}" for m in merge_keys),
        " AND ".join(f"{t}.{q(k)} = {s}.{m}" for k, m in zip(key, merge_keys)),
        ", ".join(q(c) for c in (*columns, *HISTORY_COLUMNS)),
        ", ".join(f"{s}.{q(c)}" for c in columns),
    )


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
    # Versions are per key across the whole table; a slice cannot close another's rows.
    whole_table_only = True
    current_view = True

    def __init__(self, clock: Callable[[], dt.datetime] = utc_now):
        self.clock = clock

    def describe(self, spec: MaterializeSpec) -> str:
        track = ", ".join(spec.track) or "every non-key column"
        deletes = "close" if spec.close_deletes else "soft (absent keys stay current)"
        clock = f"versions start at {spec.valid_from}" if spec.valid_from else "versions start at the run's time"
        late = ", late versions inserted" if spec.late_insert else ""
        return f"history on key ({', '.join(spec.key)}), track {track}, deletes {deletes}, {clock}{late}"

    def test_scope(self, partitioned: bool) -> str:
        return "the slice" if partitioned else "the current rows"

    def staged_scope(self, spark: SparkSession, rows: DataFrame, target: WriteTarget) -> tuple[DataFrame, str]:
        """The data columns of the rows that will be current: with ``deletes=close`` the
        snapshot, otherwise also the current keys absent from it."""
        current = slice_rows(spark, target)
        if current is None:
            return super().staged_scope(spark, rows, target)
        if target.late_insert:
            return _late_current_rows(current, rows, target), "staged current rows"
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
        table = path_identifier(target.path)
        if target.late_insert:
            return WritePlan(
                operation=(
                    f"Delta MERGE keeping SCD2 history on {target.valid_from}, each new start a version placed among "
                    "its key's versions (late=insert; no commit when every start is there); the first run creates "
                    "the table with one WRITE"
                ),
                statement=(
                    "-- the changes, staged once:\n"
                    + late_staged_changes_query(table, key, shown, track, target.valid_from)
                    + ";\n-- then:\n"
                    + late_history_merge_statement(table, key, shown)
                ),
                predicate=" AND ".join(f"{TARGET_ALIAS}.{quote_identifier(k)} = ..." for k in key)
                + f" AND {TARGET_ALIAS}.{quote_identifier(VALID_FROM)} = ...",
            )
        return WritePlan(
            operation=(
                "Delta MERGE keeping SCD2 history (close changed versions, open new ones"
                + (", close absent keys" if target.close_deletes else "; absent keys stay current")
                + "; no commit when nothing changed); the first run creates the table with one WRITE"
            ),
            statement=(
                "-- the changes, staged once:\n"
                + staged_changes_query(path_identifier(target.path), key, shown, track, target.close_deletes)
                + ";\n-- then:\n"
                + history_merge_statement(path_identifier(target.path), key, shown, valid_from=target.valid_from)
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
        named = (*target.key, *target.track, *([target.valid_from] if target.valid_from else []))
        missing = [c for c in named if c.lower() not in spelled]
        if missing:
            raise self.fail(
                target,
                f"key/track/valid_from columns {missing} are not in the rows (columns: {df.columns}). "
                "Project them in the SELECT or fix key=/track=/valid_from=.",
                allow_retries=False,
            )
        valid_from = spelled[target.valid_from.lower()] if target.valid_from else None
        if valid_from is not None:
            self._check_source_timestamp_type(target, df, valid_from)
        clashing = [c for c in df.columns if c.lower().startswith(INTERNAL_PREFIX)]
        if clashing:
            raise self.fail(
                target,
                f"columns {clashing} use the prefix {INTERNAL_PREFIX!r}, which the history MERGE "
                "uses internally. Rename them in the SELECT.",
                allow_retries=False,
            )
        key = [spelled[k.lower()] for k in target.key]
        track = _default_track(target, df.columns)
        self._check_trackable(target, df, track)
        # From here to the commit no other history run on this table may commit: a run
        # that checked its timestamp against the table before another committed would
        # close that run's versions before they began.
        with table_lock(spark, target.path):
            existing = delta_schema(spark, target.path)
            if existing is None:
                # The key check and the write both read the rows: computed once, cached.
                staged = persist_rows(df)
                try:
                    check_keys(self, staged, target)  # a later run checks them in its diff
                    if valid_from is not None:
                        self._check_no_null_timestamps(staged, target, key, valid_from)
                    return self._create(spark, staged, target, self._run_timestamp(run_timestamp), valid_from)
                finally:
                    staged.unpersist()
            # The diff reads the rows once (its key check included) and is staged itself:
            # caching the rows first would only copy them (B1: 1M rows).
            return self._merge(spark, df, target, key, track, run_timestamp, valid_from)

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

    def _check_source_timestamp_type(self, target: WriteTarget, df: DataFrame, column: str) -> None:
        kind = next(f.dataType.simpleString() for f in df.schema.fields if f.name == column)
        if kind not in SOURCE_TIMESTAMP_TYPES:
            raise self.fail(
                target,
                f"valid_from column '{column}' is {kind}; a version's start must be a TIMESTAMP or a DATE. "
                f"Convert it in the SELECT, e.g. to_timestamp({column}) AS {column}. Nothing was written.",
                allow_retries=False,
            )

    def _check_no_null_timestamps(self, staged: DataFrame, target: WriteTarget, key: Sequence[str], column: str) -> None:
        """A first run's rows each start a version: none may lack its timestamp."""
        nulls = staged.where(staged[column].isNull()).select(*key).limit(SHOWN_KEYS + 1).collect()
        if nulls:
            raise self.fail(
                target,
                f"valid_from column '{column}' is NULL for {_keys_text(nulls, key)}: such a row's version "
                f"would have no start. Filter those rows out or coalesce({column}, ...) in the SELECT. "
                "Nothing was written.",
                allow_retries=False,
            )

    def _create(
        self,
        spark: SparkSession,
        staged: DataFrame,
        target: WriteTarget,
        run_ts: dt.datetime,
        valid_from: Optional[str] = None,
    ) -> WriteResult:
        view = f"_assetlake_snapshot_{uuid.uuid4().hex}"
        staged.createOrReplaceTempView(view)
        try:
            q = quote_identifier
            start = f":{RUN_TS_PARAM}" if valid_from is None else q(valid_from)
            rows = spark.sql(
                f"SELECT *, CAST({start} AS TIMESTAMP) AS {q(VALID_FROM)}, "
                f"CAST(NULL AS TIMESTAMP) AS {q(VALID_TO)}, true AS {q(IS_CURRENT)} FROM {view}",
                args={RUN_TS_PARAM: run_ts},
            )
            # mode "error" (errorifexists; the only spelling Spark Connect accepts) or CREATE
            # TABLE: of two concurrent first runs, the second fails instead of appending a
            # second set of current rows.
            writer = rows.write.format("delta").mode("error").option("userMetadata", target.stamp.user_metadata())
            if needs_create_statement(target):
                create_table(spark, rows, target, otherwise=lambda: writer.save(target.path))
            else:
                writer.save(target.path)
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
        valid_from: Optional[str] = None,
    ) -> WriteResult:
        table_df = read(spark, target.path)
        self._check_frozen_schema(target, staged, table_df)
        table = path_identifier(target.path)
        view, changes_view = (f"_assetlake_{name}_{uuid.uuid4().hex}" for name in ("snapshot", "changes"))
        staged.createOrReplaceTempView(view)
        try:
            # The diff, computed once and staged: its counts and the MERGE both read it.
            if target.late_insert:
                query = late_staged_changes_query(table, key, list(staged.columns), track, valid_from, snapshot=view)
            else:
                query = staged_changes_query(table, key, list(staged.columns), track, target.close_deletes, snapshot=view)
            changes = local_checkpoint(spark.sql(query))
            try:
                self._check_staged_keys(changes, target, key)
                if not changes.take(1):
                    return no_commit(current_version(spark, target.path))
                changes.createOrReplaceTempView(changes_view)
                if target.late_insert:
                    self._check_late_rows(changes, target, key, valid_from)
                    statement = late_history_merge_statement(table, key, list(staged.columns), changes=changes_view)
                    with stamped_session(spark, target.stamp):
                        spark.sql(statement).collect()
                    return result_from_history(
                        spark, target, committed=True, rows_key=("numTargetRowsInserted", "numTargetRowsUpdated")
                    )
                # Only a run that writes needs its timestamp, taken after the table was read (so
                # every run committed before took its own earlier) and checked before the MERGE.
                if valid_from is None:
                    run_ts = self._checked_run_timestamp(spark, target, table, run_timestamp)
                else:
                    run_ts = self._run_timestamp(run_timestamp)
                    self._check_source_timestamps(spark, target, table, changes_view, key, valid_from, run_ts)
                # MERGE through SQL, not the DeltaTable builder: the same statement runs on a
                # classic session and on a Spark Connect server without the Delta Connect plugin.
                statement = history_merge_statement(
                    table, key, list(staged.columns), changes=changes_view, valid_from=valid_from
                )
                with stamped_session(spark, target.stamp):
                    spark.sql(statement, args={RUN_TS_PARAM: run_ts}).collect()
            finally:
                release_checkpoint(changes)  # here, not from the garbage collector (see local_checkpoint)
        finally:
            spark.catalog.dropTempView(view)
            spark.catalog.dropTempView(changes_view)
        return result_from_history(
            spark, target, committed=True, rows_key=("numTargetRowsInserted", "numTargetRowsUpdated")
        )

    def _checked_run_timestamp(
        self, spark: SparkSession, target: WriteTarget, table: str, run_timestamp: Optional[dt.datetime]
    ) -> dt.datetime:
        """The run's timestamp, refused unless later than every valid_from/valid_to in the table."""
        q = quote_identifier
        run_ts = self._run_timestamp(run_timestamp)
        # valid_to counts too: a closing delete stamps valid_to without opening a version.
        # The version's file statistics bound both columns, read from its checksum or its log
        # without Spark: a timestamp above the bound is above every value, the common case.
        if reads_log_here(target.path):
            bound = table_timestamp_bound(target.path, [VALID_FROM, VALID_TO])
            if bound is not None and to_micros(run_ts) > bound:
                return run_ts
        # Otherwise both columns of the whole table are read: Delta's metadata-only aggregates
        # (OptimizeMetadataOnlyDeltaQuery) cover numbers and dates, not timestamps, and not
        # tables with deletion vectors. It grows with the history (B1: 1.0 s at 2M rows),
        # which is why a run with nothing to change never asks.
        latest = spark.sql(
            f"SELECT unix_micros(greatest(max({q(VALID_FROM)}), coalesce(max({q(VALID_TO)}), max({q(VALID_FROM)})))) "
            f"AS latest FROM {table}"
        ).first()["latest"]
        if latest is not None and to_micros(run_ts) <= latest:
            raise self.fail(
                target,
                f"non-monotonic run timestamp: {run_ts.isoformat()} is not later than "
                f"{_from_micros(latest).isoformat()}, the latest valid_from/valid_to in the table. "
                "Every history run needs a later UTC timestamp than the one before; check the "
                "clock of the machine running it.",
                allow_retries=False,
            )
        return run_ts

    def _check_source_timestamps(
        self,
        spark: SparkSession,
        target: WriteTarget,
        table: str,
        changes: str,
        key: Sequence[str],
        valid_from: str,
        run_ts: dt.datetime,
    ) -> None:
        """Refuse the run unless each staged version starts after every timestamp of its key.

        A new version starts at its row's ``valid_from`` column; a closed absent key
        (``deletes=close``) ends at ``run_ts``. Either must be later than the key's latest
        ``valid_from``/``valid_to`` (a closed version's ``valid_to``, else the current one's
        ``valid_from``), or history would overlap, run backwards or hold an empty version.
        """
        q = quote_identifier
        keys = ", ".join(q(k) for k in key)
        on = " AND ".join(f"c.{q(k)} = h.{q(k)}" for k in key)
        start = f"CAST(c.{q(valid_from)} AS TIMESTAMP)"
        action = f"c.{q(ACTION_COLUMN)}"
        # The key's own columns are the data's; the check's own carry the internal prefix.
        starts, latest = q(f"{INTERNAL_PREFIX}starts"), q(f"{INTERNAL_PREFIX}latest")
        query = (
            f"SELECT {', '.join(f'c.{q(k)}' for k in key)}, {action}, unix_micros({start}) AS {starts}, "
            f"unix_micros(h.{latest}) AS {latest} FROM {changes} AS c "
            f"LEFT JOIN (SELECT {keys}, max(coalesce({q(VALID_TO)}, {q(VALID_FROM)})) AS {latest} FROM {table} "
            f"GROUP BY {keys}) AS h ON {on} "
            f"WHERE {action} <> 'close' AND ({start} IS NULL OR {start} <= h.{latest}) "
            f"OR {action} = 'close' AND CAST(:{RUN_TS_PARAM} AS TIMESTAMP) <= h.{latest} "
            f"LIMIT {SHOWN_KEYS + 1}"
        )
        late = [row.asDict() for row in spark.sql(query, args={RUN_TS_PARAM: run_ts}).collect()]
        if not late:
            return
        shown = []
        for row in late[:SHOWN_KEYS]:
            name = ", ".join(f"{k}={row[k]!r}" for k in key)
            before = row[f"{INTERNAL_PREFIX}latest"]
            before = _from_micros(before).isoformat() if before is not None else None
            start_micros = row[f"{INTERNAL_PREFIX}starts"]
            if row[ACTION_COLUMN] == "close":
                shown.append(f"{name}: closing at the run's time {run_ts.isoformat()}, not after {before}")
            elif start_micros is None:
                shown.append(f"{name}: {valid_from} is NULL")
            else:
                shown.append(f"{name}: {valid_from} {_from_micros(start_micros).isoformat()}, not after {before}")
        more = " and more" if len(late) > SHOWN_KEYS else ""
        raise self.fail(
            target,
            f"history runs on valid_from={valid_from}, and these changes do not start after their key's "
            f"latest valid_from/valid_to: {'; '.join(shown)}{more}. A late, repeated or missing timestamp "
            "would overlap or reorder a key's versions. Fix the source's timestamps (a changed row needs "
            f"a later {valid_from}), or rebuild the history by replaying the source into a new table. "
            "Nothing was written.",
            allow_retries=False,
        )

    def _check_late_rows(self, changes: DataFrame, target: WriteTarget, key: Sequence[str], valid_from: str) -> None:
        """Refuse a ``late=insert`` run with a row without a start, or a row whose key has a
        version starting at the same time with other tracked values (the source says two
        things of one moment: which is right depends on the order they came in)."""
        refused = changes.where(changes[ACTION_COLUMN].isin("no_start", "conflict"))
        found = refused.select(*key, valid_from, ACTION_COLUMN).limit(SHOWN_KEYS + 1).collect()
        if not found:
            return
        shown = []
        for row in found[:SHOWN_KEYS]:
            name = ", ".join(f"{k}={row[k]!r}" for k in key)
            if row[ACTION_COLUMN] == "no_start":
                shown.append(f"{name}: {valid_from} is NULL")
            else:
                shown.append(f"{name}: a version starting at {row[valid_from]} holds other values")
        more = " and more" if len(found) > SHOWN_KEYS else ""
        raise self.fail(
            target,
            f"history runs on valid_from={valid_from} with late=insert, and these rows cannot be placed: "
            f"{'; '.join(shown)}{more}. A version needs a start, and one start one set of values: fix the "
            f"source's rows (a correction of a change needs a {valid_from} of its own). Nothing was written.",
            allow_retries=False,
        )

    def _check_staged_keys(self, changes: DataFrame, target: WriteTarget, key: Sequence[str]) -> None:
        """Fail, naming a few, when the staged diff holds NULL or duplicated keys."""
        check_staged_keys(self, target, key, changes.where(changes[ACTION_COLUMN] == "invalid"), KEY_ROWS_COLUMN)

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


def _late_current_rows(table: DataFrame, rows: DataFrame, target: WriteTarget) -> DataFrame:
    """The current version of each key once a ``late=insert`` run commits: a row starting
    after its key's current version replaces it; an earlier one lands in the past."""
    spelled = {c.lower(): c for c in rows.columns}
    key = [spelled.get(k.lower(), k) for k in target.key]
    row_start, current_start = STARTS_COLUMN, f"{INTERNAL_PREFIX}current_start"
    live = table.where(table[IS_CURRENT])
    since = live.select(*key, live[VALID_FROM].alias(current_start))
    dated = rows.withColumn(row_start, rows[spelled.get(target.valid_from.lower(), target.valid_from)].cast("timestamp"))
    joined = dated.join(since, on=key, how="left")
    newer = joined.where(joined[current_start].isNull() | (joined[row_start] > joined[current_start]))
    newer = newer.drop(row_start, current_start)
    kept = live.join(newer.select(*key), on=key, how="left_anti").drop(*HISTORY_COLUMNS)
    return kept.unionByName(newer, allowMissingColumns=True)


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


def _keys_text(rows: Sequence, key: Sequence[str]) -> str:
    """``id=1, id=2 and more``: the keys of up to :data:`SHOWN_KEYS` rows."""
    shown = "; ".join(", ".join(f"{k}={row[k]!r}" for k in key) for row in rows[:SHOWN_KEYS])
    return shown + (" and more" if len(rows) > SHOWN_KEYS else "")


def _as_utc(ts: dt.datetime) -> dt.datetime:
    """Aware UTC (naive means UTC), to the microsecond (Python's own resolution)."""
    return ts.replace(tzinfo=dt.timezone.utc) if ts.tzinfo is None else ts.astimezone(dt.timezone.utc)


def _from_micros(micros: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=micros)
