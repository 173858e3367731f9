"""B9 of ``docs/performance.md``: a merge downstream of a large table reads only its change data feed.

The bench writes its own two-file project under the workdir, both files reading the external
table ``raw.events`` (``event_id`` unique, ``customer_id`` about N/100 distinct, ``kind``,
``amount``, ``day``; created with ``delta.enableChangeDataFeed`` and deletion vectors):

* ``staging/events_clean`` (``key=event_id``): row-local, a few projections and a filter that
  drops a quarter of the rows;
* ``mart/customer_totals`` (``key=customer_id``): ``GROUP BY customer_id`` (sum, count).

Both tables have deletion vectors (``-- properties delta.enableDeletionVectors=true``), as B7's
do: a merge then writes only the rows it changes (without them, each merge rewrites every file
a changed key falls in, here all of them; measured at 10M rows: 12 s of the incremental run's
20 s went to the row-local merge rewriting its 7.5M-row table).

Two lake roots under the workdir, ``incremental`` and ``full``, hold the same ``raw/events``
(written once, the folder copied). Each gets its definitions as the product builds them
(``build_definitions(project, spark=SparkDeltaResource(lake_root=..., mode="local"))``: the
bench's own SparkSession) and a fresh ephemeral ``DagsterInstance``; both assets run once in
each (untimed; a first run reads in full). Then, unless ``warmup`` is off, one untimed round as below
(a batch of changes, both runs, the checks): the first change feed read of the JVM pays its
classes and code generation (seen at 200k rows: 34 s the first time, 12 s after).

Per repetition (``--b9-reps``): the same batch of changes in both lakes' ``raw/events``, 0.1 %
of N rows in three commits: an ``UPDATE`` of ~0.05 % (``amount + 1``, ``event_id % 2000 = r``),
a ``DELETE`` of ~0.02 % (``event_id % 5000 = r``) and an ``INSERT`` of 0.03 % new event ids.
Then, timed (``time.perf_counter`` around ``execute_in_process``), the run of both assets in each
lake, the lake that goes first alternating per repetition: the incremental lake's normal run
(both assets must say ``assetlake/read`` mode ``change_feed``, else ``BenchError`` with the run
log's reason), and the full lake's run tagged ``assetlake/force=true`` (reads in full: the full
recompute of the same run). After both, the two lakes' ``staging/events_clean`` and
``mart/customer_totals`` must hold the same rows (``EXCEPT ALL`` both ways + counts), else
``BenchError``.

Goal: median(incremental) / median(full) <= 0.05, both assets on the change feed, tables equal.
"""

import os
import shutil
import statistics
import time
from typing import Any

from common import BenchError, _jobs_started, check_equal, commits_since, latest_version, path_ident, progress

GOAL = 0.05
READ_KEY = "assetlake/read"  # assetlake_dagster.run.change_feed.READ_KEY (checked in run())
FORCE_TAG = "assetlake/force"  # assetlake_dagster.run.decision.FORCE_TAG
#: Every commit of a batch: which rows an UPDATE (amount + 1) and a DELETE hit, and how many are inserted.
UPDATE_MOD, DELETE_MOD, INSERT_FRACTION = 2000, 5000, 0.0003
KINDS = ("click", "view", "buy", "refund")

CLEAN_SQL = """-- materialize delta://staging/events_clean key=event_id
-- properties delta.enableDeletionVectors=true
-- description B9: row-local over raw.events (projections and a filter): a run reads only the raw rows that changed.

SELECT event_id, customer_id, upper(kind) AS kind, CAST(amount * 100 AS BIGINT) AS amount_cents, day
FROM raw.events
WHERE kind <> 'refund'
"""

TOTALS_SQL = """-- materialize delta://mart/customer_totals key=customer_id
-- properties delta.enableDeletionVectors=true
-- description B9: grouped on the key: a run recomputes only the customers whose raw rows changed.

SELECT customer_id, sum(amount) AS total, count(*) AS events
FROM raw.events
WHERE kind <> 'refund'
GROUP BY customer_id
"""


def rows_sql(first: int, count: int, customers: int) -> str:
    """``count`` events with ids ``first..``; every value arithmetic in the id. ``amount`` is a
    multiple of 1/4 below 25,000, so every ``sum(amount)`` is exact in a DOUBLE whatever the order
    of its terms: with cents (``/ 100``) the incremental and the full sums of a customer differ in
    the last bits (seen: 50036.00000000004 vs 50036.000000000044), as two full reads can."""
    kinds = ", ".join(repr(k) for k in KINDS)
    return (
        f"SELECT id AS event_id, pmod(id * 7919, {customers}) AS customer_id, "
        f"element_at(array({kinds}), CAST(pmod(id, 4) AS INT) + 1) AS kind, "
        f"CAST(pmod(id * 7, 100000) AS DOUBLE) / 4 AS amount, "
        f"date_add(DATE'2024-01-01', CAST(pmod(id, 365) AS INT)) AS day "
        f"FROM range({first}, {first + count})"
    )


def write_project(folder: str) -> str:
    os.makedirs(folder, exist_ok=True)
    for name, text in (("events_clean.sql", CLEAN_SQL), ("customer_totals.sql", TOTALS_SQL)):
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    return folder


class Lake:
    """One lake root: its definitions, instance and run of both assets."""

    def __init__(self, name: str, root: str, project: str):
        import dagster as dg

        from assetlake_dagster.defs.build import build_definitions
        from assetlake_dagster.defs.resources import SparkDeltaResource

        self.name, self.root = name, root
        self.defs = build_definitions(project, spark=SparkDeltaResource(lake_root=root, mode="local"))
        self.instance = dg.DagsterInstance.ephemeral()
        self.keys = [dg.AssetKey(["staging", "events_clean"]), dg.AssetKey(["mart", "customer_totals"])]
        self.job = self.defs.resolve_implicit_job_def_def_for_assets(self.keys)

    @property
    def events(self) -> str:
        return os.path.join(self.root, "raw", "events")

    def table(self, key) -> str:
        return os.path.join(self.root, *key.path)

    def run(self, spark, label: str, force: bool = False) -> dict:
        """Both assets in one run (every run must succeed); its seconds, Spark jobs, target commits,
        per asset its ``assetlake/read`` and step seconds."""
        tags = {FORCE_TAG: "true"} if force else {}
        versions = {k.to_user_string(): _version(self.table(k)) for k in self.keys}
        jobs0 = _jobs_started(spark)
        t0 = time.perf_counter()
        result = self.job.execute_in_process(instance=self.instance, asset_selection=self.keys, tags=tags,
                                             raise_on_error=False)
        seconds = time.perf_counter() - t0
        jobs1 = _jobs_started(spark)
        if not result.success:
            failures = [e.message for e in result.all_events if e.is_failure]
            raise BenchError(f"B9 {label}: the {self.name} lake's run failed: {failures[:3]}")
        out: dict[str, Any] = {"seconds": seconds, "spark_jobs": None if jobs0 is None else jobs1 - jobs0,
                               "run_id": result.run_id, "forced": force, "assets": {}}
        steps = _step_seconds(self.instance, result.run_id)
        for key in self.keys:
            name = key.to_user_string()
            records = self.instance.fetch_materializations(key, limit=1).records
            if not records or records[0].run_id != result.run_id:
                raise BenchError(f"B9 {label}: the {self.name} lake's run did not materialize {name}")
            meta = records[0].asset_materialization.metadata
            read = meta.get(READ_KEY)
            after = _version(self.table(key))
            out["assets"][name] = {
                "read": read.value if read is not None else None,
                "commits": None if after is None else after - (versions[name] if versions[name] is not None else -1),
                "step_seconds": next((s for n, s in steps.items() if name.replace("/", "__") in n), None),
                "why": self.log_lines(result.run_id, name),
            }
        return out

    def log_lines(self, run_id: str, name: str) -> list[str]:
        """The run log lines about how ``name`` read its input."""
        wanted = ("reads its inputs in full", "reads only the changes", ": runs, ", "skipped")
        return [e.message[:400] for e in self.instance.all_logs(run_id)
                if e.message and f"delta://{name}" in e.message and any(w in e.message for w in wanted)][:5]


def _version(path: str):
    from assetlake_dagster.lake.delta_log import latest_version as log_version

    return log_version(path) if os.path.isdir(os.path.join(path, "_delta_log")) else None


def _step_seconds(instance, run_id: str) -> dict[str, float]:
    try:
        return {s.step_key: s.end_time - s.start_time for s in instance.get_run_step_stats(run_id)
                if s.end_time and s.start_time}
    except Exception:  # noqa: BLE001 - a figure we can do without
        return {}


def create_events(spark, path: str, rows: int, customers: int) -> None:
    shutil.rmtree(path, ignore_errors=True)
    (spark.sql(rows_sql(0, rows, customers)).write.format("delta")
     .option("delta.enableChangeDataFeed", "true").option("delta.enableDeletionVectors", "true").save(path))


def change_batch(spark, paths: list[str], rep: int, next_id: int, rows: int, customers: int) -> tuple[int, dict]:
    """One batch of changes, the same statements on every path: UPDATE, DELETE, INSERT (3 commits).
    Returns the next free id and the rows each commit touched (from the first path's history)."""
    inserts = max(1, round(rows * INSERT_FRACTION))
    statements = [
        ("updated", f"UPDATE {{t}} SET amount = amount + 1 WHERE event_id % {UPDATE_MOD} = {(2 * rep + 1) % UPDATE_MOD}"),
        ("deleted", f"DELETE FROM {{t}} WHERE event_id % {DELETE_MOD} = {(3 * rep + 7) % DELETE_MOD}"),
        ("inserted", f"INSERT INTO {{t}} {rows_sql(next_id, inserts, customers)}"),
    ]
    before = latest_version(spark, path_ident(paths[0]))
    for _, statement in statements:
        for path in paths:
            spark.sql(statement.format(t=path_ident(path)))
    commits = commits_since(spark, path_ident(paths[0]), before)
    metrics = [c["operationMetrics"] for c in commits]
    touched = {
        "updated": sum(int(m.get("numUpdatedRows", 0) or 0) for m in metrics),
        "deleted": sum(int(m.get("numDeletedRows", 0) or 0) for m in metrics),
        "inserted": sum(int(m.get("numOutputRows", 0) or 0) for c, m in zip(commits, metrics) if c["operation"] == "WRITE"),
        "commits": len(commits),
        "operations": [c["operation"] for c in commits],
    }
    touched["changed"] = touched["updated"] + touched["deleted"] + touched["inserted"]
    return next_id + inserts, touched


def check_feed(lake: Lake, figures: dict, label: str) -> None:
    for name, asset in figures["assets"].items():
        read = asset["read"]
        if not isinstance(read, dict) or read.get("mode") != "change_feed":
            raise BenchError(f"B9 {label}: {name} in the incremental lake did not read the change feed "
                             f"({READ_KEY}={read!r}); the run log says: {asset['why'] or 'nothing about it'}")


def check_full(figures: dict, label: str) -> None:
    for name, asset in figures["assets"].items():
        read = asset["read"]
        if isinstance(read, dict) and read.get("mode") == "change_feed":
            raise BenchError(f"B9 {label}: the forced run of {name} read the change feed ({read!r})")


def compare(spark, inc: Lake, full: Lake) -> dict:
    out = {}
    for key in inc.keys:
        name = key.to_user_string()
        a = spark.read.format("delta").load(inc.table(key))
        b = spark.read.format("delta").load(full.table(key))
        try:
            out[name] = check_equal(spark, {"incremental": a, "full": b})["rows"]
        except BenchError as exc:
            raise BenchError(f"B9: {name} differs between the lakes: {exc}") from exc
    return out


def run(spark, workdir: str, rows: int, reps: int, warmup: bool = True) -> dict:
    from assetlake_dagster.run.change_feed import READ_KEY as PRODUCT_READ_KEY
    from assetlake_dagster.run.decision import FORCE_TAG as PRODUCT_FORCE_TAG

    if (PRODUCT_READ_KEY, PRODUCT_FORCE_TAG) != (READ_KEY, FORCE_TAG):
        raise BenchError(f"B9: the product's keys changed: {PRODUCT_READ_KEY!r}, {PRODUCT_FORCE_TAG!r}")
    customers = max(1, rows // 100)
    base = os.path.join(workdir, "b9")
    shutil.rmtree(base, ignore_errors=True)
    project = write_project(os.path.join(base, "project"))
    inc_root, full_root = os.path.join(base, "incremental"), os.path.join(base, "full")
    progress(f"B9 writing raw/events ({rows} rows, {customers} customers; change data feed, deletion vectors)")
    t0 = time.perf_counter()
    create_events(spark, os.path.join(inc_root, "raw", "events"), rows, customers)
    shutil.copytree(os.path.join(inc_root, "raw", "events"), os.path.join(full_root, "raw", "events"))
    progress(f"B9 raw/events written and copied: {time.perf_counter() - t0:.1f}s")
    inc, full = Lake("incremental", inc_root, project), Lake("full", full_root, project)
    setup = {}
    for lake in (inc, full):
        f = lake.run(spark, "first run")
        setup[lake.name] = f
        progress(f"B9 first run ({lake.name}, untimed): {f['seconds']:.2f}s jobs={f['spark_jobs']}")
    equal_rows = compare(spark, inc, full)
    progress(f"B9 first runs equal: {equal_rows}")
    state = {"next_id": rows}

    def one_round(label: str, batch: int, inc_first: bool) -> dict:
        state["next_id"], touched = change_batch(spark, [inc.events, full.events], batch, state["next_id"], rows,
                                                 customers)
        progress(f"B9 {label}: changes applied to both lakes: {touched['changed']} rows "
                 f"({100 * touched['changed'] / rows:.3f}%: updated={touched['updated']} deleted={touched['deleted']} "
                 f"inserted={touched['inserted']}; {touched['commits']} commits)")
        order = [(inc, False), (full, True)] if inc_first else [(full, True), (inc, False)]
        figures = {}
        for lake, force in order:
            f = lake.run(spark, label, force=force)
            figures[lake.name] = f
            reads = "; ".join(
                f"{n}: {a['read']['mode'] if isinstance(a['read'], dict) else 'full'}"
                + (f" gained={a['read'].get('rows_gained')} lost={a['read'].get('rows_lost')}"
                   + (f" groups={a['read']['groups']}" if 'groups' in a['read'] else "")
                   if isinstance(a["read"], dict) else "")
                for n, a in f["assets"].items())
            progress(f"B9 {label} {lake.name}{' (forced)' if force else ''}: {f['seconds']:.2f}s "
                     f"jobs={f['spark_jobs']} ({reads})")
        check_feed(inc, figures["incremental"], label)
        check_full(figures["full"], label)
        t0 = time.perf_counter()
        equal = compare(spark, inc, full)
        progress(f"B9 {label}: tables equal {equal} ({time.perf_counter() - t0:.1f}s to compare)")
        return {"changes": touched, "order": [lake.name for lake, _ in order],
                "incremental": figures["incremental"], "full": figures["full"], "equal_rows": equal,
                "ratio": figures["incremental"]["seconds"] / figures["full"]["seconds"]}

    # Untimed: the first change feed read of this JVM pays its classes and code generation once
    # (at 200k rows the incremental run took ~34s the first time, ~12s after).
    warm = one_round("warm-up (untimed)", 0, True) if warmup else None
    reps_out = [one_round(f"rep {rep + 1}", rep + 1, rep % 2 == 0) for rep in range(max(1, reps))]
    inc_s = statistics.median(r["incremental"]["seconds"] for r in reps_out)
    full_s = statistics.median(r["full"]["seconds"] for r in reps_out)
    ratio = inc_s / full_s
    ok = ratio <= GOAL
    last = reps_out[-1]

    def jobs(name: str) -> str:
        vals = [r[name]["spark_jobs"] for r in reps_out if r[name]["spark_jobs"] is not None]
        return f"{statistics.median(vals):g}" if vals else "?"

    def read_text(name: str) -> str:
        read = last["incremental"]["assets"][name]["read"]
        text = f"gained={read.get('rows_gained')},lost={read.get('rows_lost')}"
        if "groups" in read:
            text += f",groups={read['groups']}"
        return f"{name}({text})"

    changed = statistics.median(r["changes"]["changed"] for r in reps_out)
    line = (
        f"B9 ratio={ratio:.3f} goal<={GOAL:.2f} {'ok' if ok else 'MISSED'} feed={2 * len(reps_out)}/{2 * len(reps_out)} "
        f"tables_equal=yes rows={rows} changed={changed:g} ({100 * changed / rows:.3f}%) "
        f"incremental={inc_s:.2f}s full={full_s:.2f}s jobs(incremental={jobs('incremental')},full={jobs('full')}) "
        + " ".join(read_text(n) for n in last["incremental"]["assets"])
    )
    return {"benchmark": "B9", "line": line, "ok": ok, "ratio": ratio, "goal": GOAL, "rows": rows,
            "customers": customers, "incremental_seconds": inc_s, "full_seconds": full_s,
            "incremental": {"seconds": [r["incremental"]["seconds"] for r in reps_out],
                            "spark_jobs": [r["incremental"]["spark_jobs"] for r in reps_out]},
            "full": {"seconds": [r["full"]["seconds"] for r in reps_out],
                     "spark_jobs": [r["full"]["spark_jobs"] for r in reps_out]},
            "first_runs": setup, "warmup": warm, "reps": reps_out}
