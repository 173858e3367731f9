"""A writer process for ``test_kill_writer``: one managed write that never finishes.

Run as ``python -m assetlake_dagster_tests.blocked_writer STRATEGY TABLE_PATH MARKER WAREHOUSE``.
It opens its own Spark session (its own JVM) on the same lake as the test and starts one
managed write of :data:`ROWS` rows in :data:`PARTITIONS` Spark partitions. A Python UDF
lets every row through except the last one: on it, the UDF creates ``MARKER`` and then
sleeps until the process is killed. So the other partitions' tasks complete (for
replace and append, they write their data files into the table folder) while the write
as a whole can never reach its commit: the test decides when to kill it, without timing.
"""

import sys
import time

from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from assetlake_dagster.spark_session import build_spark_session
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

ROWS = 4000
PARTITIONS = 4
#: The value every row of the blocked write carries in ``name``.
NEW_NAME = "from the killed writer"


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


def main(strategy: str, path: str, marker: str, warehouse: str) -> None:
    spark = build_spark_session(master="local[2]", warehouse_dir=warehouse)
    kind = WriteStrategy(strategy)
    keyed = kind in (WriteStrategy.MERGE, WriteStrategy.HISTORY)
    target = WriteTarget(
        uri=TableUri("s", "t"),
        path=path,
        strategy=kind,
        stamp=CommitStamp(run_id="killed-run", asset="s/t"),
        key=("id",) if keyed else (),
    )
    print("writing", flush=True)
    strategy_for(kind).write(spark, blocked_rows(spark, marker), target)
    print("committed", flush=True)  # never reached: the test kills the process first


if __name__ == "__main__":
    main(*sys.argv[1:])
