"""Deterministic synthetic source data for the demo: customers and orders.

Same seed, same rows, on every machine, so the demo's numbers are reproducible. One
source is returned as pandas and one as Spark, to show both go through the same
managed Delta write.
"""

import datetime as dt
import random
from typing import Optional

import dagster as dg

from assetlake_dagster.defs.write_contract import managed_write
from assetlake_dagster.defs.resources import SparkDeltaResource

SEED = 20240101
CUSTOMERS = 200
ORDERS = 5000
FIRST_DAY = dt.date(2024, 1, 1)
DAYS = 91  # Q1 2024: every daily partition of staging/orders (to 2024-03-31) has orders
TIERS = ("bronze", "silver", "gold")
COUNTRIES = ("DE", "FR", "NL", "US", "JP")
STATUSES = ("paid", "paid", "paid", "pending", "refunded")


def customer_rows(seed: int = SEED) -> "pandas.DataFrame":
    # Imported here, not at the top: every process that loads the code location (code
    # server, run and step workers, `dagster asset list`) would pay ~1.8 CPU-s for it.
    import pandas as pd

    rng = random.Random(seed)
    # When each customer's record last changed, all before the first order (2024-01-01):
    # dim_customer's versions start there (valid_from=updated_at). Its own generator, so the
    # other columns are what they were before it existed.
    changed = random.Random(seed + 2)
    last_changed = dt.datetime.combine(FIRST_DAY, dt.time()) - dt.timedelta(days=180)
    return pd.DataFrame(
        {
            "customer_id": list(range(1, CUSTOMERS + 1)),
            "name": [f"Customer {i:03d}" for i in range(1, CUSTOMERS + 1)],
            "tier": [rng.choice(TIERS) for _ in range(CUSTOMERS)],
            "country": [rng.choice(COUNTRIES) for _ in range(CUSTOMERS)],
            # A few customers never gave an email: NULLs must survive the pandas path.
            "email": [None if i % 17 == 0 else f"c{i}@example.com" for i in range(1, CUSTOMERS + 1)],
            "updated_at": [last_changed + dt.timedelta(minutes=changed.randrange(180 * 24 * 60)) for _ in range(CUSTOMERS)],
        }
    )


def order_rows(seed: int = SEED) -> list[tuple]:
    rng = random.Random(seed + 1)
    rows = []
    for order_id in range(1, ORDERS + 1):
        day = FIRST_DAY + dt.timedelta(days=rng.randrange(DAYS))
        at = dt.datetime.combine(day, dt.time(rng.randrange(24), rng.randrange(60)))
        rows.append(
            (
                order_id,
                rng.randrange(1, CUSTOMERS + 1),
                round(rng.uniform(5, 500), 2),
                rng.choice(STATUSES),
                at,
            )
        )
    return rows


class RawCustomersConfig(dg.Config):
    """Run config of raw/customers, to watch a data test block a bad write."""

    #: Append a second row for this customer_id (a duplicate key downstream).
    duplicate_customer_id: Optional[int] = None


@dg.asset(
    key=["raw", "customers"],
    group_name="raw",
    kinds={"python", "delta"},
    description="Synthetic customers (pandas DataFrame, managed replace).",
    metadata=managed_write("replace"),
)
def raw_customers(config: RawCustomersConfig):  # a pandas DataFrame (pandas imported on use)
    import pandas as pd

    rows = customer_rows()
    if config.duplicate_customer_id is not None:
        rows = pd.concat([rows, rows[rows.customer_id == config.duplicate_customer_id]], ignore_index=True)
    return rows


@dg.asset(
    key=["raw", "orders"],
    group_name="raw",
    kinds={"python", "spark", "delta"},
    description="Synthetic orders (Spark DataFrame, managed replace).",
    metadata=managed_write("replace"),
)
def raw_orders(spark: SparkDeltaResource):
    session = spark.get_session()
    return session.createDataFrame(
        order_rows(),
        "order_id BIGINT, customer_id BIGINT, amount DOUBLE, status STRING, ordered_at TIMESTAMP",
    )
