"""What every write benchmark of ``docs/performance.md`` shares (scripts/bench/, run by scripts/bench.sh).

* one local Spark + Delta session for the whole run (``assetlake_dagster.spark.session``, the
  product's own builder; dbt-spark in ``method: session`` mode picks up the same session);
* deterministic generated data (no random generator: row ``i``'s values are arithmetic in ``i``,
  and which rows change is a bijective scramble ``(i * P + seed) mod n``, so the counts are exact);
* a fresh, identical copy of a target before each repetition (``SHALLOW CLONE`` of a base
  table, untimed; the clone shares the base's files, a write adds its own);
* :func:`measure_interleaved`: a warm-up of each variant (its outputs compared for equality
  before any timing counts), then ``reps`` rounds, the variants' order rotated each round, with
  per repetition the wall time, the Spark jobs started, the Delta commits and their
  ``operationMetrics``;
* the summary line ``B7 ratio=0.31 goal<=0.70 ok commits=1/1`` and the JSON of all figures.
"""

import json
import math
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

STATUSES = ("new", "paid", "refunded", "cancelled")
START = "2024-01-01"


class BenchError(Exception):
    """A benchmark could not produce a valid figure (unequal outputs, a failed write)."""


_T0 = time.perf_counter()


def progress(message: str) -> None:
    """A progress line on stderr (stdout keeps the result lines)."""
    print(f"[{time.perf_counter() - _T0:7.1f}s] {message}", file=sys.stderr, flush=True)


# -- the session -----------------------------------------------------------------------------
def spark_session(workdir: str, cores: int = 2):
    """The run's one SparkSession: the product's builder (Delta jars, embedded defaults)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from assetlake_dagster.spark.session import build_spark_session

    warehouse = os.path.join(workdir, "warehouse")
    os.makedirs(warehouse, exist_ok=True)
    spark = build_spark_session(master=f"local[{cores}]", app_name="assetlake-bench", warehouse_dir=warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def path_ident(path: str) -> str:
    return "delta.`" + path.replace("`", "``") + "`"


# -- data --------------------------------------------------------------------------------------
def _step(n: int) -> int:
    """A multiplier coprime with ``n``: ``i -> (i * step + seed) mod n`` is a bijection."""
    p = 7919
    while math.gcd(p, n) != 1:
        p += 2
    return p


def rows_sql(first: int, count: int, table: str = "") -> str:
    """SELECT of ``count`` generated rows with ids ``first..``: the base version of each row."""
    return (
        f"SELECT id, id % 5000 AS customer_id, concat('name_', id) AS name, "
        f"CAST((id * 7) % 100000 AS DOUBLE) / 100 AS amount, "
        f"element_at(array({', '.join(repr(s) for s in STATUSES)}), CAST(id % 4 AS INT) + 1) AS status, "
        f"date_add(DATE'{START}', CAST(id % 365 AS INT)) AS updated_on "
        f"FROM range({first}, {first + count})"
    )


def changed_sql(n: int, changed: int, identical: int, seed: int) -> str:
    """The existing rows of a source: ``changed`` of the ``n`` ids with new values, then
    ``identical`` unchanged ones, chosen by the scramble ``rank = (id * P + seed) mod n``."""
    rank = f"pmod(id * {_step(n)} + {seed}, {n})"
    return (
        f"SELECT id, customer_id, name, "
        f"CASE WHEN {rank} < {changed} THEN amount + 1 ELSE amount END AS amount, "
        f"CASE WHEN {rank} < {changed} THEN 'changed' ELSE status END AS status, updated_on "
        f"FROM ({rows_sql(0, n)}) WHERE {rank} < {changed + identical}"
    )


def write_delta(spark, sql: str, path: str, partition_by: Sequence[str] = (), files: int = 0) -> None:
    """Write the rows of ``sql`` as a fresh Delta table at ``path`` (untimed setup)."""
    shutil.rmtree(path, ignore_errors=True)
    df = spark.sql(sql)
    if files:
        df = df.repartition(files)
    writer = df.write.format("delta").mode("overwrite")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(path)


def fresh_copy(spark, base: str, target: str, managed: bool = False, properties: Optional[dict] = None) -> None:
    """``target`` (a path, or with ``managed`` a catalog table name) becomes an identical copy of
    the base table at path ``base``: a SHALLOW CLONE (metadata only; the base is never written).
    ``properties``: table properties the copy gets in the cloning commit (the ones the product
    gives the tables it creates, e.g. deletion vectors)."""
    props = ""
    if properties:
        props = " TBLPROPERTIES (" + ", ".join(f"'{k}' = '{v}'" for k, v in properties.items()) + ")"
    if managed:
        spark.sql(f"DROP TABLE IF EXISTS {target}")
        spark.sql(f"CREATE TABLE {target} SHALLOW CLONE {path_ident(base)}{props}")
    else:
        shutil.rmtree(target, ignore_errors=True)
        spark.sql(f"CREATE TABLE {path_ident(target)} SHALLOW CLONE {path_ident(base)}{props}")


# -- Delta history -----------------------------------------------------------------------------
def latest_version(spark, ident: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY {ident} LIMIT 1").first()["version"])


def commits_since(spark, ident: str, before: int) -> list[dict]:
    """The commits after version ``before``, oldest first: version, operation, metrics."""
    rows = spark.sql(f"DESCRIBE HISTORY {ident}").where(f"version > {before}").collect()
    return [
        {"version": int(r["version"]), "operation": r["operation"],
         "operationMetrics": {k: str(v) for k, v in (r["operationMetrics"] or {}).items()}}
        for r in sorted(rows, key=lambda r: r["version"])
    ]


def rows_updated(commits: list[dict]) -> int:
    return sum(int(c["operationMetrics"].get("numTargetRowsUpdated", 0) or 0) for c in commits)


def rows_inserted(commits: list[dict]) -> int:
    return sum(int(c["operationMetrics"].get("numTargetRowsInserted", 0) or 0) for c in commits)


# -- equality ----------------------------------------------------------------------------------
def check_equal(spark, named: dict[str, Any], ignore: Sequence[str] = ()) -> dict:
    """Every DataFrame in ``named`` holds the same rows as the first (a multiset: ``EXCEPT ALL``
    both ways and the counts); raises :class:`BenchError` naming the first difference."""
    names = list(named)
    first = named[names[0]].drop(*ignore)
    cols = first.columns
    count = first.count()
    for name in names[1:]:
        other = named[name].drop(*ignore).select(*cols)
        other_count = other.count()
        missing = first.exceptAll(other).limit(3).collect()
        extra = other.exceptAll(first).limit(3).collect()
        if other_count != count or missing or extra:
            raise BenchError(
                f"outputs differ: {names[0]} has {count} rows, {name} {other_count}; "
                f"only in {names[0]}: {[r.asDict() for r in missing]}; only in {name}: {[r.asDict() for r in extra]}"
            )
    return {"rows": count, "equal": names}


# -- timing ------------------------------------------------------------------------------------
@dataclass
class Variant:
    """One way of doing the benchmark's write.

    ``setup`` (untimed) puts its target in the starting state; ``run`` (timed) writes and may
    return extra figures (a dict); ``ident`` names its Delta table (for the commits);
    ``output`` reads what it wrote (for the equality check).
    """

    name: str
    setup: Callable[[], None]
    run: Callable[[], Optional[dict]]
    ident: str
    output: Callable[[], Any]
    extra: dict = field(default_factory=dict)


def _jobs_started(spark) -> Optional[int]:
    """Spark jobs submitted so far in this application (the DAGScheduler's job counter)."""
    try:
        return int(spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs())
    except Exception:  # noqa: BLE001 - a figure we can do without
        return None


def run_once(spark, variant: Variant) -> dict:
    variant.setup()
    before = latest_version(spark, variant.ident)
    jobs_before = _jobs_started(spark)
    start = time.perf_counter()
    extra = variant.run() or {}
    seconds = time.perf_counter() - start
    jobs_after = _jobs_started(spark)
    commits = commits_since(spark, variant.ident, before)
    return {
        "seconds": seconds,
        "spark_jobs": None if jobs_before is None or jobs_after is None else jobs_after - jobs_before,
        "commits": len(commits),
        "rows_updated": rows_updated(commits),
        "rows_inserted": rows_inserted(commits),
        "operations": [c["operation"] for c in commits],
        "operationMetrics": [c["operationMetrics"] for c in commits],
        **extra,
    }


def summary(values: Sequence[float]) -> dict:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "spread": (max(values) - min(values)) / statistics.median(values) if statistics.median(values) else None,
        "n": len(values),
    }


def measure_interleaved(
    spark, label: str, variants: Sequence[Variant], reps: int, check: bool = True, ignore: Sequence[str] = ()
) -> dict:
    """Warm-up (each variant once; then the outputs must be equal), then ``reps`` rounds with the
    variants' order rotated each round (A B C, B C A, C A B, ...). Returns per variant the
    repetitions and a summary of each numeric figure."""
    out: dict[str, Any] = {v.name: {"warmup": None, "reps": []} for v in variants}
    for v in variants:
        progress(f"{label} warm-up {v.name}")
        out[v.name]["warmup"] = run_once(spark, v)
        progress(f"{label} warm-up {v.name}: {out[v.name]['warmup']['seconds']:.2f}s")
    equality = None
    if check:
        progress(f"{label} comparing the outputs of {', '.join(v.name for v in variants)}")
        equality = check_equal(spark, {v.name: v.output() for v in variants}, ignore=ignore)
        progress(f"{label} outputs equal ({equality['rows']} rows)")
    for rep in range(reps):
        k = rep % len(variants)
        for v in list(variants[k:]) + list(variants[:k]):
            figures = run_once(spark, v)
            out[v.name]["reps"].append(figures)
            progress(
                f"{label} rep {rep + 1}/{reps} {v.name}: {figures['seconds']:.2f}s "
                f"commits={figures['commits']} jobs={figures['spark_jobs']} "
                f"updated={figures['rows_updated']} inserted={figures['rows_inserted']}"
            )
    return _profile_and_summarize(spark, label, variants, out, equality)


def _profile_and_summarize(spark, label: str, variants: Sequence[Variant], out: dict, equality: Optional[dict]) -> dict:
    """After the timed rounds: one untimed profiled run of ours, then each variant's summary."""
    for v in variants:
        if v.name == "ours":  # one more run, untimed for the ratios: where ours spends its time
            v.setup()
            out[v.name]["profile"] = profile_phases(spark, v.run)
            progress(f"{label} ours phases: {phases_text(out[v.name]['profile'])}")
    for v in variants:
        reps_ = out[v.name]["reps"]
        out[v.name]["seconds"] = summary([r["seconds"] for r in reps_])
        for key in ("commits", "spark_jobs", "rows_updated", "rows_inserted"):
            vals = [r[key] for r in reps_ if r.get(key) is not None]
            out[v.name][key] = statistics.median(vals) if vals else None
        for key in set(reps_[0]) - {"seconds", "commits", "spark_jobs", "rows_updated", "rows_inserted",
                                     "operations", "operationMetrics"}:
            vals = [r[key] for r in reps_ if isinstance(r.get(key), (int, float))]
            if vals:
                out[v.name][key] = summary(vals)
    out["equality"] = equality
    return out


def fmt_commits(values: Sequence[Any]) -> str:
    return "/".join("?" if v is None else str(int(v)) if float(v).is_integer() else f"{v:g}" for v in values)


def write_json(path: str, data: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=2, default=str)


# -- where ours spends its time ---------------------------------------------------------------
#: The helpers of the product's write path timed by :func:`profile_phases` (module: names).
PHASES = {
    "assetlake_dagster.writes.merge": ("check_columns", "check_rows_in_slice", "check_keys", "delta_schema",
                                       "check_schema_compatible", "current_version", "result_from_history"),
    "assetlake_dagster.writes.replace": ("check_columns", "delta_schema", "check_schema_compatible",
                                         "current_version", "result_from_history"),
    "assetlake_dagster.writes.append": ("check_columns", "check_rows_in_slice", "delta_schema",
                                        "check_schema_compatible", "current_version", "result_from_history"),
    "assetlake_dagster.writes.history": ("check_columns", "check_keys", "delta_schema", "current_version", "local_checkpoint",
                                         "result_from_history"),
}


def profile_phases(spark, call: Callable[[], Any]) -> dict:
    """Run ``call`` once with the product's write helpers (:data:`PHASES`) and the DataFrame
    actions ``isEmpty``/``first``/``collect`` wrapped in timers (this process only; the product's
    code is not changed). Returns per phase its seconds, calls and Spark jobs, plus the total."""
    import importlib

    from pyspark.sql.classic.dataframe import DataFrame

    figures: dict[str, dict] = {}
    depth = [0]

    def wrap(label: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            if depth[0]:  # count nested helpers inside the outer one only
                return fn(*args, **kwargs)
            depth[0] += 1
            jobs0, t0 = _jobs_started(spark), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
                f = figures.setdefault(label, {"seconds": 0.0, "calls": 0, "spark_jobs": 0})
                f["seconds"] += time.perf_counter() - t0
                f["calls"] += 1
                jobs1 = _jobs_started(spark)
                if jobs0 is not None and jobs1 is not None:
                    f["spark_jobs"] += jobs1 - jobs0
        return timed

    patched = []
    for module_name, names in PHASES.items():
        module = importlib.import_module(module_name)
        for name in names:
            if hasattr(module, name):
                patched.append((module, name, getattr(module, name)))
                setattr(module, name, wrap(name, getattr(module, name)))
    for name in ("isEmpty", "first", "collect"):
        patched.append((DataFrame, name, getattr(DataFrame, name)))
        setattr(DataFrame, name, wrap(f"DataFrame.{name}", getattr(DataFrame, name)))
    # A SQL command (MERGE) runs when spark.sql() returns, not at its .collect().
    session_cls = type(spark)
    patched.append((session_cls, "sql", session_cls.sql))
    setattr(session_cls, "sql", wrap("spark.sql (MERGE/commands)", session_cls.sql))
    # DataFrameWriter.save: the Delta WRITE itself (replace, append, partition replace, first write).
    from pyspark.sql.readwriter import DataFrameWriter

    patched.append((DataFrameWriter, "save", DataFrameWriter.save))
    setattr(DataFrameWriter, "save", wrap("DataFrameWriter.save (the write)", DataFrameWriter.save))
    jobs0, t0 = _jobs_started(spark), time.perf_counter()
    try:
        call()
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)
    total = time.perf_counter() - t0
    jobs = None if jobs0 is None else _jobs_started(spark) - jobs0
    accounted = sum(f["seconds"] for f in figures.values())
    figures["(other python)"] = {"seconds": max(0.0, total - accounted), "calls": 1,
                                 "spark_jobs": (jobs or 0) - sum(f["spark_jobs"] for f in figures.values())}
    return {"total_seconds": total, "spark_jobs": jobs, "phases": figures}


def phases_text(profile: dict) -> str:
    parts = sorted(profile["phases"].items(), key=lambda kv: -kv[1]["seconds"])
    return f"total {profile['total_seconds']:.2f}s/{profile['spark_jobs']} jobs: " + ", ".join(
        f"{k} {v['seconds']:.2f}s/{v['spark_jobs']}j x{v['calls']}" for k, v in parts)


# -- uneven repetitions (B2: slow anchors) ---------------------------------------------------
def measure_uneven(
    spark, label: str, variants: Sequence[Variant], reps: dict, ignore: Sequence[str] = (),
    normalize: Optional[dict] = None,
) -> dict:
    """:func:`measure_interleaved` for variants that cannot all repeat as often: ``reps`` maps a
    variant's name to its timed repetitions (absent: 1).

    Warm-up: a variant whose ``extra`` has a ``"warmup"`` callable runs its ``setup`` and that
    (a short version of itself, untimed; for slow anchors), every other variant a full
    untimed :func:`run_once`. When every variant had a full warm-up the outputs are compared
    then; otherwise right after the first round (which holds every variant), before any figure
    is summarized: unequal outputs raise :class:`BenchError` and no timing counts. Round ``r``
    runs, in an order rotated each round, the variants with more than ``r`` repetitions.
    ``normalize``: per variant name, a function of its output DataFrame (e.g. dropping or
    renaming the columns a tool adds) applied before the comparison.
    """
    out: dict[str, Any] = {v.name: {"warmup": None, "reps": []} for v in variants}
    full_warmups = True
    for v in variants:
        progress(f"{label} warm-up {v.name}")
        warm = v.extra.get("warmup")
        if callable(warm):
            full_warmups = False
            v.setup()
            t0 = time.perf_counter()
            warm()
            out[v.name]["warmup"] = {"seconds": time.perf_counter() - t0, "short": True}
        else:
            out[v.name]["warmup"] = run_once(spark, v)
        progress(f"{label} warm-up {v.name}: {out[v.name]['warmup']['seconds']:.2f}s")

    def compare() -> dict:
        progress(f"{label} comparing the outputs of {', '.join(v.name for v in variants)}")
        named = {}
        for v in variants:
            df = v.output()
            if normalize and v.name in normalize:
                df = normalize[v.name](df)
            named[v.name] = df
        equality = check_equal(spark, named, ignore=ignore)
        progress(f"{label} outputs equal ({equality['rows']} rows)")
        return equality

    equality = compare() if full_warmups else None
    counts = {v.name: max(1, int(reps.get(v.name, 1))) for v in variants}
    for rep in range(max(counts.values())):
        k = rep % len(variants)
        for v in list(variants[k:]) + list(variants[:k]):
            if rep >= counts[v.name]:
                continue
            figures = run_once(spark, v)
            out[v.name]["reps"].append(figures)
            progress(
                f"{label} rep {rep + 1}/{counts[v.name]} {v.name}: {figures['seconds']:.2f}s "
                f"commits={figures['commits']} jobs={figures['spark_jobs']}"
            )
        if equality is None:
            equality = compare()
    return _profile_and_summarize(spark, label, variants, out, equality)


# -- dbt, in this process, on this SparkSession -------------------------------------------------
def dbt_profile(name: str, schema: str) -> str:
    """A ``profiles.yml`` for dbt-spark in ``method: session`` mode: dbt runs its SQL on the
    SparkSession of this process (the one the product's variant uses)."""
    return (
        f"{name}:\n  target: dev\n  outputs:\n    dev:\n      type: spark\n      method: session\n"
        f"      host: NA\n      schema: {schema}\n      threads: 1\n"
    )


def dbt_sources(schema: str, table: str, table_config: str = "") -> str:
    """``models/sources.yml`` declaring ``source(schema, table)``; ``table_config``: extra YAML
    lines under the table (already indented), e.g. an ``event_time``."""
    return (
        f"version: 2\nsources:\n  - name: {schema}\n    schema: {schema}\n"
        f"    tables:\n      - name: {table}\n{table_config}"
    )


def register_source(spark, schema: str, table: str, path: str, dbt_schema: str) -> None:
    """``schema.table`` names the Delta table at ``path`` in the session catalog (dbt's
    ``source()``), and dbt's own schema exists."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {dbt_schema}")
    spark.sql(f"DROP TABLE IF EXISTS {schema}.{table}")
    spark.sql(f"CREATE TABLE {schema}.{table} USING delta LOCATION '{path}'")


def write_files(root: str, files: dict) -> None:
    """Write ``{relative path: text}`` under ``root`` (a dbt project)."""
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)


class Dbt:
    """dbt commands (``dbtRunner``) in this process, on the project at ``root``."""

    def __init__(self, root: str):
        os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
        from dbt.cli.main import dbtRunner

        self.root = root
        self.runner = dbtRunner()

    def invoke(self, command: str, select: str, *extra: str) -> Any:
        """``dbt <command> --select <select> <extra>``; its one node's result, or :class:`BenchError`."""
        args = [command, "--select", select, "--project-dir", self.root, "--profiles-dir", self.root,
                "--target-path", os.path.join(self.root, "target"), "--log-path", os.path.join(self.root, "logs"),
                *extra, "--no-version-check", "--quiet", "--no-use-colors"]
        res = self.runner.invoke(args)
        if not res.success:
            raise BenchError(f"dbt {command} failed: {res.exception or res.result}")
        if not res.result.results:
            raise BenchError(f"dbt {command} selected nothing for {select!r}")
        return res.result.results[0]

    @staticmethod
    def timings(node: Any) -> dict:
        """The node's ``execute`` phase and its whole execution, in seconds."""
        execute = next((t for t in node.timing if t.name == "execute"), None)
        seconds = (execute.completed_at - execute.started_at).total_seconds() if execute else None
        return {"dbt_execute_seconds": seconds, "dbt_node_seconds": node.execution_time}


def bare_history_merge(table: str, source: str, columns: Sequence[str], tracked: Sequence[str], ts: str) -> str:
    """The hand-written SCD2 apply: Delta's one staged-updates MERGE (key ``id``, validity columns
    ``valid_from``/``valid_to``/``is_current``), a change in ``tracked`` closing the current
    version and opening a new one, absent keys closed by ``WHEN NOT MATCHED BY SOURCE``, every
    timestamp the literal ``ts``."""
    changed = " OR ".join(f"NOT (t.{c} <=> s.{c})" for c in tracked)
    cols = ", ".join(f"s.{c}" for c in columns)
    at = f"TIMESTAMP'{ts}'"
    return (
        f"MERGE INTO {table} AS t USING ("
        f" SELECT s.id AS merge_key, {cols} FROM {source} AS s"
        f" UNION ALL"
        f" SELECT NULL AS merge_key, {cols} FROM {source} AS s JOIN {table} AS t ON t.id = s.id AND t.is_current"
        f" WHERE {changed}"
        f") AS s ON t.id = s.merge_key AND t.is_current"
        f" WHEN MATCHED AND ({changed}) THEN UPDATE SET valid_to = {at}, is_current = false"
        f" WHEN NOT MATCHED THEN INSERT ({', '.join(columns)}, valid_from, valid_to, is_current)"
        f" VALUES ({cols}, {at}, NULL, true)"
        f" WHEN NOT MATCHED BY SOURCE AND t.is_current THEN UPDATE SET valid_to = {at}, is_current = false"
    )
