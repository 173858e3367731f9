"""B1 of ``docs/performance.md``: SCD2 apply. A history of ``rows`` keys (1M): ``rows`` current
versions and ``rows`` closed ones (one older version per key); a snapshot with 1% of the keys
changed in a tracked column, 0.5% changed in the untracked column only, 0.2% new keys and 0.2%
of the current keys absent (``deletes=close``); the rest identical. About 2.4% of ``rows``
written: 1% closed + 1% opened (changes), 0.2% opened (new), 0.2% closed (deletes).

Data (deterministic, no random generator): row ``i`` as in :func:`common.rows_sql` (id,
customer_id, name, amount, status, updated_on); its closed version has ``amount - 1``, status
``'old'`` and ``updated_on`` a year earlier, valid 2023-01-01 .. 2024-01-01; its current version
is valid from 2024-01-01. Which keys change is the bijective scramble
``rank = (id * P + seed) mod rows``: ``rank < 1%`` tracked change (amount + 1, status
``'changed'``, updated_on + 1 day), then 0.5% untracked-only change (updated_on + 1 day), then
0.2% absent; new keys ``rows ..``. Tracked: customer_id, name, amount, status; untracked:
updated_on.

Variants, each on its own fresh SHALLOW CLONE of a base table (untimed), same session:
    ours: the product's history write, as the IO manager calls it:
        ``strategy_for(WriteStrategy.HISTORY).write(spark, df, WriteTarget(..., key=("id",),
        track=TRACKED, close_deletes=True))`` with a fresh ``CommitStamp`` per repetition and
        the product's own clock (UTC now); ``df`` reads the snapshot table.
    dbt:  ``dbt snapshot`` (``dbtRunner``, in this process, profile ``method: session``) of a
        snapshot defined in YAML: ``relation: source('bench_src', 'b1_snapshot')``,
        ``strategy: check``, ``check_cols: TRACKED``, ``unique_key: id``,
        ``hard_deletes: invalidate``, ``file_format: delta``, in its own schema (the profile's,
        ``bench_b1_dbt``). Its base table holds the same history in dbt's own layout, generated
        the way dbt-spark's snapshot macros write it: the data columns, then ``dbt_scd_id =
        md5(coalesce(cast(id as string), '') || '|' || coalesce(cast(<updated_at> as string),
        ''))`` (``spark__snapshot_hash_arguments`` of ``scd_args(unique_key, updated_at)``; with
        the check strategy ``updated_at`` is ``snapshot_get_time()`` = ``current_timestamp()``
        of the run that opened the version, here the version's valid_from), ``dbt_updated_at =
        dbt_valid_from = <that time>``, ``dbt_valid_to`` NULL for the current version.
        Timed: the whole ``dbt snapshot`` invocation (partial parse, relation cache, the
        check-columns query, the staging view, the MERGE); also its node's ``execute`` phase.
    bare: the hand-written single staged-updates MERGE (b3's ``_bare_history_sql`` with the
        tracked columns only in the change condition), with ``WHEN NOT MATCHED BY SOURCE AND
        t.is_current THEN UPDATE`` closing absent keys; one fixed run timestamp.

Equality before timing: each output normalized to the data columns plus ``open`` (ours/bare
``is_current``, dbt ``dbt_valid_to IS NULL``), compared as multisets (``EXCEPT ALL`` both ways and
the counts): per key the same versions with the same values and the same open flag; timestamps
and ids ignored.

Untracked-only changes (checked, history.py ``staged_changes_query``: a row enters the staged
changes only when its key is new, absent, or a tracked column differs): the product leaves the
current row as it is, its untracked column keeps the OLD value (no in-place update, no new
version; DESIGN.md section 3 "untracked changes are ignored"). dbt's check strategy does the same
(the key is neither in ``insertions`` nor ``updates`` of its staging view, so its MERGE does not
touch the row), and so does the bare MERGE (its change condition lists the tracked columns
only). So the three outputs are compared as they are: the 0.5% untracked-only keys keep their
old ``updated_on`` in all three, and the equality check would fail if one of them updated it.

Goals: median(ours) / median(dbt's snapshot node execute) <= 0.4 (the stricter dbt figure: its
own parse and start-up are not counted against it); median(ours) / median(bare) <= 1.25; ours
makes exactly 1 commit.
"""

import os
import uuid
from typing import Optional

from common import (BenchError, Dbt, Variant, _step, bare_history_merge, dbt_profile, dbt_sources, fmt_commits, fresh_copy,
                    measure_interleaved, path_ident, progress, register_source, rows_sql, write_delta,
                    write_files)

GOAL, GOAL_BARE = 0.4, 1.25
COLUMNS = ("id", "customer_id", "name", "amount", "status", "updated_on")
TRACKED = ("customer_id", "name", "amount", "status")
UNTRACKED = ("updated_on",)
DBT_SCHEMA, DBT_SNAPSHOT = "bench_b1_dbt", "b1_dbt"
SRC_SCHEMA, SRC_TABLE = "bench_src", "b1_snapshot"
CURRENT_FROM, CLOSED_FROM = "2024-01-01 00:00:00", "2023-01-01 00:00:00"
BARE_TS = "2025-01-01 00:00:00"


def counts(rows: int) -> dict:
    """The snapshot's make-up at ``rows`` keys: exact counts."""
    return {"changed": rows // 100, "untracked_only": rows // 200, "new": rows // 500, "deleted": rows // 500}


def history_sql(rows: int) -> str:
    """The base history in the product's layout: per key one closed and one current version."""
    cols = ", ".join(COLUMNS)
    current = (f"SELECT {cols}, TIMESTAMP'{CURRENT_FROM}' AS valid_from, CAST(NULL AS TIMESTAMP) AS valid_to, "
               f"true AS is_current FROM ({rows_sql(0, rows)})")
    closed = (f"SELECT id, customer_id, name, amount - 1 AS amount, 'old' AS status, "
              f"date_sub(updated_on, 365) AS updated_on, TIMESTAMP'{CLOSED_FROM}' AS valid_from, "
              f"TIMESTAMP'{CURRENT_FROM}' AS valid_to, false AS is_current FROM ({rows_sql(0, rows)})")
    return f"{current} UNION ALL {closed}"


def dbt_history_sql(history_path: str) -> str:
    """The same history in dbt-spark's snapshot layout (``default__build_snapshot_table``:
    ``select *, dbt_scd_id, dbt_updated_at, dbt_valid_from, dbt_valid_to``), the scd id as
    ``spark__snapshot_hash_arguments([unique_key, updated_at])`` computes it."""
    cols = ", ".join(COLUMNS)
    scd_id = "md5(coalesce(cast(id as string), '') || '|' || coalesce(cast(valid_from as string), ''))"
    return (f"SELECT {cols}, {scd_id} AS dbt_scd_id, valid_from AS dbt_updated_at, valid_from AS dbt_valid_from, "
            f"valid_to AS dbt_valid_to FROM {path_ident(history_path)}")


def snapshot_sql(rows: int, seed: int) -> str:
    """The snapshot: every key but the absent ones, with the tracked / untracked-only changes,
    plus the new keys."""
    c = counts(rows)
    rank = f"pmod(id * {_step(rows)} + {seed}, {rows})"
    tracked, touched = c["changed"], c["changed"] + c["untracked_only"]
    gone_to = touched + c["deleted"]
    return (
        f"SELECT id, customer_id, name, "
        f"CASE WHEN {rank} < {tracked} THEN amount + 1 ELSE amount END AS amount, "
        f"CASE WHEN {rank} < {tracked} THEN 'changed' ELSE status END AS status, "
        f"CASE WHEN {rank} < {touched} THEN date_add(updated_on, 1) ELSE updated_on END AS updated_on "
        f"FROM ({rows_sql(0, rows)}) WHERE NOT ({rank} >= {touched} AND {rank} < {gone_to}) "
        f"UNION ALL {rows_sql(rows, c['new'])}"
    )


def bare_history_sql(table: str, source: str) -> str:
    """The staged-updates MERGE, change condition on the tracked columns only."""
    return bare_history_merge(table, source, COLUMNS, TRACKED, BARE_TS)


def write_dbt_project(root: str) -> None:
    write_files(root, {
        "dbt_project.yml": ("name: bench_b1\nversion: '1.0'\nconfig-version: 2\nprofile: bench_b1\n"
                            "model-paths: [models]\nsnapshot-paths: [snapshots]\n"),
        "profiles.yml": dbt_profile("bench_b1", DBT_SCHEMA),
        "models/sources.yml": dbt_sources(SRC_SCHEMA, SRC_TABLE),
        "snapshots/snapshots.yml": (
            f"snapshots:\n  - name: {DBT_SNAPSHOT}\n    relation: source('{SRC_SCHEMA}', '{SRC_TABLE}')\n"
            f"    config:\n      unique_key: id\n      strategy: check\n"
            f"      check_cols: [{', '.join(TRACKED)}]\n      hard_deletes: invalidate\n      file_format: delta\n"
        ),
    })


def run(spark, workdir: str, rows: int = 1_000_000, reps: int = 5, seed: int = 42,
        table_properties: Optional[dict] = None) -> dict:
    """B1 at ``rows`` keys, ``reps`` timed rounds. ``table_properties``: given, the clones of ours
    and bare get them in their cloning commit (``fresh_copy(..., properties=...)``, e.g. the
    product's keyed-table properties / deletion vectors), dbt's keeps the base's (Delta's
    defaults, what dbt-spark creates); not given, all three clones keep the base's."""
    from assetlake_dagster.spec import TableUri, WriteStrategy
    from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

    c = counts(rows)
    lake = os.path.join(workdir, "lake", "b1")
    base, dbt_base, source = (os.path.join(lake, p) for p in ("base", "dbt_base", "source"))
    progress(f"B1 generating: history {rows} current + {rows} closed rows; snapshot {c['changed']} tracked "
             f"changes, {c['untracked_only']} untracked-only, {c['new']} new, {c['deleted']} absent")
    files = max(2, (2 * rows) // 250_000)  # ~8 files at 1M keys (2M rows)
    write_delta(spark, history_sql(rows), base, files=files)
    write_delta(spark, dbt_history_sql(base), dbt_base, files=files)
    write_delta(spark, snapshot_sql(rows, seed), source, files=max(1, files // 4))
    register_source(spark, SRC_SCHEMA, SRC_TABLE, source, DBT_SCHEMA)

    dbt_root = os.path.join(workdir, "dbt_b1")
    write_dbt_project(dbt_root)
    dbt = Dbt(dbt_root)

    history = strategy_for(WriteStrategy.HISTORY)
    ours_path, bare_path = os.path.join(lake, "ours"), os.path.join(lake, "bare")
    dbt_table = f"{DBT_SCHEMA}.{DBT_SNAPSHOT}"

    def target(stamp) -> WriteTarget:
        return WriteTarget(uri=TableUri("b1", "ours"), path=ours_path, strategy=WriteStrategy.HISTORY, stamp=stamp,
                           key=("id",), track=TRACKED, close_deletes=True)

    def ours() -> dict:
        df = spark.read.format("delta").load(source)
        result = history.write(spark, df, target(CommitStamp(run_id=uuid.uuid4().hex, asset="b1/ours")))
        return {"product_rows_written": result.rows_written}

    bare_sql = bare_history_sql(path_ident(bare_path), path_ident(source))

    def bare() -> None:
        spark.sql(bare_sql).collect()

    data = list(COLUMNS)
    props = {"properties": dict(table_properties)} if table_properties else {}
    variants = [
        Variant("ours", lambda: fresh_copy(spark, base, ours_path, **props), ours, path_ident(ours_path),
                lambda: spark.read.format("delta").load(ours_path).selectExpr(*data, "is_current AS open")),
        Variant("dbt", lambda: fresh_copy(spark, dbt_base, dbt_table, managed=True), lambda: Dbt.timings(dbt.invoke("snapshot", DBT_SNAPSHOT)),
                dbt_table, lambda: spark.table(dbt_table).selectExpr(*data, "dbt_valid_to IS NULL AS open")),
        Variant("bare", lambda: fresh_copy(spark, base, bare_path, **props), bare, path_ident(bare_path),
                lambda: spark.read.format("delta").load(bare_path).selectExpr(*data, "is_current AS open")),
    ]
    result = measure_interleaved(spark, "B1", variants, reps)
    # The expected shape, beyond mutual equality: 2*rows + tracked changes + new rows, and the
    # open versions = rows - absent + new.
    expected_rows = 2 * rows + c["changed"] + c["new"]
    if result["equality"] and result["equality"]["rows"] != expected_rows:
        raise BenchError(f"B1 outputs are equal but hold {result['equality']['rows']} rows, expected {expected_rows}")
    # The untracked-only keys: ours (the table holds ours' last output) kept their old
    # updated_on in the current version, so exactly those current rows differ from the snapshot.
    stale = spark.sql(
        f"SELECT count(*) AS n FROM {path_ident(ours_path)} AS t JOIN {path_ident(source)} AS s "
        f"ON t.id = s.id AND t.is_current WHERE NOT (t.updated_on <=> s.updated_on)"
    ).first()["n"]
    result["untracked_only_kept_old_value"] = stale
    if stale != c["untracked_only"]:
        raise BenchError(f"B1: {stale} current rows of ours differ from the snapshot in the untracked column, "
                         f"expected the {c['untracked_only']} untracked-only keys")
    ours_s = result["ours"]["seconds"]["median"]
    dbt_exec = result["dbt"]["dbt_execute_seconds"]["median"]
    dbt_total = result["dbt"]["seconds"]["median"]
    bare_s = result["bare"]["seconds"]["median"]
    ratio, ratio_bare = ours_s / dbt_exec, ours_s / bare_s
    commits = [result[v]["commits"] for v in ("ours", "dbt", "bare")]
    updated = [result[v]["rows_updated"] for v in ("ours", "dbt", "bare")]
    inserted = [result[v]["rows_inserted"] for v in ("ours", "dbt", "bare")]
    ok = ratio <= GOAL and ratio_bare <= GOAL_BARE and commits[0] == 1
    result.update({
        "benchmark": "B1", "rows": rows, "history_rows": 2 * rows, **c, "tracked": list(TRACKED),
        "untracked": list(UNTRACKED), "reps": reps, "table_properties": table_properties, "expected_rows_after": expected_rows,
        "expected_rows_written": 2 * c["changed"] + c["new"] + c["deleted"],
        "ratio_ours_dbt_execute": ratio, "ratio_ours_dbt_snapshot": ours_s / dbt_total, "ratio_ours_bare": ratio_bare,
        "goal": {"ours_dbt_execute": GOAL, "ours_bare": GOAL_BARE, "ours_commits": 1}, "ok": ok,
        "sql": {"bare": bare_sql, "ours": history.plan(target(CommitStamp("plan", "b1/ours")), data).statement},
    })
    result["line"] = (
        f"B1 ratio={ratio:.2f} goal<={GOAL:.2f} {'ok' if ok else 'MISSED'} commits={fmt_commits(commits)} "
        f"(ours/dbt/bare) ratio_bare={ratio_bare:.2f} goal<={GOAL_BARE:.2f} updated={fmt_commits(updated)} "
        f"inserted={fmt_commits(inserted)} rows={rows}+{rows} reps={reps}{' props=on' if table_properties else ''} "
        f"| ours={ours_s:.2f}s "
        f"dbt-execute={dbt_exec:.2f}s dbt-snapshot={dbt_total:.2f}s bare={bare_s:.2f}s "
        f"ours/dbt-snapshot={ours_s / dbt_total:.2f} "
        f"spread={'/'.join(format(result[v]['seconds']['spread'], '.0%') for v in ('ours', 'dbt', 'bare'))}"
    )
    return result
