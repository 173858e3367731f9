"""A writer process for ``test_kill_writer``: managed writes that never finish.

Run as ``python -m assetlake_dagster_tests.blocked_writer LAKE MARKERS WAREHOUSE STRATEGY…``
(or ``--engine LAKE MARKERS PHASE STRATEGY…``: through the warm engine, :func:`through_engine`).
It opens its own Spark session (its own JVM) on the same lake as the test and starts, at
once, one managed write per strategy to ``LAKE/s/<strategy>``, each of :data:`ROWS` rows in
:data:`PARTITIONS` Spark partitions. A Python UDF lets every row through except the last
one: on it, the UDF creates ``MARKERS/<strategy>`` and then sleeps until the process is
killed. So the other partitions' tasks complete (for replace and append, they write their
data files into the table folder) while no write can ever reach its commit: the test
decides when to kill the process, without timing.
"""

import os
import sys
import threading
import time
import traceback

from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from assetlake_dagster.spark.session import build_spark_session
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

ROWS = 4000
PARTITIONS = 4
#: The value every row of the blocked write carries in ``name``.
NEW_NAME = "from the killed writer"
#: What the tests of a killed writer write before (PRIOR) and after it (NEXT), and expect.
SCHEMA = "id BIGINT, name STRING"
STRATEGIES = ("replace", "append", "merge", "history")
PRIOR = [(1, "ann"), (2, "bob"), (3, "cy")]
NEXT = [(1, "ann"), (2, "BOB"), (4, "di")]
#: Strategies whose blocked job is the one writing the table's data files.
WRITE_IN_THE_BLOCKED_JOB = ("replace", "append")
EXPECTED_AFTER_NEXT = {
    "replace": sorted(NEXT),
    "append": sorted(PRIOR + NEXT),
    "merge": [(1, "ann"), (2, "BOB"), (3, "cy"), (4, "di")],
    # (id, name, is_current): bob's version closed, BOB's opened; cy stays (soft delete).
    "history": [(1, "ann", True), (2, "BOB", True), (2, "bob", False), (3, "cy", True), (4, "di", True)],
}


def blocked_rows(spark, marker: str):
    """``id`` 1..ROWS and ``name``; evaluating the row ``id = ROWS`` never returns."""

    @F.udf(LongType())
    def block_on_last(value):
        if value == ROWS:
            open(marker, "w").close()
            time.sleep(24 * 3600)  # until SIGKILL
        return value

    rows = spark.range(1, ROWS + 1, numPartitions=PARTITIONS)
    return rows.select(block_on_last(rows["id"]).alias("id"), F.lit(NEW_NAME).alias("name"))


def table_path(lake: str, strategy: str) -> str:
    return os.path.join(lake, "s", strategy)


def target(lake: str, strategy: str, run_id: str) -> WriteTarget:
    kind = WriteStrategy(strategy)
    keyed = kind in (WriteStrategy.MERGE, WriteStrategy.HISTORY)
    return WriteTarget(
        uri=TableUri("s", strategy),
        path=table_path(lake, strategy),
        strategy=kind,
        stamp=CommitStamp(run_id=run_id, asset=f"s/{strategy}"),
        key=("id",) if keyed else (),
    )


def main(lake: str, markers: str, warehouse: str, *strategies: str) -> None:
    # A task slot per blocked task and per finishing one: every write gets to block.
    spark = build_spark_session(master=f"local[{2 * PARTITIONS * len(strategies)}]", warehouse_dir=warehouse)

    def write(strategy: str) -> None:
        try:
            rows = blocked_rows(spark, os.path.join(markers, strategy))
            strategy_for(WriteStrategy(strategy)).write(spark, rows, target(lake, strategy, "killed-run"))
            print("committed", strategy, flush=True)  # never reached: the test kills the process first
        except BaseException:  # the test then fails at once, with this traceback in the log
            traceback.print_exc()
            os._exit(1)

    print("writing", *strategies, flush=True)
    for strategy in strategies:
        threading.Thread(target=write, args=(strategy,), daemon=True).start()
    time.sleep(24 * 3600)


def through_engine(lake: str, markers: str, phase: str, *strategies: str) -> None:
    """The same writes through the lake's warm engine (an ``s3a://`` lake's one driver).

    ``phase`` ``prior`` or ``next`` writes :data:`PRIOR` or :data:`NEXT` to each table and
    returns; ``blocked`` starts the blocked writes, each in a session of its own, and waits
    for the test to kill the engine.
    """
    from assetlake_dagster.defs.resources import SparkDeltaResource

    resource = SparkDeltaResource(lake_root=lake)
    if phase in ("prior", "next"):
        spark = resource.new_session()
        rows = PRIOR if phase == "prior" else NEXT
        for strategy in strategies:
            df = spark.createDataFrame(rows, SCHEMA)
            result = strategy_for(WriteStrategy(strategy)).write(spark, df, target(lake, strategy, f"{phase}-run"))
            print("committed", strategy, result.version, flush=True)
        resource.release_session(spark)
        return

    def write(strategy: str) -> None:
        try:
            spark = resource.new_session()
            rows = blocked_rows(spark, os.path.join(markers, strategy))
            strategy_for(WriteStrategy(strategy)).write(spark, rows, target(lake, strategy, "killed-run"))
            print("committed", strategy, flush=True)  # never reached: the test kills the engine first
        except BaseException:  # noqa: BLE001 - the engine's death ends every write here
            traceback.print_exc()

    print("writing", *strategies, flush=True)
    for strategy in strategies:
        threading.Thread(target=write, args=(strategy,), daemon=True).start()
    time.sleep(24 * 3600)


if __name__ == "__main__":
    if sys.argv[1] == "--engine":
        through_engine(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
