"""A writer process for ``spark/test_dead_client_write``: one large append on the warm engine.

Run as ``python -m assetlake_dagster_tests.big_append_writer LAKE ROWS RUN_ID``. It opens a
session of its own on the lake's warm engine (``$ASSETLAKE_ENGINE_DIR``) and appends
``ROWS`` rows, each with a SHA-256 of its id (CPU work for the engine: the write runs for
seconds), to ``LAKE/s/big`` as one managed append stamped with ``RUN_ID``. It prints
``writing`` before the write and the result after it.
"""

import json
import os
import sys

from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

#: Spark partitions of the rows: a task runs for a few seconds; a cancelled one runs to its
#: partition's end (its loop does not check for the kill), so short tasks waste little.
PARTITIONS = 32


def table_path(lake: str) -> str:
    return os.path.join(lake, "s", "big")


def target(lake: str, run_id: str) -> WriteTarget:
    return WriteTarget(
        uri=TableUri("s", "big"),
        path=table_path(lake),
        strategy=WriteStrategy.APPEND,
        stamp=CommitStamp(run_id=run_id, asset="s/big"),
    )


def main(lake: str, rows: int, run_id: str) -> None:
    spark = SparkDeltaResource(lake_root=lake).new_session()
    df = spark.range(0, rows, numPartitions=PARTITIONS).selectExpr(
        "id", "sha2(cast(id AS STRING), 256) AS h"
    )
    print("writing", flush=True)
    result = strategy_for(WriteStrategy.APPEND).write(spark, df, target(lake, run_id))
    print(json.dumps({"committed": result.committed, "version": result.version}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
