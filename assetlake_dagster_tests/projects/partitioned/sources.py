"""Source rows for the partitioned fixture: events over ten January days, three regions.

The region names include injection payloads and a `${env:HOME}` that Spark's variable
substitution would expand in a session setting: they are static partition keys downstream.
"""

import datetime as dt

import dagster as dg

from assetlake_dagster.defs.write_contract import managed_write
from assetlake_dagster.defs.resources import SparkDeltaResource

REGIONS = ("eu", "x' OR '1'='1", "a\\' OR 1=1 --", "${env:HOME}")


def event_rows() -> list[tuple]:
    rows = []
    for day in range(10):
        date = dt.date(2024, 1, 1) + dt.timedelta(days=day)
        for i in range(day + 1):  # day N has N+1 events
            rows.append((day * 100 + i, date, REGIONS[i % len(REGIONS)], f"c{i % 2}", float(i + 1)))
    return rows


@dg.asset(key=["raw", "events"], metadata=managed_write("replace"))
def raw_events(spark: SparkDeltaResource):
    return spark.get_session().createDataFrame(
        event_rows(), "event_id long, day date, region string, customer string, amount double"
    )
