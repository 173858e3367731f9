"""Small files, measured (issue 31 item 6): how many files each write strategy leaves in its Delta
table after ``--runs`` runs, with no maintenance, with Delta auto compaction, and with a scheduled
``OPTIMIZE``; and what that costs a read, before and after maintenance.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python scripts/bench/small_files.py \\
        --rows 100000 --runs 30 --out small_files_results.json

``--deletion-vectors`` creates every table with ``delta.enableDeletionVectors=true`` (as a
``-- properties`` line would): a MERGE then marks the changed rows in deletion vectors and adds a
file of their new versions instead of rewriting the files it touches, so files accumulate.

One local Spark session (``common.spark_session``: the product's builder, ``local[2]``). Every write
is the product's own: ``strategy_for(WriteStrategy.X).write(spark, df, WriteTarget(...))`` with a
fresh ``CommitStamp`` run id per run, as the IO manager calls it. Run 1 creates the table (the
first write of the strategy, ``--rows`` rows); runs 2..R are the incremental runs:

    replace            the whole table rewritten (``--rows`` rows, every amount + r)
    merge              key ``id``; the source holds 2 % of ``--rows`` existing keys with new values
                       (amount + r, status ``run_<r>``) and 0.5 % new keys
    append             1 % of ``--rows`` new rows
    partition_replace  REPLACE with ``partitions=`` and a ``_partition`` column, daily partitions:
                       run 1 writes ``--days`` days (``--rows`` rows); run r replaces the latest
                       2 days in one write (the previous newest day rewritten, a new day added)
    history            SCD2 key ``id`` (``close_deletes=True``, every column tracked): a full
                       snapshot of ``--rows`` keys, 1 % of the keys changed per run

Which keys change is a bijective scramble ``(id * P + seed_r) mod n`` (``common``), so the counts
are exact; after the runs the rows of each table are checked (a :class:`common.BenchError`, exit 2,
when a strategy did not produce exactly the expected rows).

Modes (each strategy x mode is its own table, written from scratch):

    none       no maintenance; after the R runs the reads are timed, then the product's
               ``lake.maintenance.optimize_table`` runs once and the reads are timed again;
    auto       the table created with ``delta.autoOptimize.autoCompact=true``: the session
               setting ``spark.databricks.delta.properties.defaults.autoOptimize.autoCompact``
               around the first write only (how the product applies a ``-- properties`` line,
               ``writes.layout.new_table_properties``); Delta's post-commit hook then decides
               after every commit whether to compact (its thresholds are printed at the start:
               ``spark.databricks.delta.autoCompact.minNumFiles``, default 50 small files,
               "small" = below ``autoCompact.minFileSize``, default ``maxFileSize`` / 2 = 64 MB);
               the write's wall time includes the hook. ``--auto-min-files N`` sets
               ``autoCompact.minNumFiles`` for these writes (to see it fire on a short run).
               The hook decides per partition from counts kept in the driver's memory
               (``AutoCompactPartitionStats``; defaults ``modifiedPartitionsOnly`` and
               ``earlySkipPartitionTable`` on): a partition this commit added files to qualifies
               when this JVM has not auto-compacted it yet, or when the small files that this
               JVM's commits added minus removed there reach ``minNumFiles`` (Delta 4.0.1:
               ``PartitionStat.hasSufficientSmallFilesOrHasNotBeenCompacted``); a partition
               holding one small file only is left as it is. So in one long-lived driver a
               table's first commit is compacted, then every ``minNumFiles`` small files.
    auto_fresh as ``auto``, but those counts are reset before every run
               (``AutoCompactPartitionStats.instance(spark).resetTestOnly()`` through py4j): each
               run as on a driver that just started, e.g. a daily run after the warm engine
               stopped (it stops after 30 idle minutes) or a run in its own Spark session; there
               every run's first commit to a partition is compacted.
    scheduled  ``optimize_table`` after every ``--every`` runs (untimed in the write's time,
               timed on its own): the actual file counts against the bound computed from
               ``none``.

After every run: the files of the current snapshot (``DESCRIBE DETAIL`` ``numFiles``, via the
product's ``maintenance.table_files``), the data files on disk, every version's (``.parquet``
files outside ``_delta_log``, counted here: ``table_files``' own walk skips folders named ``_*``,
so a ``_partition=...`` table's files; its figure is kept as ``product_stored_files``), the bytes
of both, the write's wall time, and from the Delta log the run's commits (operation,
``add``/``remove`` actions, whether an ``OPTIMIZE`` with ``auto=true`` happened, i.e. auto
compaction fired) and what the product's ``WriteResult`` reported.

Reads, timed (one warm-up, then the median of ``--read-reps`` = 3): a full aggregate
``SELECT count(*), sum(amount) FROM delta.`path``` and a selective lookup ``... WHERE id = <id>``;
for ``none`` before and after the OPTIMIZE, for the other modes after the last run.

The bound a scheduled OPTIMIZE every k runs gives, from the ``none`` series:
``files after an OPTIMIZE + k x (the most files one run added)`` (files after an OPTIMIZE: 1 for
an unpartitioned table at this size, one per partition for a partitioned one, which grows by a day
every run), for k = 1 and k = ``--every``; ``scheduled`` checks it against what it saw. For
``auto`` the documented bound is ``minNumFiles - 1 + (the most files one run added)`` small files
per partition (the hook compacts once a partition holds ``minNumFiles`` small files), counted
by the driver since its first auto compaction of the partition (``auto``: this one session);
``auto_fresh`` compacts at every run instead, at the price of the write.

The product's ``WriteResult`` of a MERGE (merge, history) finds its commit by the stamp the
session setting ``commitInfo.userMetadata`` gives it, and Delta's auto compaction commit, made
inside the same command, carries that stamp too: the result then names the OPTIMIZE (its
version, operation and metrics). Runs where that happened are listed as
``product_result_was_optimize`` (a progress line says so).

Output: one line per strategy x mode (and the bound from ``none`` per strategy) on stdout,
progress on stderr, everything in ``--out`` (rewritten after each strategy x mode). Exit code 0,
or 2 on an error (a table without the expected rows, a failed write).

Cost: 5 strategies x 4 modes x ``--runs`` writes; at ``--rows 5000 --runs 6`` 10 minutes on 2
busy cores (about 5 s a run, measuring included), so about 1-1.5 hours at the defaults
(``--modes none auto`` alone: about half).
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
import traceback
import uuid
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import BenchError, _step, path_ident, progress, rows_sql, spark_session, write_json  # noqa: E402

STRATEGIES = ("replace", "merge", "append", "partition_replace", "history")
MODES = ("none", "auto", "auto_fresh", "scheduled")
SCHEMA = "small_files"
#: Per run, as fractions of ``--rows``.
MERGE_CHANGED, MERGE_NEW, APPEND_NEW, HISTORY_CHANGED = 0.02, 0.005, 0.01, 0.01
FIRST_DAY = "2024-01-01"
AUTO_COMPACT_PROPERTY = "delta.autoOptimize.autoCompact"
DV_PROPERTY = "delta.enableDeletionVectors"
#: Delta's auto compaction settings (``spark.databricks.delta.`` + key), printed and recorded.
AUTO_COMPACT_SETTINGS = (
    "autoCompact.enabled", "autoCompact.minNumFiles", "autoCompact.minFileSize", "autoCompact.maxFileSize",
    "autoCompact.modifiedPartitionsOnly.enabled", "autoCompact.earlySkipPartitionTable.enabled",
    "autoCompact.nonBlindAppend.enabled", "autoCompact.maxNumModifiedPartitions",
    "autoCompact.reservePartitions.enabled", "autoCompact.recordPartitionStats.enabled",
)
_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


# -- the workloads -----------------------------------------------------------------------------
class Workload:
    """What run ``r`` of one strategy writes, and what the table must hold after ``runs`` runs."""

    def __init__(self, strategy: str, n: int, days: int):
        self.strategy, self.n, self.days = strategy, n, days
        self.changed = max(1, round(n * MERGE_CHANGED))
        self.new = max(1, round(n * MERGE_NEW))
        self.appended = max(1, round(n * APPEND_NEW))
        self.history_changed = max(1, round(n * HISTORY_CHANGED))
        self.per_day = max(1, n // days)

    @property
    def kind(self):
        from assetlake_dagster.spec import WriteStrategy

        return {"replace": WriteStrategy.REPLACE, "partition_replace": WriteStrategy.REPLACE,
                "merge": WriteStrategy.MERGE, "append": WriteStrategy.APPEND,
                "history": WriteStrategy.HISTORY}[self.strategy]

    @property
    def key(self) -> tuple[str, ...]:
        return ("id",) if self.strategy in ("merge", "history") else ()

    @property
    def partitioned(self) -> bool:
        return self.strategy == "partition_replace"

    @property
    def lookup_id(self) -> int:
        return self.n // 2 + 7 if self.n > 20 else 0  # present in every table, every run

    @staticmethod
    def _day(k: int) -> str:
        import datetime as dt

        return (dt.date.fromisoformat(FIRST_DAY) + dt.timedelta(days=k)).isoformat()

    def source(self, r: int) -> tuple[str, tuple[str, ...]]:
        """Run ``r``'s SELECT and its partition keys (empty: a whole-table write)."""
        n, s = self.n, self.strategy
        bumped = "SELECT id, customer_id, name, amount + {r} AS amount, status, updated_on FROM ({rows})"
        if s == "replace":
            return bumped.format(r=r, rows=rows_sql(0, n)), ()
        if s == "append":
            return (rows_sql(0, n) if r == 1 else rows_sql(n + (r - 2) * self.appended, self.appended)), ()
        if s == "merge":
            if r == 1:
                return rows_sql(0, n), ()
            current = n + (r - 2) * self.new
            rank = f"pmod(id * {_step(current)} + {r * 104729}, {current})"
            changed = (f"SELECT id, customer_id, name, amount + {r} AS amount, 'run_{r}' AS status, updated_on "
                       f"FROM ({rows_sql(0, current)}) WHERE {rank} < {self.changed}")
            return f"{changed} UNION ALL {rows_sql(current, self.new)}", ()
        if s == "history":
            step = _step(n)
            bumps = " + ".join(
                f"CASE WHEN pmod(id * {step} + {j * 104729}, {n}) < {self.history_changed} THEN 1 ELSE 0 END"
                for j in range(2, r + 1)
            ) or "0"
            return (f"SELECT id, customer_id, name, amount + ({bumps}) AS amount, status, updated_on "
                    f"FROM ({rows_sql(0, n)})"), ()
        if s == "partition_replace":
            first_day, count_days = (0, self.days) if r == 1 else (self.days + r - 3, 2)
            rows = rows_sql(first_day * self.per_day, count_days * self.per_day)
            sql = (f"SELECT id, customer_id, name, amount + {r} AS amount, status, updated_on, "
                   f"date_format(date_add(DATE'{FIRST_DAY}', CAST(id DIV {self.per_day} AS INT)), 'yyyy-MM-dd') "
                   f"AS _partition FROM ({rows})")
            return sql, tuple(self._day(first_day + k) for k in range(count_days))
        raise ValueError(s)

    def check(self, spark, path: str, runs: int) -> dict:
        """The table holds exactly the expected rows after ``runs`` runs (else BenchError)."""
        ident = path_ident(path)
        got: dict[str, Any] = {"rows": spark.sql(f"SELECT count(*) FROM {ident}").first()[0]}
        want: dict[str, Any] = {}
        if self.strategy == "replace":
            want["rows"] = self.n
            got["min_amount_bump"] = spark.sql(
                f"SELECT round(min(amount - CAST((id * 7) % 100000 AS DOUBLE) / 100), 6) FROM {ident}").first()[0]
            want["min_amount_bump"] = float(runs)
        elif self.strategy == "append":
            want["rows"] = self.n + (runs - 1) * self.appended
            got["distinct_ids"] = spark.sql(f"SELECT count(DISTINCT id) FROM {ident}").first()[0]
            want["distinct_ids"] = want["rows"]
        elif self.strategy == "merge":
            want["rows"] = self.n + (runs - 1) * self.new
            got["distinct_ids"] = spark.sql(f"SELECT count(DISTINCT id) FROM {ident}").first()[0]
            want["distinct_ids"] = want["rows"]
            if runs >= 2:
                got["changed_last_run"] = spark.sql(
                    f"SELECT count(*) FROM {ident} WHERE status = 'run_{runs}'").first()[0]
                want["changed_last_run"] = self.changed
        elif self.strategy == "history":
            want["rows"] = self.n + (runs - 1) * self.history_changed
            got["current"] = spark.sql(f"SELECT count(*) FROM {ident} WHERE is_current").first()[0]
            want["current"] = self.n
        elif self.strategy == "partition_replace":
            want["rows"] = (self.days + runs - 1) * self.per_day
            got["partitions"] = spark.sql(f"SELECT count(DISTINCT _partition) FROM {ident}").first()[0]
            want["partitions"] = self.days + runs - 1
            got["max_files_per_partition"] = spark.sql(
                f"SELECT max(c) FROM (SELECT count(DISTINCT _metadata.file_path) AS c FROM {ident} "
                f"GROUP BY _partition)").first()[0]
        wrong = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
        if wrong:
            raise BenchError(f"{self.strategy}: after {runs} runs the table is wrong (got, expected): {wrong}")
        return got


# -- the Delta log -----------------------------------------------------------------------------
def log_versions(path: str) -> list[int]:
    folder = os.path.join(path, "_delta_log")
    if not os.path.isdir(folder):
        return []
    return sorted(int(m.group(1)) for m in map(_COMMIT_FILE.match, os.listdir(folder)) if m)


def commits_after(path: str, after: Optional[int]) -> list[dict]:
    """The commits after version ``after`` (None: all), read from their JSON files: operation,
    added and removed files, and for an OPTIMIZE whether auto compaction made it."""
    out = []
    for v in log_versions(path):
        if after is not None and v <= after:
            continue
        adds: set = set()
        removes: set = set()
        info: dict = {}
        with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as f:
            for line in f:
                action = json.loads(line)
                if "add" in action:
                    adds.add(action["add"]["path"])
                elif "remove" in action:
                    removes.add(action["remove"]["path"])
                elif "commitInfo" in action:
                    info = action["commitInfo"]
        params = info.get("operationParameters") or {}
        # With deletion vectors, a file that lost rows is removed and added again under its
        # own path with its new vector: that is no new file.
        out.append({
            "version": v, "operation": info.get("operation"), "added": len(adds - removes),
            "removed": len(removes - adds), "vectors_updated": len(adds & removes),
            "auto_compaction": info.get("operation") == "OPTIMIZE" and str(params.get("auto")).lower() == "true",
            "stamped": bool(info.get("userMetadata")),
        })
    return out


def stored_files(path: str) -> dict:
    """The data files in the table's folder, every version's: ``.parquet`` files outside
    ``_delta_log`` (partition folders such as ``_partition=2024-01-01`` included) and deletion
    vector files, with their bytes."""
    out = {"files": 0, "bytes": 0, "dv_files": 0}
    for folder, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != "_delta_log" and not d.startswith(".")]
        for name in names:
            if name.endswith(".parquet"):
                out["files"] += 1
                out["bytes"] += os.path.getsize(os.path.join(folder, name))
            elif name.startswith("deletion_vector_") and name.endswith(".bin"):
                out["dv_files"] += 1
    return out


def reset_auto_compact_stats(spark) -> None:
    """Forget what this driver counted for auto compaction (Delta keeps, per table and partition,
    the small files added by the commits of this JVM only, in ``AutoCompactPartitionStats``):
    the state of a driver that starts fresh, e.g. a run after the warm engine stopped."""
    jvm = spark._jvm
    jvm.org.apache.spark.sql.delta.stats.AutoCompactPartitionStats.instance(spark._jsparkSession).resetTestOnly()


# -- reads -------------------------------------------------------------------------------------
def time_query(spark, sql: str, reps: int) -> dict:
    spark.sql(sql).collect()  # warm-up
    times, result = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        result = spark.sql(sql).collect()
        times.append(time.perf_counter() - t0)
    return {"median": statistics.median(times), "times": times, "result": [list(r) for r in result]}


def measure_reads(spark, path: str, lookup_id: int, reps: int) -> dict:
    ident = path_ident(path)
    return {
        "full": time_query(spark, f"SELECT count(*), sum(amount) FROM {ident}", reps),
        "lookup": time_query(spark, f"SELECT * FROM {ident} WHERE id = {lookup_id}", reps),
    }


# -- one strategy x mode -----------------------------------------------------------------------
def run_series(spark, lake, w: Workload, mode: str, runs: int, every: int, read_reps: int,
               auto_min_files: Optional[int], deletion_vectors: bool = False) -> dict:
    from assetlake_dagster.lake.delta_sql import session_conf
    from assetlake_dagster.lake.maintenance import optimize_table, table_files
    from assetlake_dagster.spec import TableUri
    from assetlake_dagster.spec.model import LayoutSpec
    from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
    from assetlake_dagster.writes.layout import new_table_properties
    from assetlake_dagster.writes.slices import describe_slice

    uri = TableUri(SCHEMA, f"{w.strategy}_{mode}")
    path = lake.table_path(uri)
    shutil.rmtree(path, ignore_errors=True)
    label = f"{w.strategy} {mode}"
    auto = mode in ("auto", "auto_fresh")
    properties = ((AUTO_COMPACT_PROPERTY, "true"),) if auto else ()
    if deletion_vectors:  # as a `-- properties delta.enableDeletionVectors=true` line creates the table
        properties += ((DV_PROPERTY, "true"),)
    layout = LayoutSpec(properties=properties)
    mode_conf = ({"spark.databricks.delta.autoCompact.minNumFiles": str(auto_min_files)}
                 if auto and auto_min_files is not None else {})
    series: list[dict] = []
    optimizes: list[dict] = []
    for r in range(1, runs + 1):
        sql, partitions = w.source(r)
        df = spark.sql(sql)
        target = WriteTarget(
            uri=uri, path=path, strategy=w.kind, key=w.key, partitions=partitions,
            close_deletes=w.strategy == "history",
            stamp=CommitStamp(run_id=uuid.uuid4().hex, asset=f"{SCHEMA}/{uri.table}", partition=describe_slice(partitions)),
        )
        versions = log_versions(path)
        before = versions[-1] if versions else None
        if mode == "auto_fresh":
            reset_auto_compact_stats(spark)
        with session_conf(spark, mode_conf), (new_table_properties(spark, layout) if r == 1 else session_conf(spark, {})):
            t0 = time.perf_counter()
            result = strategy_for(w.kind).write(spark, df, target)
            seconds = time.perf_counter() - t0
        files = table_files(spark, lake, path)
        stored = stored_files(path)
        commits = commits_after(path, before)
        entry = {
            "run": r, "seconds": seconds,
            "current_files": files.current_files, "current_bytes": files.current_bytes,
            "stored_files": stored["files"], "stored_bytes": stored["bytes"], "stored_dv_files": stored["dv_files"],
            # maintenance.table_files' own walk (it skips folders named _*, so _partition=... ones)
            "product_stored_files": files.stored_files,
            "added_files": sum(c["added"] for c in commits if c["operation"] != "OPTIMIZE"),
            "auto_compactions": sum(1 for c in commits if c["auto_compaction"]),
            "commits": commits,
            "product": {"committed": result.committed, "version": result.version, "operation": result.operation,
                        "rows_written": result.rows_written},
        }
        if r == 1 and properties:
            props = spark.sql(f"DESCRIBE DETAIL {path_ident(path)}").first()["properties"] or {}
            for key, value in properties:
                if props.get(key) != value:
                    raise BenchError(f"{label}: the table was created without {key}={value}: {props}")
        if mode == "scheduled" and r % every == 0:
            t0 = time.perf_counter()
            m = optimize_table(spark, lake, uri)
            entry["optimize"] = {"seconds": time.perf_counter() - t0, "files_before": m.before.current_files,
                                 "files_after": m.after.current_files, "version": m.version}
            optimizes.append({"run": r, **entry["optimize"]})
        series.append(entry)
        progress(f"{label} run {r}/{runs}: {seconds:.2f}s, files {files.current_files} "
                 f"(on disk {stored['files']}), +{entry['added_files']} files"
                 + (f", AUTO COMPACTION x{entry['auto_compactions']}" if entry["auto_compactions"] else "")
                 + (f", OPTIMIZE -> {entry['optimize']['files_after']}" if "optimize" in entry else ""))
    out: dict[str, Any] = {"path": path, "series": series, "optimizes": optimizes}
    last = series[-1]
    out["final"] = {"current_files": last["current_files"], "stored_files": last["stored_files"],
                    "current_bytes": last["current_bytes"], "stored_bytes": last["stored_bytes"]}
    out["max_current_files"] = max(e["current_files"] for e in series)
    out["max_added_per_run"] = max((e["added_files"] for e in series[1:]), default=series[0]["added_files"])
    out["auto_compaction_runs"] = [e["run"] for e in series if e["auto_compactions"]]
    out["write_seconds"] = {"median": statistics.median(e["seconds"] for e in series),
                            "median_incremental": statistics.median(e["seconds"] for e in series[1:]) if runs > 1 else None,
                            "total": sum(e["seconds"] for e in series)}
    stamp_mismatch = [e["run"] for e in series if e["product"]["operation"] == "OPTIMIZE"]
    if stamp_mismatch:
        out["product_result_was_optimize"] = stamp_mismatch
        progress(f"{label}: the product's WriteResult named the auto compaction's OPTIMIZE commit in runs {stamp_mismatch}")
    walk_mismatch = [e["run"] for e in series if e["product_stored_files"] != e["stored_files"]]
    if walk_mismatch:
        out["product_stored_files_differs"] = {"runs": walk_mismatch, "last": last["product_stored_files"]}
    progress(f"{label}: reads")
    out["reads"] = measure_reads(spark, path, w.lookup_id, read_reps)
    out["rows"] = w.check(spark, path, runs)
    if mode == "none":
        t0 = time.perf_counter()
        m = optimize_table(spark, lake, uri)
        out["optimize"] = {"seconds": time.perf_counter() - t0, "files_before": m.before.current_files,
                           "files_after": m.after.current_files, "stored_after": stored_files(path)["files"],
                           "version": m.version}
        progress(f"{label}: OPTIMIZE {m.before.current_files} -> {m.after.current_files} files; reads again")
        out["reads_after_optimize"] = measure_reads(spark, path, w.lookup_id, read_reps)
        out["rows_after_optimize"] = w.check(spark, path, runs)
    return out


def bounds(none: dict, every: int) -> dict:
    """The bound a scheduled OPTIMIZE every k runs gives, from the ``none`` series."""
    base = none["optimize"]["files_after"]
    added = none["max_added_per_run"]
    return {"files_after_optimize": base, "max_added_per_run": added,
            **{f"k={k}": base + k * added for k in sorted({1, every})}}


def check_scheduled(sched: dict, added: int) -> dict:
    """Each run of ``scheduled`` against ``files after the last OPTIMIZE (or run 1) + runs since x
    the most files one run added (from none)``."""
    base_files, base_run, worst = None, None, None
    for e in sched["series"]:
        if base_files is None:
            base_files, base_run = e["current_files"], e["run"]
            continue
        allowed = base_files + (e["run"] - base_run) * added
        slack = allowed - e["current_files"]
        if worst is None or slack < worst["slack"]:
            worst = {"run": e["run"], "files": e["current_files"], "allowed": allowed, "slack": slack}
        if "optimize" in e:
            base_files, base_run = e["optimize"]["files_after"], e["run"]
    return {"ok": worst is None or worst["slack"] >= 0, "tightest": worst}


def auto_settings(spark) -> dict:
    """Delta's auto compaction settings as this session sees them (defaults included)."""
    try:  # registers Delta's SQL settings, so that their defaults are visible
        spark._jvm.org.apache.spark.sql.delta.sources.DeltaSQLConf.DELTA_AUTO_COMPACT_MIN_NUM_FILES()
    except Exception:  # noqa: BLE001 - the values below then come out "<unset>"
        pass
    out = {}
    for key in AUTO_COMPACT_SETTINGS:
        full = "spark.databricks.delta." + key
        try:  # without a default: the setting's own default when it has one
            out[full] = spark.conf.get(full)
        except Exception:  # noqa: BLE001 - no value and no default
            out[full] = None
    return out


# -- lines -------------------------------------------------------------------------------------
def _reads_text(before: dict, after: Optional[dict] = None, after_label: str = "") -> str:
    def one(name: str) -> str:
        text = f"{name} {before[name]['median']:.2f} s"
        if after is not None:
            text += f" -> {after[name]['median']:.2f} s{after_label}"
        return text
    return f"reads {one('full')}; {one('lookup')}"


def line(strategy: str, mode: str, res: dict, runs: int, every: int, min_files: Optional[int], bound: Optional[dict]) -> str:
    f = res["final"]
    head = (f"{strategy} {mode}: files after {runs} runs {f['current_files']} (on disk {f['stored_files']}), "
            f"max {res['max_current_files']}, max +{res['max_added_per_run']}/run; "
            f"write median {res['write_seconds']['median']:.2f} s")
    if mode == "none":
        o = res["optimize"]
        return (head + f"; {_reads_text(res['reads'], res['reads_after_optimize'], '')} after OPTIMIZE "
                f"({o['files_after']} file{'s' if o['files_after'] != 1 else ''}, {o['seconds']:.2f} s)")
    if mode in ("auto", "auto_fresh"):
        fired = res["auto_compaction_runs"]
        text = head + f"; auto compaction fired {len(fired)}x" + (f" (runs {', '.join(map(str, fired))})" if fired else "")
        if mode == "auto_fresh":
            text += "; driver's auto compaction counts reset before every run"
        else:
            allowed = min_files - 1 + res["max_added_per_run"]
            per_partition = res["rows"].get("max_files_per_partition")
            seen = res["max_current_files"] if per_partition is None else per_partition
            text += (f"; bound minNumFiles-1+max added = {allowed}{' per partition' if per_partition is not None else ''}: "
                     f"{seen} {'ok' if seen <= allowed else 'OVER'}")
        return text + f"; {_reads_text(res['reads'])}"
    if mode == "scheduled":
        text = head + f"; OPTIMIZE every {every} runs ({len(res['optimizes'])}x)"
        if bound is not None:
            chk = res["bound_check"]
            text += (f"; bound {bound['files_after_optimize']} + {every} x {bound['max_added_per_run']} = "
                     f"{bound[f'k={every}']}, per-run check {'ok' if chk['ok'] else 'OVER'} "
                     + (f"(tightest run {chk['tightest']['run']}: {chk['tightest']['files']} <= {chk['tightest']['allowed']})"
                        if chk["tightest"] else ""))
        return text + f"; {_reads_text(res['reads'])} (after the last run)"
    return head


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the first write (default 100000)")
    parser.add_argument("--runs", type=int, default=30, help="runs per strategy and mode, the first one included (default 30)")
    parser.add_argument("--out", default="small_files_results.json")
    parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--every", type=int, default=10, help="scheduled: OPTIMIZE after every N runs (default 10)")
    parser.add_argument("--days", type=int, default=10, help="partition_replace: days of the first write (default 10)")
    parser.add_argument("--auto-min-files", type=int, default=None,
                        help="auto: spark.databricks.delta.autoCompact.minNumFiles for its writes (default: Delta's, 50)")
    parser.add_argument("--read-reps", type=int, default=3, help="timed repetitions of each read (after a warm-up)")
    parser.add_argument("--workdir", default=None, help="keep the tables here (default: a temp folder, removed)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--deletion-vectors", action="store_true",
                        help="create every table with delta.enableDeletionVectors=true (a MERGE then adds files)")
    args = parser.parse_args()
    if args.runs < 2 or args.rows < 100 or args.every < 1:
        parser.error("--runs >= 2, --rows >= 100, --every >= 1")

    workdir = args.workdir or tempfile.mkdtemp(prefix="assetlake-small-files-")
    os.makedirs(workdir, exist_ok=True)
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0]},
        "command": " ".join(sys.argv), "args": vars(args),
        "workload": {"merge_changed": MERGE_CHANGED, "merge_new": MERGE_NEW, "append_new": APPEND_NEW,
                     "history_changed": HISTORY_CHANGED},
        "strategies": {},
    }
    code = 0
    spark = None
    try:
        from assetlake_dagster.lake.root import Lake

        progress(f"starting Spark (workdir {workdir})")
        spark = spark_session(workdir, args.cores)
        from importlib import metadata

        results["versions"] = {"pyspark": spark.version, "delta-spark": metadata.version("delta-spark")}
        settings = auto_settings(spark)
        results["auto_compaction_settings"] = settings
        print(f"Delta {results['versions']['delta-spark']} auto compaction settings (None = unset / Delta's default):",
              flush=True)
        for k, v in settings.items():
            print(f"  {k} = {v}", flush=True)
        if args.auto_min_files is not None:
            print(f"  (auto, auto_fresh: spark.databricks.delta.autoCompact.minNumFiles = {args.auto_min_files} for their writes)")
        min_files = args.auto_min_files
        if min_files is None:
            try:
                min_files = int(settings.get("spark.databricks.delta.autoCompact.minNumFiles") or 50)
            except ValueError:
                min_files = 50
        lake = Lake(os.path.join(workdir, "lake"))
        for strategy in args.strategies:
            w = Workload(strategy, args.rows, args.days)
            per_mode: dict[str, Any] = {}
            results["strategies"][strategy] = per_mode
            for mode in args.modes:
                progress(f"{strategy} {mode}: {args.runs} runs at {args.rows} rows")
                per_mode[mode] = run_series(spark, lake, w, mode, args.runs, args.every, args.read_reps,
                                            args.auto_min_files, args.deletion_vectors)
                write_json(args.out, results)
            bound = bounds(per_mode["none"], args.every) if "none" in per_mode else None
            if bound is not None:
                per_mode["bounds"] = bound
                print(f"{strategy} bound from none: {bound['files_after_optimize']} + k x {bound['max_added_per_run']}"
                      f" -> k=1: {bound['k=1']}, k={args.every}: {bound[f'k={args.every}']}", flush=True)
            if bound is not None and "scheduled" in per_mode:
                per_mode["scheduled"]["bound_check"] = check_scheduled(per_mode["scheduled"], bound["max_added_per_run"])
            for mode in args.modes:
                print(line(strategy, mode, per_mode[mode], args.runs, args.every, min_files, bound), flush=True)
            write_json(args.out, results)
    except BenchError as exc:
        print(f"small files: ERROR {exc}", flush=True)
        results["error"] = str(exc)
        code = 2
    except BaseException as exc:  # noqa: BLE001 - report, keep what was measured
        traceback.print_exc()
        results["error"] = f"{exc.__class__.__name__}: {exc}"
        code = 2
    finally:
        results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_json(args.out, results)
        if spark is not None:
            spark.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
