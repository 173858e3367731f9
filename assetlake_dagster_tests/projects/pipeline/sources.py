"""A Python source asset for the end-to-end fixture: pandas with NULLs of every type."""

import datetime as dt

import dagster as dg
import pandas as pd

from assetlake_dagster.defs.write_contract import managed_write

ROWS = {
    "id": pd.array([1, 2, 3], dtype="Int64"),
    "name": pd.array(["ann", None, "cy"], dtype="string"),
    "score": [1.5, None, 3.0],
    "active": pd.array([True, None, False], dtype="boolean"),
    "born": [dt.date(1990, 1, 1), None, dt.date(2000, 2, 29)],
    "seen_at": pd.to_datetime(["2024-01-01 10:00:00", None, "2024-03-01 00:00:01"]),
}


@dg.asset(key=["src", "people"], metadata=managed_write("merge", key=["id"]))
def people() -> pd.DataFrame:
    return pd.DataFrame(ROWS)
