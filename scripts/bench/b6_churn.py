"""B6 of ``docs/performance.md``: SCD2 at churn 0 / 0.1 / 1 / 10 % of the keys after a history of
1 / 10 / 30 runs, deletion vectors off / on, against a full-rewrite SCD2 (the SQLMesh
``SCD_TYPE_2_BY_COLUMN`` way on Spark) and against the bare diff query; plus a plot.

Data (deterministic, no random generator): ``rows`` keys, row ``i`` as in
:func:`common.rows_sql` (id, customer_id, name, amount, status, updated_on); every non-key
column is tracked (the product's default ``track=``), key ``id``, ``close_deletes=True`` (no key
ever disappears here: churn is tracked changes only, so no new and no absent keys).
Generation ``g`` of the snapshot is closed-form: ``amount = amount_i + sum_{j=1..g} [rank_j(i) < c_j]``
with ``rank_j(i) = (i * P + seed + j * 104729) mod rows`` (a bijection, so generation ``j``
changes exactly ``c_j`` keys, and a key changes in generation ``j`` exactly when its amount differs
from generation ``j - 1``); ``c_j`` is ``history_churn`` % of the keys while the history is built
and the measured churn for the timed generation.

History (untimed, built once per deletion-vector setting, by the product itself): "a history of
``h`` runs" is the table after ``h`` runs of the product's SCD2 write
(``strategy_for(WriteStrategy.HISTORY).write``): run 1 creates the table from generation 0, runs
2..h apply generations 1..h-1 (each ``history_churn`` = 1% of the keys changed, so after 30 runs
``rows`` current + 29% of ``rows`` closed rows). The chains are incremental: run 1 once, then per
dv setting a SHALLOW CLONE of it (``fresh_copy(..., properties={'delta.enableDeletionVectors':
'true'})`` for dv on, so every later MERGE of that chain writes deletion vectors, as a table the
product creates with ``deletion_vectors=True`` would) that the next runs continue; on reaching
each history length the chain is snapshotted by a SHALLOW CLONE (``base_h<h>_dv<0|1>``): the
10-run base continues from the 1-run one, the 30-run from the 10-run one. A clone has a
one-commit log: the data side of a long history (rows, files, deletion vectors) is kept, a long
``_delta_log`` is not.

Timed, per cell (history ``h`` x deletion vectors x churn ``c``), the snapshot is generation
``h`` with ``c`` % of the keys changed, in its own Delta table (written untimed); each variant gets
a fresh SHALLOW CLONE of ``base_h<h>_dv<..>`` (untimed; dv on: the property in the clone too):
    ours:   the product's SCD2 write on its clone, as the IO manager calls it:
            ``strategy_for(WriteStrategy.HISTORY).write(spark, df, WriteTarget(uri=..., path=...,
            strategy=HISTORY, stamp=CommitStamp(run_id=<fresh uuid>, asset='b6/ours'),
            key=('id',), close_deletes=True))``, ``df`` reading the snapshot table; the product's
            own clock. At 0% it must decide that nothing changed and commit nothing.
    anchor: the full rewrite: the whole history table recomputed from the old table and the
            snapshot (closed versions as they are; the current versions full-outer-joined with
            the snapshot: unchanged ones kept, changed / absent ones closed, changed / new snapshot
            rows opened) and written back with one ``INSERT OVERWRITE`` (one commit, every run,
            churn or not). SQLMesh's SCD_TYPE_2_BY_COLUMN on Spark rewrites the table twice per
            run (docs/performance.md), so one rewrite is the anchor's kind version.
    diff:   the bare diff query, the cost floor of deciding "nothing to do": the snapshot
            ``LEFT ANTI JOIN`` the current rows on the key and every tracked column (``<=>``),
            counted (its count is checked: exactly the changed keys). It does not look for
            current keys absent from the snapshot, which ours (``close_deletes=True``, a FULL
            OUTER JOIN) must also rule out: the floor is a little below the necessary work.
Order rotated each round (``common.measure_interleaved``: a warm-up of each variant, then
``reps`` rounds, then one untimed profiled run of ours: where ours spends its time, per phase).

Equality before timing: right after the warm-ups of ours and the anchor (in the diff variant's
first setup, which ``run_once`` leaves untimed and which comes after both warm-ups), the two
outputs normalized to the data columns plus ``open`` (``is_current``) are compared as multisets
(``common.check_equal``: ``EXCEPT ALL`` both ways and the counts), and must hold exactly the
expected rows (history rows + changed keys) with ``rows`` open ones; unequal outputs raise
:class:`common.BenchError` before any timed repetition.

Goals (docs/performance.md, B6):
    zero_churn: at 0% churn median(ours) / median(diff) <= 1.20 and ours makes 0 commits, in
                every (history x dv) cell (the line shows the worst cell);
    history:    median(ours) after the longest history / median(ours) after the shortest
                <= 1.30, at the same churn (``ref_churn``: 1% when measured, else the largest
                measured churn), per dv setting (the line shows the worst).
The JSON has the table of every cell: medians of the three variants, ours/anchor, ours/diff,
commits, rows updated / inserted, spreads; and every repetition's figures.

Plot (matplotlib, Agg): seconds (median) against churn (categorical x: 0, 0.1, 1, 10 %), three
panels (ours | full-rewrite anchor | bare diff query), one colour per history length, solid line
dv off, dashed dv on; saved as PNG at ``out_png``.

Cost: at the default 1M keys x 4 churns x 3 histories x 2 dv settings x reps=3 on 2 shared
cores, by extrapolating the validation runs and B3's history@1M (~18 s a write): the 29 build
runs per dv setting ~10-15 min each (~25 min), the 24 cells ~3 min each (3 x 4 runs + the
profile run + 12 clones + the equality check) ~75 min: about 1.5-2 hours. ``--b6-histories 1 10``
or ``--b6-dvs on`` cut it roughly by a third / half.
"""

import os
import shutil
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Optional

from common import (BenchError, Variant, _step, check_equal, fmt_commits, fresh_copy, measure_interleaved,
                    path_ident, progress, rows_sql, write_delta)

GOAL_ZERO, GOAL_HISTORY = 1.20, 1.30
COLUMNS = ("id", "customer_id", "name", "amount", "status", "updated_on")
TRACKED = tuple(c for c in COLUMNS if c != "id")  # the product's default: every non-key column
CHURNS = (0.0, 0.1, 1.0, 10.0)
HISTORIES = (1, 10, 30)
DV_PROPS = {"delta.enableDeletionVectors": "true"}
GEN_STRIDE = 104_729  # the offset between two generations' scrambles
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_PNG = os.path.join(REPO, "docs", "img", "b6_churn.png")


def churn_keys(rows: int, pct: float) -> int:
    """The keys changed by ``pct`` % churn at ``rows`` keys (exact)."""
    return int(round(rows * pct / 100.0))


def snapshot_sql(rows: int, counts: Sequence[int], seed: int) -> str:
    """The snapshot of generation ``len(counts)``: generation ``j`` (1-based) changed ``counts[j-1]``
    keys, each change adding 1 to ``amount``."""
    step = _step(rows)
    bumps = [f"CASE WHEN pmod(id * {step} + {seed + j * GEN_STRIDE}, {rows}) < {c} THEN 1 ELSE 0 END"
             for j, c in enumerate(counts, 1) if c > 0]
    bump = " + ".join(bumps) or "0"
    return f"SELECT id, customer_id, name, amount + ({bump}) AS amount, status, updated_on FROM ({rows_sql(0, rows)})"


def anchor_sql(table: str, source: str) -> str:
    """The full-rewrite SCD2 (SQLMesh SCD_TYPE_2_BY_COLUMN style): the whole new history from the
    old table and the snapshot, one ``INSERT OVERWRITE`` of the table; absent keys closed."""
    same = " AND ".join(f"t.{c} <=> s.{c}" for c in TRACKED)
    t_cols = ", ".join(f"t.{c} AS t_{c}" for c in COLUMNS)
    s_cols = ", ".join(f"s.{c} AS s_{c}" for c in COLUMNS)
    cols = ", ".join(COLUMNS)
    t_out = ", ".join(f"t_{c}" for c in COLUMNS)
    s_out = ", ".join(f"s_{c}" for c in COLUMNS)
    return (
        f"WITH j AS (SELECT t.id IS NOT NULL AS has_t, s.id IS NOT NULL AS has_s, "
        f"coalesce(t.id IS NOT NULL AND s.id IS NOT NULL AND {same}, false) AS keep, "
        f"{t_cols}, t.valid_from AS t_valid_from, {s_cols} "
        f"FROM (SELECT * FROM {table} WHERE is_current) AS t FULL OUTER JOIN {source} AS s ON t.id = s.id) "
        f"INSERT OVERWRITE {table} "
        f"SELECT {cols}, valid_from, valid_to, is_current FROM {table} WHERE NOT is_current "
        f"UNION ALL SELECT {t_out}, t_valid_from, CASE WHEN keep THEN CAST(NULL AS TIMESTAMP) ELSE "
        f"current_timestamp() END, keep FROM j WHERE has_t "
        f"UNION ALL SELECT {s_out}, current_timestamp(), CAST(NULL AS TIMESTAMP), true FROM j "
        f"WHERE has_s AND NOT keep"
    )


def diff_sql(table: str, source: str) -> str:
    """The bare diff query: snapshot rows with no identical current row, counted."""
    same = " AND ".join(f"t.{c} <=> s.{c}" for c in TRACKED)
    return (f"SELECT count(*) AS n FROM {source} AS s LEFT ANTI JOIN "
            f"(SELECT id, {', '.join(TRACKED)} FROM {table} WHERE is_current) AS t ON t.id = s.id AND {same}")


def _pct(c: float) -> str:
    return f"{c:g}%"


def _dv(dv: bool) -> str:
    return "on" if dv else "off"


def run(spark, workdir: str, rows: int = 1_000_000, churns: Sequence[float] = CHURNS,
        histories: Sequence[int] = HISTORIES, reps: int = 3, out_png: Optional[str] = DEFAULT_PNG,
        dvs: Sequence[bool] = (False, True), history_churn: float = 1.0, seed: int = 42) -> dict:
    """B6 at ``rows`` keys: every (history x dv x churn) cell, ``reps`` timed rounds each; the
    plot at ``out_png`` (None: no plot). ``churns`` and ``history_churn`` in percent of the keys."""
    from assetlake_dagster.spec import TableUri, WriteStrategy
    from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

    churns = sorted(set(float(c) for c in churns))
    histories = sorted(set(int(h) for h in histories))
    dvs = list(dict.fromkeys(bool(d) for d in dvs))
    if not histories or histories[0] < 1 or not churns or min(churns) < 0 or not dvs:
        raise BenchError(f"B6: bad parameters histories={histories} churns={churns} dvs={dvs}")
    hist_keys = churn_keys(rows, history_churn)
    lake = os.path.join(workdir, "lake", "b6")
    files = max(1, rows // 250_000)
    history = strategy_for(WriteStrategy.HISTORY)
    started = time.perf_counter()

    def product_write(source: str, path: str, asset: str) -> dict:
        df = spark.read.format("delta").load(source)
        target = WriteTarget(uri=TableUri("b6", asset), path=path, strategy=WriteStrategy.HISTORY,
                             stamp=CommitStamp(run_id=uuid.uuid4().hex, asset=f"b6/{asset}"),
                             key=("id",), close_deletes=True)
        result = history.write(spark, df, target)
        return {"product_rows_written": result.rows_written}

    # -- the histories (untimed): run 1 once, then one incremental chain per dv setting ---------
    build_src = os.path.join(lake, "build_source")
    created = os.path.join(lake, "created")
    shutil.rmtree(created, ignore_errors=True)
    progress(f"B6 building: {rows} keys, histories {histories} (each later run {_pct(history_churn)} = "
             f"{hist_keys} keys changed), dv {'/'.join(_dv(d) for d in dvs)}")
    write_delta(spark, snapshot_sql(rows, [], seed), build_src, files=files)
    product_write(build_src, created, "build")
    bases: dict = {}
    build_seconds: dict = {}
    for dv in dvs:
        t0 = time.perf_counter()
        chain = os.path.join(lake, f"chain_dv{int(dv)}")
        fresh_copy(spark, created, chain, properties=DV_PROPS if dv else None)
        done = 1  # runs of the product behind the chain
        for h in histories:
            while done < h:  # run done+1 applies generation `done`
                write_delta(spark, snapshot_sql(rows, [hist_keys] * done, seed), build_src, files=files)
                product_write(build_src, chain, "build")
                done += 1
                if done % 5 == 0 or done == h:
                    progress(f"B6 build dv={_dv(dv)}: {done} runs ({time.perf_counter() - t0:.0f}s)")
            base = os.path.join(lake, f"base_h{h}_dv{int(dv)}")
            fresh_copy(spark, chain, base)
            bases[(h, dv)] = base
        build_seconds[_dv(dv)] = time.perf_counter() - t0
    base_stats = {}
    for (h, dv), base in bases.items():
        d = spark.sql(f"DESCRIBE DETAIL {path_ident(base)}").first()
        props = d["properties"] or {}
        if dv and props.get("delta.enableDeletionVectors") != "true":
            raise BenchError(f"B6: {base} lacks deletion vectors: {props}")
        base_stats[f"h{h}_dv{_dv(dv)}"] = {"files": int(d["numFiles"]), "bytes": int(d["sizeInBytes"]),
                                           "rows": rows + (h - 1) * hist_keys, "properties": dict(props)}
    progress(f"B6 bases: {base_stats}")

    # -- the timed cells ------------------------------------------------------------------------
    ours_path, anchor_path, diff_path = (os.path.join(lake, p) for p in ("ours", "anchor", "diff"))
    cells = []
    for h in histories:
        for c in churns:
            changed = churn_keys(rows, c)
            source = os.path.join(lake, f"source_h{h}_c{c:g}")
            write_delta(spark, snapshot_sql(rows, [hist_keys] * (h - 1) + [changed], seed), source,
                        files=max(1, files // 2))
            for dv in dvs:
                cells.append(_cell(
                    spark, h=h, c=c, dv=dv, changed=changed, source=source, base=bases[(h, dv)], rows=rows,
                    history_rows=rows + (h - 1) * hist_keys, reps=reps, paths=(ours_path, anchor_path, diff_path),
                    product_write=product_write))

    # -- goals ------------------------------------------------------------------------------------
    def cell(h, c, dv):
        return next(x for x in cells if x["history"] == h and x["churn"] == c and x["dv"] == dv)

    zero = [x for x in cells if x["churn"] == 0]
    zero_worst = max(zero, key=lambda x: x["ours_diff"]) if zero else None
    zero_commits = max((max(r["commits"] for r in x["ours_reps"]) for x in zero), default=None)
    zero_ok = zero_worst is not None and zero_worst["ours_diff"] <= GOAL_ZERO and zero_commits == 0
    positive = [c for c in churns if c > 0]
    ref = 1.0 if 1.0 in churns else (max(positive) if positive else churns[0])
    hist_ratios = {}
    if len(histories) > 1:
        for dv in dvs:
            hist_ratios[_dv(dv)] = (cell(histories[-1], ref, dv)["ours_s"] / cell(histories[0], ref, dv)["ours_s"])
    hist_worst = max(hist_ratios.values()) if hist_ratios else None
    hist_ok = hist_worst is not None and hist_worst <= GOAL_HISTORY
    ok = zero_ok and hist_ok

    table_text = _table_text(cells)
    progress("B6 table (medians, s):\n" + table_text)
    plot = None
    if out_png:
        plot = _plot(cells, churns, histories, dvs, rows, reps, out_png)
        progress(f"B6 plot: {plot}")

    hs, hl = histories[0], histories[-1]
    anchor_ref = " ".join(f"h{h}/dv{_dv(dv)}={cell(h, ref, dv)['ours_anchor']:.2f}" for h in (hs, hl) for dv in dvs)
    zero_text = (f"zero_churn={zero_worst['ours_diff']:.2f} goal<={GOAL_ZERO:.2f} {'ok' if zero_ok else 'MISSED'} "
                 f"commits={fmt_commits([zero_commits])} (worst: h{zero_worst['history']} dv={_dv(zero_worst['dv'])})"
                 if zero_worst else "zero_churn=n/a (0 not in churns)")
    hist_text = (f"history{hl}/history{hs}={hist_worst:.2f} goal<={GOAL_HISTORY:.2f} {'ok' if hist_ok else 'MISSED'} "
                 f"(churn {_pct(ref)}, dv {'/'.join(f'{k}={v:.2f}' for k, v in hist_ratios.items())})"
                 if hist_worst is not None else "history=n/a (one history length)")
    line = (f"B6 {zero_text} {hist_text} rows={rows} reps={reps} churns={'/'.join(_pct(c) for c in churns)} "
            f"histories={'/'.join(map(str, histories))} | ours/anchor@{_pct(ref)} {anchor_ref}"
            + (f" plot={os.path.relpath(plot, REPO) if plot.startswith(REPO) else plot}" if plot else ""))
    return {
        "benchmark": "B6", "rows": rows, "churns_pct": churns, "histories": histories, "dvs": [_dv(d) for d in dvs],
        "history_churn_pct": history_churn, "history_keys_per_run": hist_keys, "reps": reps, "seed": seed,
        "build_seconds": build_seconds, "bases": base_stats, "seconds_total": time.perf_counter() - started,
        "goal": {"zero_churn_ours_diff": GOAL_ZERO, "zero_churn_commits": 0, "history_ratio": GOAL_HISTORY},
        "zero_churn": {"worst_ours_diff": zero_worst and zero_worst["ours_diff"], "max_commits": zero_commits,
                       "cells": {f"h{x['history']}_dv{_dv(x['dv'])}": x["ours_diff"] for x in zero}, "ok": zero_ok},
        "history_ratio": {"ref_churn_pct": ref, "longest": hl, "shortest": hs, "per_dv": hist_ratios,
                          "worst": hist_worst, "ok": hist_ok},
        "table": [{k: v for k, v in x.items() if k not in ("measure", "ours_reps")} for x in cells],
        "table_text": table_text,
        "cells": [{"history": x["history"], "churn_pct": x["churn"], "dv": _dv(x["dv"]), "measure": x["measure"]}
                  for x in cells],
        "sql": {"anchor": anchor_sql("<table>", "<snapshot>"), "diff": diff_sql("<table>", "<snapshot>"),
                "ours": history.plan(WriteTarget(uri=TableUri("b6", "ours"), path="<table>",
                                                 strategy=WriteStrategy.HISTORY, stamp=CommitStamp("plan", "b6/ours"),
                                                 key=("id",), close_deletes=True), list(COLUMNS)).statement},
        "plot": plot, "ok": ok, "line": line,
    }


def _cell(spark, *, h: int, c: float, dv: bool, changed: int, source: str, base: str, rows: int, history_rows: int,
          reps: int, paths: tuple, product_write) -> dict:
    """One (history x dv x churn) cell: the three variants, interleaved; its row of the table."""
    ours_path, anchor_path, diff_path = paths
    label = f"B6 h{h} dv={_dv(dv)} churn={_pct(c)}"
    props = {"properties": dict(DV_PROPS)} if dv else {}
    src = path_ident(source)
    a_sql, d_sql = anchor_sql(path_ident(anchor_path), src), diff_sql(path_ident(diff_path), src)
    state = {"ours": 0, "anchor": 0, "checked": None}

    def ours() -> dict:
        state["ours"] += 1
        return product_write(source, ours_path, "ours")

    def anchor() -> None:
        state["anchor"] += 1
        spark.sql(a_sql)  # a command: runs here

    def diff() -> dict:
        n = spark.sql(d_sql).first()["n"]
        if n != changed:
            raise BenchError(f"{label}: the diff query counted {n} changed rows, expected {changed}")
        return {"diff_rows": n}

    def output(path: str):
        return lambda: spark.read.format("delta").load(path).selectExpr(*COLUMNS, "is_current AS open")

    def diff_setup() -> None:
        if state["checked"] is None:  # the first setup: after the warm-ups of ours and the anchor
            if not (state["ours"] and state["anchor"]):
                raise BenchError(f"{label}: the equality check needs the warm-ups of ours and the anchor first")
            progress(f"{label} comparing the outputs of ours and the anchor")
            eq = check_equal(spark, {"ours": output(ours_path)(), "anchor": output(anchor_path)()})
            expected = history_rows + changed
            opened = spark.read.format("delta").load(ours_path).where("is_current").count()
            if eq["rows"] != expected or opened != rows:
                raise BenchError(f"{label}: outputs equal but {eq['rows']} rows ({opened} open), expected "
                                 f"{expected} ({rows} open)")
            state["checked"] = {**eq, "open": opened, "expected_rows": expected}
            progress(f"{label} outputs equal ({eq['rows']} rows, {opened} open)")
        fresh_copy(spark, base, diff_path, **props)

    variants = [
        Variant("ours", lambda: fresh_copy(spark, base, ours_path, **props), ours, path_ident(ours_path),
                output(ours_path)),
        Variant("anchor", lambda: fresh_copy(spark, base, anchor_path, **props), anchor, path_ident(anchor_path),
                output(anchor_path)),
        Variant("diff", diff_setup, diff, path_ident(diff_path), lambda: None),
    ]
    m = measure_interleaved(spark, label, variants, reps, check=False)
    m["equality"] = state["checked"]
    o, a, d = (m[v]["seconds"]["median"] for v in ("ours", "anchor", "diff"))
    progress(f"{label}: ours={o:.2f}s anchor={a:.2f}s diff={d:.2f}s ours/anchor={o / a:.2f} ours/diff={o / d:.2f} "
             f"commits={fmt_commits([m[v]['commits'] for v in ('ours', 'anchor', 'diff')])}")
    return {
        "history": h, "churn": c, "dv": dv, "changed_keys": changed, "history_rows": history_rows,
        "ours_s": o, "anchor_s": a, "diff_s": d, "ours_anchor": o / a, "ours_diff": o / d,
        "spread": {v: m[v]["seconds"]["spread"] for v in ("ours", "anchor", "diff")},
        "commits": {v: m[v]["commits"] for v in ("ours", "anchor")},
        "spark_jobs": {v: m[v]["spark_jobs"] for v in ("ours", "anchor", "diff")},
        "rows_updated": {v: m[v]["rows_updated"] for v in ("ours", "anchor")},
        "rows_inserted": {v: m[v]["rows_inserted"] for v in ("ours", "anchor")},
        "ours_reps": m["ours"]["reps"], "measure": m,
    }


def _table_text(cells: list) -> str:
    head = f"{'history':>7} {'dv':>3} {'churn':>6} {'ours':>7} {'anchor':>7} {'diff':>7} {'o/anchor':>8} {'o/diff':>7} commits"
    lines = [head]
    for x in cells:
        lines.append(f"{x['history']:>7} {_dv(x['dv']):>3} {_pct(x['churn']):>6} {x['ours_s']:>7.2f} "
                     f"{x['anchor_s']:>7.2f} {x['diff_s']:>7.2f} {x['ours_anchor']:>8.2f} {x['ours_diff']:>7.2f} "
                     f"{fmt_commits([x['commits']['ours'], x['commits']['anchor']])}")
    return "\n".join(lines)


def _plot(cells: list, churns: list, histories: list, dvs: list, rows: int, reps: int, out_png: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = list(range(len(churns)))
    colors = plt.get_cmap("viridis")
    fig, axes = plt.subplots(1, 3, figsize=(15, 5), sharey=True)
    for ax, (key, title) in zip(axes, (("ours_s", "ours (product SCD2 write)"),
                                       ("anchor_s", "anchor: full rewrite (INSERT OVERWRITE)"),
                                       ("diff_s", "bare diff query (anti-join, count)"))):
        for i, h in enumerate(histories):
            color = colors(i / max(1, len(histories) - 1) * 0.85)
            for dv in dvs:
                ys = [statistics.median([x[key] for x in cells if x["history"] == h and x["churn"] == c and x["dv"] == dv])
                      for c in churns]
                ax.plot(xs, ys, color=color, linestyle="--" if dv else "-", marker="o" if dv else "s",
                        label=f"history {h} run{'s' if h > 1 else ''}, dv {_dv(dv)}")
        ax.set_title(title)
        ax.set_xticks(xs, [_pct(c) for c in churns])
        ax.set_xlabel("churn (tracked changes, % of keys)")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel(f"seconds (median of {reps})")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"B6: SCD2 run time by churn and history length, {rows:,} keys "
                 f"({time.strftime('%Y-%m-%d', time.gmtime())}, 2 shared cores)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out_png)), exist_ok=True)
    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return os.path.abspath(out_png)
