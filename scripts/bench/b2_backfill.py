"""B2 of ``docs/performance.md``: a backfill of ``days`` daily partitions (365), ``rows_per_day`` rows a
day (10k), partition replace, of a daily-partitioned SQL asset that reads a source Delta table of
orders with an event timestamp and writes each day's rows (a projection plus the day).

Data (deterministic, no random generator): the source ``raw.orders`` (a Delta table in the
product's lake, ``<lake>/raw/orders``, registered in the session catalog with the product's
``register_table``, so the asset and dbt read the same catalog table) holds ``days + 1`` days of
``rows_per_day`` orders: row ``i`` is on day ``i div rows_per_day``, its ``ordered_at`` spread over
that day (UTC, the product's session zone), plus ``customer_id``, ``amount``, ``status`` and a
``note`` no model reads. Its files are range-partitioned by ``ordered_at`` (about 250k rows a
file), as an append-only event log is, so a one-day query skips the other files by Delta's
min/max statistics. The backfill covers days ``0 .. days-1``; day ``days`` is in the source and
in every target but outside the range: it must stay as it was.

The asset (one SQL text for ours and runs365, only the table differs)::

    -- materialize delta://b2/<table>
    -- partitioned daily start=<START> end=<START + days + 1> event_time=ordered_at batch=<days>
    SELECT order_id, customer_id, amount, status, ordered_at, to_date(ordered_at) AS order_date
    FROM raw.orders WHERE ordered_at >= {partition_start} AND ordered_at < {partition_end}

Each target starts (untimed) as a SHALLOW CLONE of a base holding a stale version of every day
``0 .. days`` (``amount + 1000``, status ``'stale'``), in the tool's own layout: the product's
(partitioned by its managed ``_partition``), dbt's (partitioned by ``order_date``).

Variants, same process, same JVM:
    ours: one run of the asset for all ``days`` partitions, as Dagster runs it with the asset's
        ``BackfillPolicy`` (``batch=days``) and the Delta IO manager writes it, through the
        product's own functions in their order (:func:`product_run`): a session of the run's own
        (``SparkDeltaResource.new_session`` in local mode is ``newSession()`` of the shared one),
        ``resolve_upstreams``, the run's slices (``partitions_definition`` + ``time_window_of``,
        as ``run_slices``), ``run_sql_slices`` (with ``event_time=``: one query over the range,
        ``_partition`` from ``ordered_at``), ``column_lineage_metadata`` (the asset's output
        metadata), then ``handle_output``'s steps: ``WriteTarget.from_spec`` with a fresh
        ``CommitStamp``, ``with_partition_column``, ``write_with_retries(strategy_for(REPLACE))``
        (``replaceWhere`` on the ``days`` keys), ``register_table``, ``partition_row_counts`` and
        ``materialization_metadata``. Not included (the same for ours and runs365 except that
        runs365 pays them 365 times): Dagster's run launch, step process, event log and
        ``schema_version_metadata`` (needs an instance). Expected: 1 commit.
    runs365: the same asset, one partition per run, ``days`` runs one after the other in this
        warm process: :func:`product_run` with one key each. ``days`` commits.
    dbt: ``dbt run`` (``dbtRunner`` in this process, profile ``method: session``) of an
        incremental model ``materialized='incremental', incremental_strategy='microbatch',
        event_time='ordered_at', batch_size='day', begin=<START>, partition_by=['order_date'],
        file_format='delta'`` over ``source('raw', 'orders')`` whose ``config: event_time:
        ordered_at`` lets dbt filter each batch, with ``--event-time-start <START>
        --event-time-end <START + days>``. dbt-spark's microbatch is its ``insert_overwrite``
        (``incremental/strategies.sql``: it refuses to run without ``partition_by``): per batch a
        temp view of the filtered SELECT, ``DESCRIBE`` of the target, ``SET
        spark.sql.sources.partitionOverwriteMode = DYNAMIC`` (once per model, on the shared
        session) and ``INSERT OVERWRITE TABLE t PARTITION (order_date) SELECT ...``: ``days``
        commits. Timed: the whole ``dbt run`` invocation; also the node's own time (all its
        batches, without dbt's parse and start-up): the ratio uses that one, the stricter.

Equality: the three targets hold the same rows (``_partition`` ignored: ours and runs365 carry
it, dbt partitions by ``order_date``, which all three hold): the days of the range with the new
values, day ``days`` still stale. Compared before any figure is summarized: ours after its full
warm-up; the anchors are slow, so their warm-up is short (the first ``min(3, days)`` days, on a
fresh clone: dbt's parse and the code paths) and their outputs are compared right after the
first timed round, which has all three (unequal outputs raise; no timing counts).

Repetitions: ``reps`` for ours, ``anchor_reps`` (default 1) for runs365 and dbt, interleaved.
Goals: median(ours)/median(runs365) <= 0.10, median(ours)/median(dbt node) <= 0.15, ours makes 1
commit.
"""

import datetime as dt
import os
import shutil
import time
import uuid
from collections import Counter
from typing import Optional

from common import (BenchError, Dbt, Variant, dbt_profile, dbt_sources, fmt_commits, fresh_copy, measure_uneven,
                    path_ident, progress, write_delta, write_files)

GOAL_RUNS, GOAL_DBT = 0.10, 0.15
START = dt.date(2024, 1, 1)
COLUMNS = ("order_id", "customer_id", "amount", "status", "ordered_at", "order_date")
SRC_SCHEMA, SRC_TABLE = "raw", "orders"
OURS_TABLE, RUNS_TABLE = "daily_orders", "daily_orders_runs"
TARGET_SCHEMA = "b2"
DBT_SCHEMA, DBT_MODEL = "bench_b2_dbt", "b2_dbt"
WARM_DAYS = 3


# -- data ----------------------------------------------------------------------------------------
def source_sql(days: int, rows_per_day: int) -> str:
    """``days`` days of ``rows_per_day`` orders each, ``ordered_at`` spread over its day (UTC)."""
    step = max(1, 86_399 // rows_per_day)
    return (
        f"SELECT id AS order_id, id % 5000 AS customer_id, CAST((id * 7) % 100000 AS DOUBLE) / 100 AS amount, "
        f"element_at(array('new', 'paid', 'refunded', 'cancelled'), CAST(id % 4 AS INT) + 1) AS status, "
        f"timestamp_seconds(unix_seconds(TIMESTAMP'{START} 00:00:00 UTC') + (id DIV {rows_per_day}) * 86400 "
        f"+ (id % {rows_per_day}) * {step} % 86400) AS ordered_at, "
        f"concat('note_', id) AS note "
        f"FROM range(0, {days * rows_per_day})"
    )


def stale_sql(source_path: str, partition_column: Optional[str]) -> str:
    """The stale version of every source day, in a tool's layout (``_partition`` or none)."""
    extra = f", date_format(to_date(ordered_at), 'yyyy-MM-dd') AS {partition_column}" if partition_column else ""
    return (
        "SELECT order_id, customer_id, amount + 1000 AS amount, 'stale' AS status, ordered_at, "
        f"to_date(ordered_at) AS order_date{extra} FROM {path_ident(source_path)}"
    )


def asset_sql(table: str, days: int) -> str:
    end = START + dt.timedelta(days=days + 1)
    return (
        f"-- materialize delta://{TARGET_SCHEMA}/{table}\n"
        f"-- partitioned daily start={START} end={end} event_time=ordered_at batch={min(days, 1000)}\n\n"
        f"SELECT {', '.join(COLUMNS[:-1])}, to_date(ordered_at) AS order_date\n"
        f"FROM {SRC_SCHEMA}.{SRC_TABLE}\n"
        "WHERE ordered_at >= {partition_start} AND ordered_at < {partition_end}\n"
    )


def day_keys(first: int, count: int) -> list[str]:
    return [(START + dt.timedelta(days=first + n)).isoformat() for n in range(count)]


# -- ours and runs365: the product's path of one run ----------------------------------------------
def product_run(spark, lake, spec, keys: list[str], steps: Optional[dict] = None) -> dict:
    """One Dagster run of the SQL asset ``spec`` for partition ``keys``, through the product's
    functions in the order the asset's compute and the Delta IO manager call them. ``steps``:
    when given, each step's seconds and Spark jobs are added to it (the untimed profile)."""
    from assetlake_dagster.defs.dagster_internals import time_window_of
    from assetlake_dagster.run.asset_io import with_partition_column
    from assetlake_dagster.lake.registration import register_table
    from assetlake_dagster.defs.lineage_metadata import column_lineage_metadata
    from assetlake_dagster.run.materialization_metadata import materialization_metadata, partition_row_counts
    from assetlake_dagster.defs.partitions import PartitionSlice, partitions_definition
    from assetlake_dagster.defs.resources import SparkDeltaResource
    from assetlake_dagster.run.sql_runner import resolve_upstreams, run_sql_slices
    from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
    from assetlake_dagster.writes.retry import write_with_retries
    from assetlake_dagster.writes.slices import describe_slice

    run_id = uuid.uuid4().hex
    step = _Steps(spark, steps)
    # SparkDeltaResource.new_session() in local mode: newSession() of the shared session.
    session = step("new_session", spark.newSession)
    try:
        # the asset's compute (run/sql_asset.py run_sql_asset)
        step("resolve_upstreams", resolve_upstreams, session, lake, spec)

        def run_slices() -> list:
            pdef = partitions_definition(spec.partitions)
            found = []
            for key in keys:  # partitions.run_slices
                window = time_window_of(pdef, key)
                found.append(PartitionSlice(key, window.start, window.end))
            return found

        slices = step("run_slices", run_slices)
        df = step("run_sql_slices", run_sql_slices, session, spec, {}, slices)
        step("column_lineage_metadata", column_lineage_metadata, session, spec, {})
        # the IO manager (run/io_manager.py handle_output)
        contract = spec.materialize
        uri, write = contract.uri, strategy_for(contract.strategy)
        partitions = tuple(keys)
        stamp = CommitStamp(run_id=run_id, asset=f"{uri.schema}/{uri.table}", partition=describe_slice(partitions),
                            idempotency_id=run_id)
        target = WriteTarget.from_spec(contract, lake.table_path(uri), stamp, partitions)
        df = step("with_partition_column", with_partition_column, session, df, partitions, uri)
        result = step("write (replace, replaceWhere)", write_with_retries, write, session, df, target)
        step("register_table", register_table, session, lake, uri)
        counts = (step("partition_row_counts", partition_row_counts, session, target.path, result, partitions)
                  if len(partitions) > 1 else None)
        metadata = step("materialization_metadata", materialization_metadata, session, uri, target.path,
                        contract.strategy.value, result, partitions, partition_counts=counts, key=target.key)
    finally:
        SparkDeltaResource.release_session(session)
    return {"committed": result.committed, "rows_written": result.rows_written,
            "row_count": metadata["dagster/row_count"].value}


class _Steps:
    """Calls a step; with a ``steps`` dict, adds its seconds, calls and Spark jobs there."""

    def __init__(self, spark, steps: Optional[dict]):
        self.spark, self.steps = spark, steps

    def __call__(self, name: str, fn, *args, **kwargs):
        if self.steps is None:
            return fn(*args, **kwargs)
        from common import _jobs_started

        jobs0, t0 = _jobs_started(self.spark), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            f = self.steps.setdefault(name, {"seconds": 0.0, "calls": 0, "spark_jobs": 0})
            f["seconds"] += time.perf_counter() - t0
            f["calls"] += 1
            jobs1 = _jobs_started(self.spark)
            if jobs0 is not None and jobs1 is not None:
                f["spark_jobs"] += jobs1 - jobs0


def steps_text(steps: dict, runs: int = 1) -> str:
    """``step 0.12s/3j`` per step (per run when ``runs`` > 1), slowest first."""
    total = sum(f["seconds"] for f in steps.values()) / runs
    jobs = sum(f["spark_jobs"] for f in steps.values()) / runs
    parts = sorted(steps.items(), key=lambda kv: -kv[1]["seconds"])
    return f"{total:.2f}s/{jobs:g} jobs: " + ", ".join(
        f"{k} {v['seconds'] / runs:.3f}s/{v['spark_jobs'] / runs:g}j" for k, v in parts)


# -- dbt ---------------------------------------------------------------------------------------
def write_dbt_project(root: str) -> None:
    write_files(root, {
        "dbt_project.yml": "name: bench_b2\nversion: '1.0'\nconfig-version: 2\nprofile: bench_b2\nmodel-paths: [models]\n",
        "profiles.yml": dbt_profile("bench_b2", DBT_SCHEMA),
        "models/sources.yml": dbt_sources(SRC_SCHEMA, SRC_TABLE, "        config:\n          event_time: ordered_at\n"),
        f"models/{DBT_MODEL}.sql": (
            "{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='ordered_at', "
            f"batch_size='day', begin='{START}', partition_by=['order_date'], file_format='delta') }}}}\n"
            f"select {', '.join(COLUMNS[:-1])}, to_date(ordered_at) as order_date\n"
            f"from {{{{ source('{SRC_SCHEMA}', '{SRC_TABLE}') }}}}\n"
        ),
    })


class DbtMicrobatch(Dbt):
    """``dbt run --select <model> --event-time-start S --event-time-end E`` in this process."""

    def __call__(self, start: dt.date, end: dt.date) -> dict:
        node = self.invoke("run", DBT_MODEL, "--event-time-start", start.isoformat(), "--event-time-end", end.isoformat())
        if str(getattr(node, "status", "success")).lower() not in ("success", "runstatus.success"):
            raise BenchError(f"dbt run: model status {node.status}: {node.message}")
        batches = getattr(node, "batch_results", None)
        return {
            "dbt_node_seconds": node.execution_time,
            "dbt_batches_ok": len(batches.successful) if batches is not None else None,
            "dbt_batches_failed": len(batches.failed) if batches is not None else None,
        }


# -- the benchmark -------------------------------------------------------------------------------
def _compact(result: dict) -> None:
    """Per repetition, the commits' operations and summed metrics instead of 365 dicts."""
    for name in ("ours", "runs365", "dbt"):
        for rep in [result[name]["warmup"], *result[name]["reps"]]:
            if not rep or "operationMetrics" not in rep:
                continue
            totals: Counter = Counter()
            for metrics in rep.pop("operationMetrics"):
                for k, v in metrics.items():
                    if str(v).lstrip("-").isdigit():
                        totals[k] += int(v)
            rep["operationMetrics_sum"] = dict(totals)
            rep["operations"] = dict(Counter(rep.get("operations") or []))


def run(spark, workdir: str, days: int = 365, rows_per_day: int = 10_000, reps: int = 5,
        anchor_reps: int = 1) -> dict:
    """B2 at ``days`` x ``rows_per_day``: the result dict, its ``line`` and ``ok``.

    dbt-spark's microbatch sets ``spark.sql.sources.partitionOverwriteMode = DYNAMIC`` on the
    shared session (the product's runs use sessions of their own); the prior value is put back
    when B2 ends, so the benchmarks after it in the same process do not inherit it."""
    key = "spark.sql.sources.partitionOverwriteMode"
    previous = spark.conf.get(key, None)
    try:
        return _run(spark, workdir, days, rows_per_day, reps, anchor_reps)
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


def _run(spark, workdir: str, days: int, rows_per_day: int, reps: int, anchor_reps: int) -> dict:
    from assetlake_dagster.lake.root import Lake
    from assetlake_dagster.lake.registration import register_table
    from assetlake_dagster.project.load import parse_file
    from assetlake_dagster.spec import TableUri

    if not 1 <= days <= 1000:
        raise BenchError(f"days={days}: 1..1000 (the product's largest batch=)")
    lake = Lake(os.path.join(workdir, "lake_b2"))
    bases = os.path.join(workdir, "b2_bases")
    src_uri = TableUri(SRC_SCHEMA, SRC_TABLE)
    source = lake.table_path(src_uri)
    total = (days + 1) * rows_per_day
    progress(f"B2 generating: source {days + 1} days x {rows_per_day} rows ({total}), stale targets")
    files = max(1, total // 250_000)
    shutil.rmtree(source, ignore_errors=True)
    # time-clustered files, as an event log appended day by day
    spark.sql(source_sql(days + 1, rows_per_day)).repartitionByRange(files, "ordered_at") \
        .write.format("delta").save(source)
    register_table(spark, lake, src_uri)  # raw.orders in the shared catalog: the asset's and dbt's source
    product_base, dbt_base = os.path.join(bases, "product"), os.path.join(bases, "dbt")
    write_delta(spark, stale_sql(source, "_partition"), product_base, partition_by=("_partition",))
    write_delta(spark, stale_sql(source, None), dbt_base, partition_by=("order_date",))

    specs = {}
    for table in (OURS_TABLE, RUNS_TABLE):
        spec, problems = parse_file(os.path.join(workdir, f"{table}.sql"), asset_sql(table, days))
        if spec is None:
            raise BenchError(f"the B2 asset does not parse: {problems}")
        specs[table] = spec
    ours_path = lake.table_path(TableUri(TARGET_SCHEMA, OURS_TABLE))
    runs_path = lake.table_path(TableUri(TARGET_SCHEMA, RUNS_TABLE))
    keys = day_keys(0, days)
    warm = min(WARM_DAYS, days)

    dbt_root = os.path.join(workdir, "dbt_b2")
    write_dbt_project(dbt_root)
    dbt = DbtMicrobatch(dbt_root)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DBT_SCHEMA}")
    dbt_table = f"{DBT_SCHEMA}.{DBT_MODEL}"
    end = START + dt.timedelta(days=days)

    def ours() -> dict:
        out = product_run(spark, lake, specs[OURS_TABLE], keys)
        if out["row_count"] != days * rows_per_day:
            raise BenchError(f"ours wrote {out['row_count']} rows, expected {days * rows_per_day}")
        return {"product_rows_written": out["rows_written"]}

    def runs(count: int) -> dict:
        written = 0
        for key in keys[:count]:
            written += product_run(spark, lake, specs[RUNS_TABLE], [key])["rows_written"]
        return {"product_rows_written": written}

    variants = [
        Variant("ours", lambda: fresh_copy(spark, product_base, ours_path), ours, path_ident(ours_path),
                lambda: spark.read.format("delta").load(ours_path)),
        Variant("runs365", lambda: fresh_copy(spark, product_base, runs_path), lambda: runs(days),
                path_ident(runs_path), lambda: spark.read.format("delta").load(runs_path),
                extra={"warmup": lambda: runs(warm)}),
        Variant("dbt", lambda: fresh_copy(spark, dbt_base, dbt_table, managed=True), lambda: dbt(START, end),
                dbt_table, lambda: spark.table(dbt_table),
                extra={"warmup": lambda: dbt(START, START + dt.timedelta(days=warm))}),
    ]
    result = measure_uneven(spark, "B2", variants, {"ours": reps, "runs365": anchor_reps, "dbt": anchor_reps},
                            ignore=("_partition",))
    _compact(result)
    # Where each product run spends its time, step by step (untimed for the ratios): one run of
    # ours, and a few single-partition runs of runs365 (per run).
    ours_steps: dict = {}
    variants[0].setup()
    product_run(spark, lake, specs[OURS_TABLE], keys, ours_steps)
    runs_steps: dict = {}
    variants[1].setup()
    for key in keys[:warm]:
        product_run(spark, lake, specs[RUNS_TABLE], [key], runs_steps)
    result["ours"]["steps"], result["runs365"]["steps_per_run"] = ours_steps, {
        k: {"seconds": v["seconds"] / warm, "spark_jobs": v["spark_jobs"] / warm} for k, v in runs_steps.items()}
    progress(f"B2 ours steps: {steps_text(ours_steps)}")
    progress(f"B2 runs365 steps per run: {steps_text(runs_steps, warm)}")
    ours_s = result["ours"]["seconds"]["median"]
    runs_s = result["runs365"]["seconds"]["median"]
    dbt_run_s = result["dbt"]["seconds"]["median"]
    dbt_node_s = result["dbt"]["dbt_node_seconds"]["median"]
    ratio, ratio_dbt = ours_s / runs_s, ours_s / dbt_node_s
    commits = [result[v]["commits"] for v in ("ours", "runs365", "dbt")]
    ok = ratio <= GOAL_RUNS and ratio_dbt <= GOAL_DBT and commits[0] == 1
    result.update({
        "benchmark": "B2", "days": days, "rows_per_day": rows_per_day, "reps": reps, "anchor_reps": anchor_reps,
        "source_files": files, "ratio_ours_runs365": ratio, "ratio_ours_dbt_node": ratio_dbt,
        "ratio_ours_dbt_run": ours_s / dbt_run_s, "goal_runs365": GOAL_RUNS, "goal_dbt": GOAL_DBT, "ok": ok,
        "asset_sql": asset_sql(OURS_TABLE, days),
    })
    spread = "/".join(
        "-" if result[v]["seconds"]["n"] < 2 else format(result[v]["seconds"]["spread"], ".0%")
        for v in ("ours", "runs365", "dbt"))
    result["line"] = (
        f"B2 ratio={ratio:.3f} goal<={GOAL_RUNS:.2f} {'ok' if ok else 'MISSED'} ratio_dbt={ratio_dbt:.3f} "
        f"goal<={GOAL_DBT:.2f} commits={fmt_commits(commits)} (ours/runs365/dbt) days={days} "
        f"rows/day={rows_per_day} reps={reps} anchor_reps={anchor_reps} | ours={ours_s:.2f}s "
        f"runs365={runs_s:.2f}s ({runs_s / days:.3f}s/run) dbt-node={dbt_node_s:.2f}s dbt-run={dbt_run_s:.2f}s "
        f"({dbt_node_s / days:.3f}s/batch) ours/dbt-run={ours_s / dbt_run_s:.3f} spread={spread}"
    )
    return result


def main() -> int:
    """Stand-alone: ``.venv-bench/bin/python scripts/bench/b2_backfill.py --days 15 --rows-per-day 2000``."""
    import argparse
    import tempfile
    import traceback

    from common import spark_session, write_json

    parser = argparse.ArgumentParser(description="B2: 365-day backfill vs 365 runs vs dbt microbatch")
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--rows-per-day", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--anchor-reps", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="assetlake-bench-b2-")
    os.makedirs(workdir, exist_ok=True)
    try:
        progress(f"starting Spark (workdir {workdir})")
        spark = spark_session(workdir, args.cores)
        res = run(spark, workdir, args.days, args.rows_per_day, args.reps, args.anchor_reps)
        print(res["line"], flush=True)
        if args.out:
            write_json(args.out, res)
        return 0 if res["ok"] else 1
    except (BenchError, Exception, KeyboardInterrupt):  # noqa: BLE001
        traceback.print_exc()
        return 2
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    import sys

    sys.exit(main())
