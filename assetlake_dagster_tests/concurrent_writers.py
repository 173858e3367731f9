"""Two writer processes committing to the same tables at the same moment, and the checks of
what they leave (RELIABILITY.md rule 15), for any lake root the warm engine serves: a local
folder (``e2e/test_concurrent_runs.py``) or a bucket (``e2e/test_s3_lake.py``).

Each process, with its own engine session, meets the other at a file barrier before every
write: SCD2 history runs on one table per round, then replaces of disjoint partitions of
one shared table.
"""

import inspect
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Mapping

from assetlake_dagster.spec import PARTITION_COLUMN


def meet(barriers: str, name: str, me: str, other: str, deadline_s: float = 600.0) -> None:
    """Wait at the barrier ``name`` until the other writer reaches it too.

    Fails at once when the other writer has gone (its ``gone.<other>`` mark: it exited, maybe on an
    error), and after ``deadline_s``: a writer alone would otherwise wait until the test's
    time limit and hide the other's error (a CI run waited 1200 s so).
    """
    open(os.path.join(barriers, f"{name}.{me}"), "w").close()
    deadline = time.monotonic() + deadline_s
    while not os.path.exists(os.path.join(barriers, f"{name}.{other}")):
        if os.path.exists(os.path.join(barriers, f"gone.{other}")):
            raise RuntimeError(f"writer {me}: writer {other} exited before the barrier {name}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"writer {me}: writer {other} did not reach the barrier {name} in {deadline_s:.0f} s")
        time.sleep(0.01)


WRITER = """
    import json, os, sys, time
    from assetlake_dagster.defs.partitions import with_partition_key
    from assetlake_dagster.defs.resources import SparkDeltaResource
    from assetlake_dagster.spec import TableUri, WriteStrategy
    from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for
    from assetlake_dagster.writes.retry import write_with_retries

    me, rounds, root, barriers = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    other = "b" if me == "a" else "a"
    # Whatever ends this process, the other writer learns it at its next barrier.
    import atexit
    atexit.register(lambda: open(os.path.join(barriers, f"gone.{me}"), "w").close())
    resource = SparkDeltaResource(lake_root=root)
    spark = resource.new_session()

    def barrier(name):
        meet(barriers, name, me, other)

    outcomes = []
    for i in range(rounds):
        # Both change tier of the odd keys; b also drops key 4 (deletes=close).
        rows = [(k, f"{me}{i}" if k % 2 else "same") for k in range(1, 5)]
        rows = rows[:-1] if me == "b" else rows
        history = WriteTarget(
            uri=TableUri("h", f"t{i}"), path=f"{root}/h/t{i}", strategy=WriteStrategy.HISTORY,
            stamp=CommitStamp(f"{me}{i}", f"h/t{i}"), key=("id",), close_deletes=True,
        )
        df = spark.createDataFrame(rows, "id INT, tier STRING")
        barrier(f"h{i}")
        try:
            result = write_with_retries(strategy_for(WriteStrategy.HISTORY), spark, df, history)
            outcomes.append(["ok", result.version])
        except Exception as exc:
            outcomes.append(["error", str(exc)[:500]])
        key = f"{me}-{i}"
        part = WriteTarget(
            uri=TableUri("p", "t"), path=f"{root}/p/t", strategy=WriteStrategy.REPLACE,
            stamp=CommitStamp(f"{me}{i}", "p/t", key), partitions=(key,),
        )
        pdf = with_partition_key(spark, spark.createDataFrame([(i, me)], "n INT, who STRING"), key)
        barrier(f"p{i}")
        try:
            write_with_retries(strategy_for(WriteStrategy.REPLACE), spark, pdf, part)
            outcomes.append(["ok", key])
        except Exception as exc:
            outcomes.append(["error", str(exc)[:500]])
    resource.release_session(spark)
    print(json.dumps(outcomes))
"""


def check_history(rows, label):
    by_key = {}
    for r in rows:
        by_key.setdefault(r["id"], []).append(r)
    for key, versions in by_key.items():
        assert sum(r["is_current"] for r in versions) <= 1, (label, key, versions)
        for r in versions:
            assert r["is_current"] == (r["valid_to"] is None), (label, key, r)
            assert r["valid_to"] is None or r["valid_to"] > r["valid_from"], (label, key, r)
        ordered = sorted(versions, key=lambda r: r["valid_from"])
        for prev, nxt in zip(ordered, ordered[1:]):
            assert prev["valid_to"] is not None and prev["valid_to"] <= nxt["valid_from"], (label, key, ordered)



def run_writers(root: str, barriers: str, env: Mapping[str, str], rounds: int) -> list:
    """Run writers ``a`` and ``b`` at once; each one's outcomes, ``[status, detail]`` per write."""
    code = inspect.getsource(meet) + textwrap.dedent(WRITER)
    procs = [
        subprocess.Popen([sys.executable, "-c", code, me, str(rounds), root, barriers], env=dict(env),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for me in ("a", "b")
    ]
    outputs = [proc.communicate(timeout=1200) for proc in procs]
    # Both writers' errors: the one that failed first is the cause, the other's is its peer gone.
    errors = [f"writer {me} (exit {proc.returncode}): {err[-3000:]}"
              for me, proc, (_, err) in zip("ab", procs, outputs) if proc.returncode != 0]
    assert not errors, "\n".join(errors)
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]


def check_writers(results: list, open_table: Callable, rounds: int) -> None:
    """Nothing lost: every write committed, each history table valid with both commits, every
    partition of both writers present. ``open_table("h/t0")`` gives a ``deltalake.DeltaTable``."""
    assert all(status == "ok" for outcomes in results for status, _ in outcomes), results
    for i in range(rounds):
        table = open_table(f"h/t{i}")
        rows = table.to_pyarrow_table().to_pylist()
        check_history(rows, f"round {i}")
        assert len(table.history()) == 2  # both runs committed: one created, one merged on top
        current = {r["id"]: r["tier"] for r in rows if r["is_current"]}
        # Whichever ran last decides the current rows: b's snapshot lacks key 4 (closed).
        assert current in (
            {1: f"a{i}", 2: "same", 3: f"a{i}", 4: "same"},
            {1: f"b{i}", 2: "same", 3: f"b{i}"},
        ), (i, current)
    parts = open_table("p/t").to_pyarrow_table().to_pylist()
    assert sorted((r[PARTITION_COLUMN], r["n"], r["who"]) for r in parts) == sorted(
        (f"{me}-{i}", i, me) for me in ("a", "b") for i in range(rounds)
    )
