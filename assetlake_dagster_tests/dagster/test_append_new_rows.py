"""Layer 5: ``append new_rows`` appends what its upstream gained since the last run (real runs, real feeds).

The fixture `projects/new_rows` appends a row-local SELECT over the external `raw/events`
(created with `delta.enableChangeDataFeed`). The first run appends the SELECT over all of it;
each later run appends the SELECT over the rows the upstream gained since the versions the
table's rows were read up to, which its commits carry, so a new Dagster instance goes on where
the table is. What the feed cannot serve fails the run and appends nothing.
"""

import os

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.run.change_feed import READ_KEY
from assetlake_dagster.run.decision import FORCE_TAG
from assetlake_dagster_tests.helpers import PROJECTS

PROJECT = os.path.join(PROJECTS, "new_rows")
LOG = dg.AssetKey(["staging", "events_log"])
SCHEMA = "event_id INT, kind STRING, amount DOUBLE"


def create_events(spark, path, rows, feed=True):
    spark.createDataFrame(rows, SCHEMA).write.format("delta").option(
        "delta.enableChangeDataFeed", str(feed).lower()
    ).save(path)


def run(defs, instance, raise_on_error=True, **kwargs):
    job = defs.resolve_implicit_job_def_def_for_assets([LOG])
    result = job.execute_in_process(instance=instance, asset_selection=[LOG], raise_on_error=False, **kwargs)
    if raise_on_error:
        assert result.success, [e.message for e in result.all_events if e.is_failure]
    return result


def appended(spark, root):
    """The table's rows without their load time, sorted."""
    df = spark.read.format("delta").load(os.path.join(root, "staging", "events_log"))
    return sorted(tuple(r) for r in df.select("event_id", "kind", "amount").collect())


def logs(instance, result):
    return [e.message for e in instance.all_logs(result.run_id) if e.message]


def versions(root):
    log = os.path.join(root, "staging", "events_log", "_delta_log")
    return len([f for f in os.listdir(log) if f.endswith(".json")])


@pytest.fixture
def lake(spark, lake_root):
    root = os.path.join(lake_root, "new_rows")
    events = os.path.join(root, "raw", "events")
    create_events(spark, events, [(1, "click", 1.0), (2, "view", None), (3, None, 2.0)])
    return root, f"delta.`{events}`"


def test_each_run_appends_only_what_the_upstream_gained(spark, lake):
    root, events = lake
    defs, instance = build_definitions(PROJECT, lake_root=root), dg.DagsterInstance.ephemeral()
    first = run(defs, instance)
    assert any("appends its SELECT over all of delta://raw/events (version 0): the table's first rows" in m
               for m in logs(instance, first))
    assert appended(spark, root) == [(1, "CLICK", 1.0), (2, "VIEW", None)]
    spark.sql(f"INSERT INTO {events} VALUES (4, 'buy', 9.5), (5, 'view', 1.0)")  # version 1
    spark.sql(f"UPDATE {events} SET amount = 3.0 WHERE event_id = 1")  # version 2: its new image is new
    spark.sql(f"DELETE FROM {events} WHERE event_id = 2")  # version 3: an append keeps what it appended
    second = run(defs, instance)
    assert any("appends the rows delta://raw/events gained (change feed versions 1..3: 3 rows gained, 2 lost)" in m
               for m in logs(instance, second))
    assert appended(spark, root) == [(1, "CLICK", 1.0), (1, "CLICK", 3.0), (2, "VIEW", None), (4, "BUY", 9.5), (5, "VIEW", 1.0)]
    record = instance.fetch_materializations(LOG, limit=1).records[0].asset_materialization
    assert record.metadata[READ_KEY].value["from_version"] == 0 and record.metadata[READ_KEY].value["to_version"] == 3
    # Nothing new: nothing appended, no version (even forced, or with its load time differing).
    before = versions(root)
    run(defs, instance, tags={FORCE_TAG: "true"})
    assert versions(root) == before and len(appended(spark, root)) == 5
    # A new Dagster instance (its records lost) goes on from the versions the table's commits carry.
    spark.sql(f"INSERT INTO {events} VALUES (6, 'click', 0.5)")
    fresh = dg.DagsterInstance.ephemeral()
    third = run(build_definitions(PROJECT, lake_root=root), fresh)
    assert any("change feed versions 4..4: 1 rows gained" in m for m in logs(fresh, third))
    assert [r for r in appended(spark, root) if r[0] == 6] == [(6, "CLICK", 0.5)] and len(appended(spark, root)) == 6


def test_what_the_feed_cannot_serve_fails_the_run_and_appends_nothing(spark, lake_root):
    root = os.path.join(lake_root, "no_feed")
    create_events(spark, os.path.join(root, "raw", "events"), [(1, "click", 1.0)], feed=False)
    defs, instance = build_definitions(PROJECT, lake_root=root), dg.DagsterInstance.ephemeral()
    result = run(defs, instance, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure).step_failure_data.error.message
    assert "'append new_rows' cannot read the rows its upstream gained: delta://raw/events keeps no change data feed" in failure
    assert "Nothing was appended" in failure
    assert not os.path.exists(os.path.join(root, "staging", "events_log"))
    # A table holding rows that no run of ours appended: reading the upstream whole would repeat them.
    other = os.path.join(lake_root, "foreign")
    create_events(spark, os.path.join(other, "raw", "events"), [(1, "click", 1.0)])
    spark.createDataFrame([(1, "CLICK", 1.0)], SCHEMA).selectExpr("*", "current_timestamp() AS loaded_at").write.format(
        "delta"
    ).save(os.path.join(other, "staging", "events_log"))
    result = run(build_definitions(PROJECT, lake_root=other), dg.DagsterInstance.ephemeral(), raise_on_error=False)
    failure = next(e for e in result.all_events if e.is_step_failure).step_failure_data.error.message
    assert "the table holds rows but no record of the version of delta://raw/events they were read up to" in failure
    assert appended(spark, other) == [(1, "CLICK", 1.0)]
