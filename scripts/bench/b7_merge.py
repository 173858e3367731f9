"""B7 of ``docs/performance.md``: merge on key. A ``--rows`` target (1M), a source of a tenth of it
(100k: 10% of the source changed, 5% new keys, the rest identical to the target).

Variants, each on its own fresh SHALLOW CLONE of one base target (untimed), same session; the
clones of ours and bare get the table properties the product gives the tables its keyed writes
create with ``SparkDeltaResource(deletion_vectors=True)``, dbt's keeps the base's (what dbt-spark
creates: Delta's defaults; ``--deletion-vectors`` turns them on for the base, so for dbt too):
    ours: the product's merge write, as the IO manager calls it:
        ``strategy_for(WriteStrategy.MERGE).write(spark, df, WriteTarget(..., key=("id",)))``
        with a fresh ``CommitStamp`` per repetition; ``df`` reads the source table.
    dbt:  ``dbt run`` (``dbtRunner``, in this process) of an incremental model
        ``materialized='incremental', incremental_strategy='merge', unique_key='id',
        file_format='delta'`` over ``source('bench_src', 'b7_source')``, profile ``method:
        session`` (the same SparkSession). Timed: the whole ``dbt run`` invocation (partial
        parse, relation cache, compile, the MERGE); also its model's ``execute`` phase alone.
    bare: the single hand-written ``MERGE INTO ... WHEN MATCHED AND <a column changed,
        NULL-safe> THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``.

Goal: median(ours) / median(dbt's model execute) <= 0.7 (the stricter of the two dbt figures:
dbt's own parse and start-up are not counted against it); rows updated ~10% of the source
for ours, every matched row (~95%) for dbt.
"""

import os
import uuid
from typing import Optional

from common import (Dbt, Variant, changed_sql, dbt_profile, dbt_sources, fmt_commits, fresh_copy, measure_interleaved,
                    path_ident, progress, register_source, rows_sql, write_delta,
                    write_files)

GOAL = 0.7
COLUMNS = ("id", "customer_id", "name", "amount", "status", "updated_on")
DBT_SCHEMA, DBT_MODEL = "bench_dbt", "b7_dbt"
SRC_SCHEMA, SRC_TABLE = "bench_src", "b7_source"


def write_dbt_project(root: str) -> None:
    write_files(root, {
        "dbt_project.yml": "name: bench\nversion: '1.0'\nconfig-version: 2\nprofile: bench\nmodel-paths: [models]\n",
        "profiles.yml": dbt_profile("bench", DBT_SCHEMA),
        "models/sources.yml": dbt_sources(SRC_SCHEMA, SRC_TABLE),
        f"models/{DBT_MODEL}.sql": (
            "{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id', "
            "file_format='delta') }}\n"
            f"select {', '.join(COLUMNS)} from {{{{ source('{SRC_SCHEMA}', '{SRC_TABLE}') }}}}\n"
        ),
    })


def run(spark, workdir: str, rows: int, reps: int, seed: int = 42, deletion_vectors: bool = False,
        table_properties: Optional[dict] = None) -> dict:
    from assetlake_dagster.spec import TableUri, WriteStrategy
    from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

    n_source = rows // 10
    changed, new = n_source // 10, n_source // 20
    identical = n_source - changed - new
    lake = os.path.join(workdir, "lake", "b7")
    base, source = os.path.join(lake, "base"), os.path.join(lake, "source")
    progress(f"B7 generating: target {rows} rows, source {n_source} ({changed} changed, {new} new, {identical} identical)")
    files = max(2, rows // 125_000)  # ~8 files at 1M rows
    write_delta(spark, rows_sql(0, rows), base, files=files)
    if deletion_vectors:
        spark.sql(f"ALTER TABLE {path_ident(base)} SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)")
    write_delta(spark, f"{changed_sql(rows, changed, identical, seed)} UNION ALL {rows_sql(rows, new)}", source, files=2)
    register_source(spark, SRC_SCHEMA, SRC_TABLE, source, DBT_SCHEMA)

    dbt_root = os.path.join(workdir, "dbt_b7")
    write_dbt_project(dbt_root)
    dbt = Dbt(dbt_root)

    merge = strategy_for(WriteStrategy.MERGE)
    # ours starts from the table the product creates (table_properties: with
    # SparkDeltaResource(deletion_vectors=True), deletion vectors); dbt's from what dbt-spark
    # creates (Delta's defaults) unless --deletion-vectors; bare, the hand-written statement,
    # from the same table as ours.
    product_props = table_properties or None
    ours_path, bare_path = os.path.join(lake, "ours"), os.path.join(lake, "bare")
    dbt_table = f"{DBT_SCHEMA}.{DBT_MODEL}"

    def ours() -> None:
        df = spark.read.format("delta").load(source)
        target = WriteTarget(
            uri=TableUri("b7", "ours"), path=ours_path, strategy=WriteStrategy.MERGE,
            stamp=CommitStamp(run_id=uuid.uuid4().hex, asset="b7/ours"), key=("id",),
        )
        result = merge.write(spark, df, target)
        return {"product_rows_written": result.rows_written}

    non_key = [c for c in COLUMNS if c != "id"]
    changed_cond = " OR ".join(f"NOT (t.{c} <=> s.{c})" for c in non_key)
    bare_sql = (
        f"MERGE INTO {path_ident(bare_path)} AS t USING {path_ident(source)} AS s ON t.id = s.id "
        f"WHEN MATCHED AND ({changed_cond}) THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )

    def bare() -> None:
        spark.sql(bare_sql).collect()

    variants = [
        Variant("ours", lambda: fresh_copy(spark, base, ours_path, properties=product_props), ours, path_ident(ours_path),
                lambda: spark.read.format("delta").load(ours_path)),
        Variant("dbt", lambda: fresh_copy(spark, base, dbt_table, managed=True), lambda: Dbt.timings(dbt.invoke("run", DBT_MODEL)),
                dbt_table, lambda: spark.table(dbt_table)),
        Variant("bare", lambda: fresh_copy(spark, base, bare_path, properties=product_props), bare, path_ident(bare_path),
                lambda: spark.read.format("delta").load(bare_path)),
    ]
    result = measure_interleaved(spark, "B7", variants, reps)
    ours_s = result["ours"]["seconds"]["median"]
    dbt_exec = result["dbt"]["dbt_execute_seconds"]["median"]
    dbt_total = result["dbt"]["seconds"]["median"]
    bare_s = result["bare"]["seconds"]["median"]
    ratio = ours_s / dbt_exec
    ok = ratio <= GOAL
    result.update({
        "benchmark": "B7", "rows": rows, "source_rows": n_source, "changed": changed, "new": new,
        "deletion_vectors": deletion_vectors, "product_table_properties": product_props, "reps": reps,
        "ratio_ours_dbt_execute": ratio, "ratio_ours_dbt_run": ours_s / dbt_total, "ratio_ours_bare": ours_s / bare_s,
        "goal": GOAL, "ok": ok,
        "sql": {"bare": bare_sql, "ours": merge.plan(WriteTarget(
            uri=TableUri("b7", "ours"), path=ours_path, strategy=WriteStrategy.MERGE,
            stamp=CommitStamp("plan", "b7/ours"), key=("id",)), list(COLUMNS)).statement},
    })
    c = [result[v]["commits"] for v in ("ours", "dbt", "bare")]
    u = [result[v]["rows_updated"] for v in ("ours", "dbt", "bare")]
    result["line"] = (
        f"B7 ratio={ratio:.2f} goal<={GOAL:.2f} {'ok' if ok else 'MISSED'} commits={fmt_commits(c)} "
        f"(ours/dbt/bare) updated={fmt_commits(u)} rows={rows}/{n_source} reps={reps}"
        f"{' dbt-dv=on' if deletion_vectors else ''}{' ours-dv=on' if product_props else ''} | ours={ours_s:.2f}s dbt-execute={dbt_exec:.2f}s "
        f"dbt-run={dbt_total:.2f}s bare={bare_s:.2f}s ours/dbt-run={ours_s / dbt_total:.2f} ours/bare={ours_s / bare_s:.2f} "
        f"spread={'/'.join(format(result[v]['seconds']['spread'], '.0%') for v in ('ours', 'dbt', 'bare'))}"
    )
    return result
