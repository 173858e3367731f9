"""B7 of ``docs/performance.md``: merge on key, in four shapes (``--shape``; ``all`` runs the
four in sequence, each printing its own line). A ``--rows`` target (1M) and a source of a tenth
of it (100k):

    random (B7-random): 10% of the source changed, 5% new keys, the rest identical to the
        target; the source's existing keys scattered over the whole key space, the target's
        rows spread over its files at random (~8 files at 1M rows), so every file is touched.
        Goal: median(ours) / median(bare) <= 1.05 (bare: the fastest hand-written single Delta
        statement giving the same table); ours / dbt (its model's ``execute``) printed beside
        it (``ratio_dbt=``), no goal. Rows updated: the changed 10k for ours, every matched row
        (95k) for dbt.
    clustered (B7-clustered): the same counts, but the target is clustered by key (Delta
        liquid clustering, as the product lays a table out with ``cluster_by=id``: ``ALTER
        TABLE ... CLUSTER BY (id)``, then ``OPTIMIZE``, its file size chosen so that it writes
        ~20 files at 1M rows; the files' key ranges are read back (``input_file_name()``) and
        checked nearly disjoint before anything is timed), and the source's keys fall in a few
        key ranges: its 95k existing keys are 3 contiguous id ranges (of which 10k, scattered
        in them, changed; the rest identical) and its 5k new keys one more range past the
        table's last id. So every variant touches only the few files holding those ranges;
        dbt's clone and ours' are clustered too (a SHALLOW CLONE keeps the clustering). Ours
        is the plain merge write, without ``within=`` (no bound a user would write here).
        Goal: median(ours) / median(dbt's model execute) <= 0.5.
    unchanged (B7-unchanged): "rerun of B7 with an identical source", literally: the random
        shape's target and source (10% changed, 5% new, keys scattered), and each variant's
        untimed setup, after its fresh clone, runs that variant's own merge once (ours: the
        product write with its own fresh ``CommitStamp``; dbt: ``dbt run``; bare: the bare
        statement), so the timed run is the second, identical run of the same merge. Goal:
        median(ours) / median(dbt's model execute) <= 0.3 and ours makes 0 commits (the product
        records a fingerprint of the rows a merge merged in its commit and skips a merge of the
        very same rows: no MERGE at all). Expected per timed run: ours and bare update and
        insert 0 rows (bare's MERGE matches no changed row and, on a table with deletion
        vectors, Delta commits nothing; its commits are printed, not hidden); dbt updates every
        source row (all of them match now: the 5% that were new in the first run too), inserts 0.
    identical (B7-identical): the random target and a source identical to the target's rows for
        its keys (100k existing keys, no change, no new key), never merged before (no pre-merge:
        what ``unchanged`` was before it became a literal rerun). No goal: the line prints
        ``ratio=<ours/dbt-execute> (no goal)`` and ``ratio_bare``, ours' commits are printed and
        never fail it, and it never makes the exit code 1.

Variants, each on its own fresh SHALLOW CLONE of the shape's base target (untimed), same session;
the clones of ours and bare get the table properties the product gives the tables its keyed
writes create with ``SparkDeltaResource(deletion_vectors=True)``, dbt's keeps the base's (what
dbt-spark creates: Delta's defaults; ``--deletion-vectors`` turns them on for the base, so for
dbt too):
    ours: the product's merge write, as the IO manager calls it:
        ``strategy_for(WriteStrategy.MERGE).write(spark, df, WriteTarget(..., key=("id",)))``
        with a fresh ``CommitStamp`` per repetition; ``df`` reads the source table. In the
        clustered shape with ``cluster_by=("id",)``, as the IO manager passes it for a file
        with ``-- cluster_by id`` (the merge then bounds its reads by the source's key ranges).
    dbt:  ``dbt run`` (``dbtRunner``, in this process) of an incremental model
        ``materialized='incremental', incremental_strategy='merge', unique_key='id',
        file_format='delta'`` over ``source('bench_src', 'b7_source')``, profile ``method:
        session`` (the same SparkSession). Timed: the whole ``dbt run`` invocation (partial
        parse, relation cache, compile, the MERGE); also its model's ``execute`` phase alone,
        the dbt figure the ratios use (the stricter: dbt's own parse and start-up are not
        counted against it).
    bare: the single hand-written ``MERGE INTO ... WHEN MATCHED AND <a column changed,
        NULL-safe> THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``.

Checked, or the shape fails (``BenchError``): the outputs equal after the warm-up (common's
``EXCEPT ALL`` both ways), the rows each variant updated and inserted in every run (ours and bare:
the changed and the new rows, 0/0 in ``unchanged`` and ``identical``; dbt: every source row, and in
``unchanged`` none inserted), and after the timed repetitions each
variant's table (its last run) against the others by row count and a fingerprint of its rows.
Printed per variant: commits, rows updated, and the target files each run's MERGE removed
(``numTargetFilesRemoved`` of its commit; with deletion vectors a touched file gets a vector
instead, ``dvs_added=`` counts those), out of the base's files (B7-clustered: also how many of
them hold ids of the source's key ranges).
"""

import os
import uuid
from typing import Optional

from common import (BenchError, Dbt, Variant, _step, changed_sql, dbt_profile, dbt_sources, fmt_commits, fresh_copy,
                    measure_interleaved, path_ident, progress, register_source, rows_sql, write_delta, write_files)

SHAPES = ("random", "clustered", "unchanged", "identical")
#: Per shape: the goal and what its ratio divides ours by ("bare", or dbt's model ``execute``);
#: ``identical`` has no goal (None).
GOALS = {"random": (1.05, "bare"), "clustered": (0.5, "dbt"), "unchanged": (0.3, "dbt"), "identical": (None, "dbt")}
#: Shapes whose timed run is a rerun: each variant's setup runs its own merge once after its clone.
RERUN_SHAPES = ("unchanged",)
GOAL = GOALS["random"][0]
COLUMNS = ("id", "customer_id", "name", "amount", "status", "updated_on")
DBT_SCHEMA, DBT_MODEL = "bench_dbt", "b7_dbt"
SRC_SCHEMA, SRC_TABLE = "bench_src", "b7_source"
VARIANTS = ("ours", "dbt", "bare")
#: B7-clustered: where the source's existing keys lie (3 contiguous id ranges, starting at these
#: fractions of the table's ids).
CLUSTER_STARTS = (0.16, 0.52, 0.83)
#: B7-clustered: the largest share of a file's key range that may overlap other files' ranges.
MAX_OVERLAP = 0.25


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


# -- the shapes' data --------------------------------------------------------------------------
def cluster_ranges(rows: int, existing: int) -> list[tuple[int, int]]:
    """B7-clustered: ``(first id, count)`` of the 3 contiguous id ranges holding the source's
    ``existing`` keys (as even as the counts allow), inside ``[0, rows)`` and apart."""
    n = len(CLUSTER_STARTS)
    widths = [existing // n + (1 if i < existing % n else 0) for i in range(n)]
    ranges = [(int(rows * f), w) for f, w in zip(CLUSTER_STARTS, widths)]
    for (a, wa), (b, _) in zip(ranges, ranges[1:]):
        if a + wa >= b:
            raise BenchError(f"B7-clustered: the source's key ranges overlap at {rows} rows")
    if ranges[-1][0] + ranges[-1][1] > rows:
        raise BenchError(f"B7-clustered: the source's key ranges pass the table's {rows} ids")
    return ranges


def clustered_changed_sql(ranges: list[tuple[int, int]], changed: int, seed: int) -> str:
    """The existing rows of B7-clustered's source: every id of ``ranges``, exactly ``changed``
    of them with new values, chosen by the scramble of their position in the ranges."""
    existing = sum(w for _, w in ranges)
    position, offset = [], 0
    for first, width in ranges:
        position.append(f"WHEN id < {first + width} THEN id - {first - offset}")
        offset += width
    pos = f"CASE {' '.join(position)} END"
    rank = f"pmod(({pos}) * {_step(existing)} + {seed}, {existing})"
    base = " UNION ALL ".join(f"SELECT * FROM ({rows_sql(first, width)})" for first, width in ranges)
    return (
        f"SELECT id, customer_id, name, "
        f"CASE WHEN {rank} < {changed} THEN amount + 1 ELSE amount END AS amount, "
        f"CASE WHEN {rank} < {changed} THEN 'changed' ELSE status END AS status, updated_on "
        f"FROM ({base})"
    )


def file_ranges(spark, path: str) -> list[dict]:
    """The key range and row count of each file of the table's current version."""
    rows = spark.sql(
        f"SELECT input_file_name() AS file, min(id) AS lo, max(id) AS hi, count(*) AS n "
        f"FROM {path_ident(path)} GROUP BY input_file_name() ORDER BY lo"
    ).collect()
    return [{"file": os.path.basename(r["file"]), "lo": int(r["lo"]), "hi": int(r["hi"]), "rows": int(r["n"])}
            for r in rows]


def cluster_base(spark, base: str, files: int) -> dict:
    """Cluster the table at ``base`` by ``id`` (liquid clustering: ``ALTER TABLE ... CLUSTER BY
    (id)`` and ``OPTIMIZE``, ~``files`` files) and check that its files hold nearly disjoint key
    ranges; returns the layout (files, their ranges, the largest overlap)."""
    table = path_ident(base)
    spark.sql(f"ALTER TABLE {table} CLUSTER BY (id)")
    size = int(spark.sql(f"DESCRIBE DETAIL {table}").first()["sizeInBytes"])
    conf = "spark.databricks.delta.optimize.maxFileSize"
    spark.conf.set(conf, str(max(1, size // files)))
    try:
        spark.sql(f"OPTIMIZE {table}").collect()
    finally:
        spark.conf.unset(conf)
    detail = spark.sql(f"DESCRIBE DETAIL {table}").first()
    if [c.lower() for c in detail["clusteringColumns"] or ()] != ["id"]:
        raise BenchError(f"B7-clustered: the base is not clustered by id ({detail['clusteringColumns']})")
    ranges = file_ranges(spark, base)
    worst = 0.0
    for i, r in enumerate(ranges):
        width = r["hi"] - r["lo"] + 1
        overlap = sum(max(0, min(r["hi"], o["hi"]) - max(r["lo"], o["lo"]) + 1) for j, o in enumerate(ranges) if j != i)
        worst = max(worst, overlap / width)
    progress(f"B7-clustered base: {len(ranges)} files, id ranges "
             + ", ".join(f"{r['lo']}-{r['hi']}" for r in ranges) + f"; largest overlap {worst:.1%} of a file's range")
    if len(ranges) < 2 or worst > MAX_OVERLAP:
        raise BenchError(f"B7-clustered: the base's files do not hold disjoint key ranges "
                         f"({len(ranges)} files, a file's range {worst:.0%} inside others')")
    return {"files": len(ranges), "max_overlap": worst, "file_ranges": [[r["lo"], r["hi"], r["rows"]] for r in ranges]}


def fingerprint(spark, df) -> tuple:
    """Row count and an order-independent fingerprint of the rows (two hashes summed/xored)."""
    cols = ", ".join(COLUMNS)
    r = df.selectExpr(
        "count(1) AS n", f"sum(CAST(hash({cols}) AS BIGINT)) AS h1", f"bit_xor(xxhash64({cols})) AS h2"
    ).first()
    return int(r["n"]), r["h1"], r["h2"]


def files_removed(figures: dict) -> tuple[int, int]:
    """The target files one run's commits removed, and the deletion vectors they added."""
    metrics = figures.get("operationMetrics") or []
    removed = sum(int(m.get("numTargetFilesRemoved", 0) or 0) for m in metrics)
    dvs = sum(int(m.get("numTargetDeletionVectorsAdded", 0) or 0) for m in metrics)
    return removed, dvs


def _median(values: list) -> float:
    import statistics

    return statistics.median(values) if values else 0


# -- the benchmark -----------------------------------------------------------------------------
def run(spark, workdir: str, rows: int, reps: int, seed: int = 42, deletion_vectors: bool = False,
        table_properties: Optional[dict] = None, shape: str = "random") -> dict:
    """One shape of B7 (``random``, ``clustered``, ``unchanged`` or ``identical``); its figures and its line."""
    from assetlake_dagster.spec import TableUri, WriteStrategy
    from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

    if shape not in SHAPES:
        raise BenchError(f"B7: unknown shape {shape!r} (one of {', '.join(SHAPES)})")
    label = f"B7-{shape}"
    n_source = rows // 10
    rerun = shape in RERUN_SHAPES
    if shape == "identical":
        changed, new = 0, 0
    else:
        changed, new = n_source // 10, n_source // 20
    identical = n_source - changed - new
    existing = changed + identical
    lake = os.path.join(workdir, "lake", f"b7-{shape}")
    base, source = os.path.join(lake, "base"), os.path.join(lake, "source")
    progress(f"{label} generating: target {rows} rows, source {n_source} ({changed} changed, {new} new, "
             f"{identical} identical){'; each variant merges it once untimed, then the timed rerun' if rerun else ''}")
    layout: dict = {}
    if shape == "clustered":
        # ~20 files at 1M rows, written at random, then clustered. At most 40: at 10M rows,
        # 200 files of 50k rows came out of liquid clustering's OPTIMIZE overlapping by 42%.
        files = max(4, min(rows // 50_000, 40))
        write_delta(spark, rows_sql(0, rows), base, files=files)
        layout = cluster_base(spark, base, files)
        ranges = cluster_ranges(rows, existing)
        layout["source_ranges"] = [[first, first + width - 1] for first, width in ranges] + [[rows, rows + new - 1]]
        layout["files_in_source_ranges"] = sum(
            1 for lo, hi, _ in layout["file_ranges"] if any(lo <= b and a <= hi for a, b in layout["source_ranges"]))
        source_sql = f"{clustered_changed_sql(ranges, changed, seed)} UNION ALL {rows_sql(rows, new)}"
    else:
        files = max(2, rows // 125_000)  # ~8 files at 1M rows, each holding ids from everywhere
        write_delta(spark, rows_sql(0, rows), base, files=files)
        layout = {"files": files}
        source_sql = changed_sql(rows, changed, identical, seed)
        if new:
            source_sql += f" UNION ALL {rows_sql(rows, new)}"
    if deletion_vectors:
        spark.sql(f"ALTER TABLE {path_ident(base)} SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)")
    write_delta(spark, source_sql, source, files=2)
    register_source(spark, SRC_SCHEMA, SRC_TABLE, source, DBT_SCHEMA)

    dbt_root = os.path.join(workdir, "dbt_b7")
    write_dbt_project(dbt_root)
    dbt = Dbt(dbt_root)

    merge = strategy_for(WriteStrategy.MERGE)
    # ours starts from the table the product creates (table_properties: with
    # SparkDeltaResource(deletion_vectors=True), deletion vectors); dbt's from what dbt-spark
    # creates (Delta's defaults) unless --deletion-vectors; bare, the hand-written statement,
    # from the same table as ours. A SHALLOW CLONE keeps the base's clustering.
    product_props = table_properties or None
    ours_path, bare_path = os.path.join(lake, "ours"), os.path.join(lake, "bare")
    dbt_table = f"{DBT_SCHEMA}.{DBT_MODEL}"

    def ours() -> None:
        df = spark.read.format("delta").load(source)
        target = WriteTarget(
            uri=TableUri("b7", "ours"), path=ours_path, strategy=WriteStrategy.MERGE,
            stamp=CommitStamp(run_id=uuid.uuid4().hex, asset="b7/ours"), key=("id",),
            # What the IO manager passes for a file with `-- cluster_by id`.
            cluster_by=("id",) if shape == "clustered" else (),
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

    def dbt_run() -> dict:
        return Dbt.timings(dbt.invoke("run", DBT_MODEL))

    def setup(clone, first_run):
        """The variant's untimed setup: its fresh clone and, in a rerun shape, its own merge once."""
        def go() -> None:
            clone()
            if rerun:
                first_run()
        return go

    variants = [
        Variant("ours", setup(lambda: fresh_copy(spark, base, ours_path, properties=product_props), ours), ours,
                path_ident(ours_path), lambda: spark.read.format("delta").load(ours_path)),
        Variant("dbt", setup(lambda: fresh_copy(spark, base, dbt_table, managed=True), dbt_run), dbt_run,
                dbt_table, lambda: spark.table(dbt_table)),
        Variant("bare", setup(lambda: fresh_copy(spark, base, bare_path, properties=product_props), bare), bare,
                path_ident(bare_path), lambda: spark.read.format("delta").load(bare_path)),
    ]
    if shape == "clustered":  # the clones must be clustered as the base is
        for v in variants:
            v.setup()
            clustering = spark.sql(f"DESCRIBE DETAIL {v.ident}").first()["clusteringColumns"]
            if [c.lower() for c in clustering or ()] != ["id"]:
                raise BenchError(f"{label}: the clone of {v.name} is not clustered by id ({clustering})")
    result = measure_interleaved(spark, label, variants, reps)

    # Every run updated and inserted what the shape makes it (or the data is not what it claims).
    # A rerun: ours and bare find nothing changed or new; dbt updates every source row (the keys
    # that were new in the first run match now) and inserts none.
    if rerun:
        expected = {"ours": (0, 0), "dbt": (n_source, 0), "bare": (0, 0)}
    else:
        expected = {"ours": (changed, new), "dbt": (existing, new), "bare": (changed, new)}
    for v in VARIANTS:
        for i, figures in enumerate([result[v]["warmup"], *result[v]["reps"]]):
            got = (figures["rows_updated"], figures["rows_inserted"])
            if got != expected[v]:
                raise BenchError(f"{label}: {v} run {i} updated/inserted {got[0]}/{got[1]} rows, expected "
                                 f"{expected[v][0]}/{expected[v][1]}")
    # The tables as their last runs left them: the same rows in each.
    prints = {v.name: fingerprint(spark, v.output()) for v in variants}
    if len(set(prints.values())) != 1 or prints["ours"][0] != rows + new:
        raise BenchError(f"{label}: the variants' final tables differ (rows, hashes: {prints}; expected {rows + new} rows)")
    progress(f"{label} final tables equal: {prints['ours'][0]} rows, fingerprint {prints['ours'][1]}/{prints['ours'][2]}")

    ours_s = result["ours"]["seconds"]["median"]
    dbt_exec = result["dbt"]["dbt_execute_seconds"]["median"]
    dbt_total = result["dbt"]["seconds"]["median"]
    bare_s = result["bare"]["seconds"]["median"]
    goal, against = GOALS[shape]
    ratio = ours_s / (bare_s if against == "bare" else dbt_exec)
    commits = [result[v]["commits"] for v in VARIANTS]
    if goal is None:  # identical: no goal, never fails
        ok = True
    else:
        ok = ratio <= goal and (shape != "unchanged" or commits[0] == 0)
    removed = {v: [files_removed(f) for f in result[v]["reps"]] for v in VARIANTS}
    removed_med = [_median([r for r, _ in removed[v]]) for v in VARIANTS]
    dvs_med = [_median([d for _, d in removed[v]]) for v in VARIANTS]
    for v, r, d in zip(VARIANTS, removed_med, dvs_med):
        result[v]["files_removed"], result[v]["deletion_vectors_added"] = r, d
    result.update({
        "benchmark": label, "shape": shape, "rows": rows, "source_rows": n_source, "changed": changed, "new": new,
        "identical": identical, "rerun": rerun, "layout": layout, "deletion_vectors": deletion_vectors,
        "product_table_properties": product_props, "reps": reps,
        "ratio": ratio, "ratio_against": "bare" if against == "bare" else "dbt model execute",
        "ratio_ours_dbt_execute": ours_s / dbt_exec, "ratio_ours_dbt_run": ours_s / dbt_total, "ratio_ours_bare": ours_s / bare_s,
        "goal": goal, "ok": ok, "final_tables": {k: list(v) for k, v in prints.items()},
        "sql": {"bare": bare_sql, "ours": merge.plan(WriteTarget(
            uri=TableUri("b7", "ours"), path=ours_path, strategy=WriteStrategy.MERGE,
            stamp=CommitStamp("plan", "b7/ours"), key=("id",)), list(COLUMNS)).statement},
    })
    u = [result[v]["rows_updated"] for v in VARIANTS]
    if shape == "random":
        head = f"ratio={ratio:.2f} goal<={goal:.2f} {'ok' if ok else 'MISSED'} (ours/bare) ratio_dbt={ours_s / dbt_exec:.2f} (ours/dbt-execute, no goal)"
    elif shape == "clustered":
        head = f"ratio={ratio:.2f} goal<={goal:.2f} {'ok' if ok else 'MISSED'} (ours/dbt-execute) ratio_bare={ours_s / bare_s:.2f}"
    elif shape == "unchanged":
        head = (f"ratio={ratio:.2f} goal<={goal:.2f} {'ok' if ok else 'MISSED'} (ours/dbt-execute, and ours 0 commits: "
                f"{'yes' if commits[0] == 0 else 'NO'}) ratio_bare={ours_s / bare_s:.2f}")
    else:
        head = f"ratio={ratio:.2f} (no goal) (ours/dbt-execute) ratio_bare={ours_s / bare_s:.2f}"
    dv_text = f" dvs_added={fmt_commits(dvs_med)}" if any(dvs_med) else ""
    in_ranges = layout.get("files_in_source_ranges")
    of_files = f"of {layout['files']} files" + (f" ({in_ranges} in the source's key ranges)" if in_ranges is not None else "")
    result["line"] = (
        f"{label} {head} commits={fmt_commits(commits)} (ours/dbt/bare) updated={fmt_commits(u)} "
        f"files_removed={fmt_commits(removed_med)}{dv_text} {of_files} rows={rows}/{n_source} reps={reps}"
        f"{' dbt-dv=on' if deletion_vectors else ''}{' ours-dv=on' if product_props else ''} | ours={ours_s:.2f}s "
        f"dbt-execute={dbt_exec:.2f}s dbt-run={dbt_total:.2f}s bare={bare_s:.2f}s ours/dbt-run={ours_s / dbt_total:.2f} "
        f"spread={'/'.join(format(result[v]['seconds']['spread'], '.0%') for v in VARIANTS)}"
    )
    return result
