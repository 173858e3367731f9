"""The demo's landing table: payments dropped by a (simulated) payment provider.

``delta://landing/payments`` is produced outside the project, as landing tables are: no
SQL file writes it, so the demo reads it as an external asset that the watch sensor
observes (:mod:`assetlake_dagster.defs.watch`). Each day of payments is one plain Delta append,
partitioned by ``payment_date``, the way an ingestion tool would write it::

    .venv/bin/assetlake demo land            # the day after the latest landed day
    .venv/bin/assetlake demo land --day 2024-03-05

With ``dagster dev`` running, the sensor sees the new commit, requests ``staging/payments``
for exactly that day, and the eager ``analytics/payment_reconciliation`` follows.

``seed`` lands January and February on a lake that has no landing table yet (``scripts/
dev.sh`` and the UI smoke call it), so that "Materialize all" finds the table; March is
left for ``land`` to drop day by day.

Payments are derived from the demo's synthetic orders (``demo/project/sources.py``): one per
paid order, on its order day, so the same day always lands the same rows.
"""

import datetime as dt
from typing import Any, Optional

import pandas as pd

from assetlake_dagster.demo.project.sources import DAYS, FIRST_DAY, order_rows
from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import TableUri
from assetlake_dagster.writes.slices import OPTIMIZED_WRITE

#: The landing table and its partition column.
LANDING_TABLE = TableUri("landing", "payments")
PARTITION_COLUMN = "payment_date"
#: Days ``seed`` lands: January and February 2024 (March is landed day by day).
SEED_DAYS = (dt.date(2024, 1, 1), dt.date(2024, 2, 29))
_SCHEMA = "payment_id BIGINT, order_id BIGINT, amount DOUBLE, paid_at TIMESTAMP, payment_date DATE"


def demo_days() -> tuple[dt.date, dt.date]:
    """The first and last day that have orders (and so payments) in the demo."""
    return FIRST_DAY, FIRST_DAY + dt.timedelta(days=DAYS - 1)


def payment_rows(first: dt.date, last: dt.date) -> pd.DataFrame:
    """The payments of the paid orders ordered from ``first`` to ``last`` (inclusive).

    Example:
        >>> rows = payment_rows(dt.date(2024, 3, 5), dt.date(2024, 3, 5))
        >>> sorted(set(rows.payment_date))
        [datetime.date(2024, 3, 5)]
    """
    rows = [
        (order_id, order_id, amount, ordered_at + dt.timedelta(minutes=5), ordered_at.date())
        for order_id, _customer, amount, status, ordered_at in order_rows()
        if status == "paid" and first <= ordered_at.date() <= last
    ]
    return pd.DataFrame(rows, columns=["payment_id", "order_id", "amount", "paid_at", PARTITION_COLUMN])


def landing_exists(lake: Lake) -> bool:
    """Whether the landing table has a Delta log (no Spark needed; local disk or a bucket)."""
    return lake.files.has_delta_log(lake.table_path(LANDING_TABLE))


def landed_days(spark: Any, lake: Lake) -> set[dt.date]:
    """The days the landing table holds (empty when it does not exist yet)."""
    if not landing_exists(lake):
        return set()
    frame = spark.read.format("delta").load(lake.table_path(LANDING_TABLE))
    return {row[0] for row in frame.select(PARTITION_COLUMN).distinct().collect()}


def _append(spark: Any, lake: Lake, rows: pd.DataFrame) -> None:
    frame = spark.createDataFrame(rows, _SCHEMA)
    # One file per landed day, as an ingestion tool writes it (not one per day and task).
    writer = frame.write.format("delta").mode("append").partitionBy(PARTITION_COLUMN).option(OPTIMIZED_WRITE, "true")
    writer.save(lake.table_path(LANDING_TABLE))


def seed(spark: Any, lake: Lake) -> Optional[int]:
    """Land :data:`SEED_DAYS` in one commit when the landing table does not exist yet.

    Returns:
        The number of rows landed, or None when the table already existed (nothing done).
    """
    if landing_exists(lake):
        return None
    rows = payment_rows(*SEED_DAYS)
    _append(spark, lake, rows)
    return len(rows)


def land(spark: Any, lake: Lake, day: Optional[dt.date] = None) -> tuple[dt.date, int]:
    """Append one day of payments to the landing table, as one Delta commit.

    Args:
        spark: a Spark session (the warm engine's, or any).
        lake: the lake holding ``landing/payments``.
        day: the day to land (default: the day after the latest landed day, or the demo's
            first day on an empty lake).

    Returns:
        The day landed and its number of rows.

    Raises:
        AssetlakeError: the day already landed (landing it twice would duplicate its
            payments), or it is outside the demo's orders.
    """
    first, last = demo_days()
    landed = landed_days(spark, lake)
    if day is None:
        day = max(landed) + dt.timedelta(days=1) if landed else first
        if day > last:
            raise AssetlakeError(
                f"every day of the demo's orders ({first} to {last}) has landed in {LANDING_TABLE}. "
                f"To start over, delete {lake.table_path(LANDING_TABLE)} and run `assetlake demo land --seed`."
            )
    if not first <= day <= last:
        raise AssetlakeError(f"{day} has no demo orders. Pick a day from {first} to {last}.")
    if day in landed:
        raise AssetlakeError(
            f"{day} has already landed in {LANDING_TABLE}; landing it again would duplicate its payments. "
            f"Pick another day, e.g. {max(landed) + dt.timedelta(days=1)}."
        )
    rows = payment_rows(day, day)
    _append(spark, lake, rows)
    return day, len(rows)
