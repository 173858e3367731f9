"""Layer 5: `assetlake backfill --arg` binds the value in the batch runs (one Spark test, one run).

The errors of `--arg`, `sql_run_config` and Dagster's own run config check are unit tests
(`unit/test_run_config.py`): none of them needs Spark.
"""

import datetime as dt
import os

import dagster as dg

from assetlake_dagster.lake.delta_sql import read
from assetlake_dagster_tests.helpers import PROJECTS, run_cli

PROJECT = os.path.join(PROJECTS, "arguments")
#: (event_id, day, amount): 2024-01-01 has amounts 1, 2, 3; 2024-01-02 has 1, 2; 2024-01-03 has 5.
EVENTS = [(1, 1, 1.0), (2, 1, 2.0), (3, 1, 3.0), (4, 2, 1.0), (5, 2, 2.0), (6, 3, 5.0)]


def test_backfill_arg_binds_the_value(spark, tmp_path, monkeypatch, capsys):
    home, lake = tmp_path / "home", str(tmp_path / "lake")
    home.mkdir()
    rows = [(event_id, dt.date(2024, 1, day), amount) for event_id, day, amount in EVENTS]
    spark.createDataFrame(rows, "event_id long, day date, amount double").write.format("delta").save(
        os.path.join(lake, "raw", "events")
    )
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("ASSETLAKE_PROJECT_DIR", PROJECT)
    monkeypatch.setenv("ASSETLAKE_LAKE_ROOT", lake)
    code, out, err = run_cli(capsys, "backfill", "mart/big_events", "--arg", "min_amount=2")
    assert code == 0, err
    assert "3 partitions in 1 run" in out and "1 run succeeded, 0 failed" in out  # batch=3
    table = read(spark, os.path.join(lake, "mart", "big_events"))
    assert sorted(r.event_id for r in table.collect()) == [2, 3, 5, 6]  # amount >= 2 on each day
    with dg.DagsterInstance.from_config(str(home)) as instance:
        configs = [run.run_config for run in instance.get_runs()]
    assert configs == [{"ops": {"sql__mart__big_events": {"config": {"min_amount": 2.0}}}}]
