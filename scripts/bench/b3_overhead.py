"""B3 of ``docs/performance.md``: the write overhead of each managed strategy against the bare single
Spark statement, at each size of ``--b3-rows`` (10k; 1M if asked).

For each strategy a base table is generated once (untimed); before every repetition each variant
gets its own SHALLOW CLONE of it; both variants read the same rows from one generated Delta
source table (``df = spark.read.format('delta').load(source)``) and write them:

    replace:           base n rows; df n rows (10% changed).
        ours ``ReplaceWrite().write`` | bare ``df.write.format('delta').mode('overwrite').save``
    merge:             base n rows; df n rows (10% changed, 5% new, the rest identical), key id.
        ours ``MergeWrite().write``   | bare ``MERGE ... WHEN MATCHED AND <changed> THEN UPDATE SET *
                                              WHEN NOT MATCHED THEN INSERT *``
    append:            base n rows; df n new rows.
        ours ``AppendWrite().write``  | bare ``df.write...mode('append').save``
    partition_replace: base n rows in 10 daily ``_partition``s; df n rows of the first day.
        ours ``ReplaceWrite().write`` with ``partitions=(day,)``
                                      | bare ``df.write...mode('overwrite').partitionBy('_partition')
                                              .option('replaceWhere', "_partition = 'day'").save``
    history:           base n current SCD2 rows; snapshot df: 1% tracked changes, 0.2% new keys,
                       0.2% keys absent (``deletes=close``), key id, every column tracked; one
                       fixed run timestamp for both.
        ours ``HistoryWrite().write(..., run_timestamp=ts)`` | bare the staged-updates MERGE
                                              (one statement, ``WHEN NOT MATCHED BY SOURCE``)

Goals: median(ours) - median(bare) <= 0.3 s below 1M rows, median(ours)/median(bare) <= 1.10 at
1M rows or more; no extra commit (commits ours == bare). Spark jobs per write are recorded too
(the DAGScheduler's job counter: actions the product runs that the bare statement does not).
"""

import datetime as dt
import os
import uuid

from common import (Variant, bare_history_merge, changed_sql, fmt_commits, fresh_copy, measure_interleaved, path_ident,
                    progress, rows_sql, write_delta)

STRATEGIES = ("replace", "merge", "append", "partition_replace", "history")
SMALL_GOAL_S, LARGE_GOAL_RATIO, LARGE = 0.3, 1.10, 1_000_000
COLUMNS = ("id", "customer_id", "name", "amount", "status", "updated_on")
DAYS = 10
RUN_TS = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)


def _partitioned(sql: str, day: str = "") -> str:
    part = f"'{day}'" if day else f"date_format(date_add(DATE'2024-01-01', CAST(id % {DAYS} AS INT)), 'yyyy-MM-dd')"
    return f"SELECT *, {part} AS _partition FROM ({sql})"


def _history(sql: str) -> str:
    return (f"SELECT *, TIMESTAMP'2024-01-01 00:00:00' AS valid_from, CAST(NULL AS TIMESTAMP) AS valid_to, "
            f"true AS is_current FROM ({sql})")


def _setup_data(spark, strategy: str, n: int, lake: str, seed: int) -> tuple[str, str]:
    """Write the base table and the source rows of ``strategy`` at size ``n``; their paths."""
    base, source = os.path.join(lake, "base"), os.path.join(lake, "source")
    files = max(1, n // 125_000)
    if strategy == "replace":
        write_delta(spark, rows_sql(0, n), base, files=files)
        write_delta(spark, changed_sql(n, n // 10, n - n // 10, seed), source, files=files)
    elif strategy == "merge":
        write_delta(spark, rows_sql(0, n), base, files=files)
        changed, new = n // 10, n // 20
        write_delta(spark, f"{changed_sql(n, changed, n - changed - new, seed)} UNION ALL {rows_sql(n, new)}",
                    source, files=files)
    elif strategy == "append":
        write_delta(spark, rows_sql(0, n), base, files=files)
        write_delta(spark, rows_sql(n, n), source, files=files)
    elif strategy == "partition_replace":
        write_delta(spark, _partitioned(rows_sql(0, n)), base, partition_by=("_partition",))
        write_delta(spark, _partitioned(rows_sql(n, n), day="2024-01-01"), source, files=files)
    elif strategy == "history":
        write_delta(spark, _history(rows_sql(0, n)), base, files=files)
        changed, new, gone = n // 100, n // 500, n // 500
        write_delta(spark, f"{changed_sql(n, changed, n - changed - gone, seed)} UNION ALL {rows_sql(n, new)}",
                    source, files=files)
    else:
        raise ValueError(strategy)
    return base, source


def _bare_history_sql(table: str, source: str) -> str:
    return bare_history_merge(table, source, COLUMNS, [c for c in COLUMNS if c != "id"], "2025-01-01 00:00:00")


def run_one(spark, workdir: str, strategy: str, n: int, reps: int, seed: int = 42) -> dict:
    from assetlake_dagster.spec import TableUri, WriteStrategy
    from assetlake_dagster.writes import CommitStamp, HistoryWrite, WriteTarget, strategy_for

    lake = os.path.join(workdir, "lake", f"b3_{strategy}_{n}")
    progress(f"B3 {strategy}@{n}: generating")
    base, source = _setup_data(spark, strategy, n, lake, seed)
    ours_path, bare_path = os.path.join(lake, "ours"), os.path.join(lake, "bare")
    kind = {"replace": WriteStrategy.REPLACE, "partition_replace": WriteStrategy.REPLACE,
            "merge": WriteStrategy.MERGE, "append": WriteStrategy.APPEND, "history": WriteStrategy.HISTORY}[strategy]
    write = HistoryWrite() if strategy == "history" else strategy_for(kind)
    key = ("id",) if strategy in ("merge", "history") else ()
    partitions = ("2024-01-01",) if strategy == "partition_replace" else ()

    def ours() -> dict:
        df = spark.read.format("delta").load(source)
        target = WriteTarget(
            uri=TableUri("b3", strategy), path=ours_path, strategy=kind, key=key, partitions=partitions,
            close_deletes=strategy == "history",
            stamp=CommitStamp(run_id=uuid.uuid4().hex, asset=f"b3/{strategy}", partition=partitions[0] if partitions else None),
        )
        if strategy == "history":
            result = write.write(spark, df, target, run_timestamp=RUN_TS)
        else:
            result = write.write(spark, df, target)
        return {"product_rows_written": result.rows_written}

    src_ident, bare_ident = path_ident(source), path_ident(bare_path)
    non_key = [c for c in COLUMNS if c != "id"]
    merge_sql = (
        f"MERGE INTO {bare_ident} AS t USING {src_ident} AS s ON t.id = s.id "
        f"WHEN MATCHED AND ({' OR '.join(f'NOT (t.{c} <=> s.{c})' for c in non_key)}) THEN UPDATE SET * "
        f"WHEN NOT MATCHED THEN INSERT *"
    )
    history_sql = _bare_history_sql(bare_ident, src_ident)

    def bare() -> None:
        df = spark.read.format("delta").load(source)
        if strategy == "replace":
            df.write.format("delta").mode("overwrite").save(bare_path)
        elif strategy == "append":
            df.write.format("delta").mode("append").save(bare_path)
        elif strategy == "partition_replace":
            (df.write.format("delta").mode("overwrite").partitionBy("_partition")
             .option("replaceWhere", "_partition = '2024-01-01'").save(bare_path))
        elif strategy == "merge":
            spark.sql(merge_sql).collect()
        else:
            spark.sql(history_sql).collect()

    variants = [
        Variant("ours", lambda: fresh_copy(spark, base, ours_path), ours, path_ident(ours_path),
                lambda: spark.read.format("delta").load(ours_path)),
        Variant("bare", lambda: fresh_copy(spark, base, bare_path), bare, bare_ident,
                lambda: spark.read.format("delta").load(bare_path)),
    ]
    result = measure_interleaved(spark, f"B3 {strategy}@{n}", variants, reps)
    ours_s, bare_s = result["ours"]["seconds"]["median"], result["bare"]["seconds"]["median"]
    diff, ratio = ours_s - bare_s, ours_s / bare_s
    commits = [result["ours"]["commits"], result["bare"]["commits"]]
    jobs = [result["ours"]["spark_jobs"], result["bare"]["spark_jobs"]]
    no_extra = commits[0] <= commits[1]
    size = f"{n // 1_000_000}M" if n >= LARGE and n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)
    if n >= LARGE:
        ok = ratio <= LARGE_GOAL_RATIO and no_extra
        head = f"B3 {strategy}@{size} ratio={ratio:.2f} goal<={LARGE_GOAL_RATIO:.2f}"
    else:
        ok = diff <= SMALL_GOAL_S and no_extra
        head = f"B3 {strategy}@{size} diff={diff * 1000:+.0f}ms goal<=+{SMALL_GOAL_S * 1000:.0f}ms"
    result.update({
        "id": f"B3-{strategy}-{n}", "benchmark": "B3", "strategy": strategy, "rows": n, "reps": reps,
        "diff_seconds": diff, "ratio_ours_bare": ratio, "ok": ok,
        "goal": {"diff_seconds": SMALL_GOAL_S} if n < LARGE else {"ratio": LARGE_GOAL_RATIO},
        "bare_statement": {"merge": merge_sql, "history": history_sql}.get(strategy),
    })
    result["line"] = (
        f"{head} {'ok' if ok else 'MISSED'} commits={fmt_commits(commits)} (ours/bare) jobs={fmt_commits(jobs)} "
        f"reps={reps} | ours={ours_s:.2f}s bare={bare_s:.2f}s ratio={ratio:.2f} "
        f"spread={result['ours']['seconds']['spread']:.0%}/{result['bare']['seconds']['spread']:.0%}"
    )
    return result


def run(spark, workdir: str, sizes, reps: int, reps_large: int, strategies=None):
    for n in sizes:
        for strategy in strategies or STRATEGIES:
            yield run_one(spark, workdir, strategy, n, reps if n < LARGE else min(reps, reps_large))
