"""Layer 5: the watch sensor of external tables, ticked with ``build_sensor_context``.

The external tables are real Delta tables written by delta-rs (``deltalake``) under a lake
in ``tmp_path``, or in a bucket of a real S3 API (moto's server on loopback); the sensor
reads their logs. No test here starts Spark: building the definitions and evaluating the
sensor need none (the autouse ``no_spark`` fixture makes any attempt fail).
"""

import datetime as dt
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.defs.dagster_internals import DATA_VERSION_TAG
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.project.load import load_project
from assetlake_dagster.lake.storage import S3Settings
from assetlake_dagster.defs.translator import AssetlakeTranslator
from assetlake_dagster.defs.watch import WATCH_INTERVAL_ENV, WATCH_SENSOR_NAME, WATCH_TAG, build_watch_sensor
from assetlake_dagster_tests.s3_server import bucket_in_env

LANDING = dg.AssetKey(["landing", "orders"])
ORDERS = dg.AssetKey(["staging", "orders"])
ORDERS_3D = dg.AssetKey(["staging", "orders_3d"])
TOTAL = dg.AssetKey(["analytics", "order_total"])

DAILY = """-- materialize delta://staging/orders
-- partitioned daily start=2024-01-01 end=2024-02-01

SELECT order_id, amount FROM landing.orders WHERE order_date = {partition}
"""
WINDOWED = """-- materialize delta://staging/orders_3d
-- partitioned daily start=2024-01-01 end=2024-02-01
-- on delta://landing/orders window=3d

SELECT count(*) AS orders_3d FROM landing.orders
WHERE order_date > date_sub(CAST({partition} AS DATE), 3) AND order_date <= CAST({partition} AS DATE)
"""
TOTALS = """-- materialize delta://analytics/order_total

SELECT sum(amount) AS amount FROM landing.orders
"""


class Logs(logging.Handler):
    """The messages a tick logged, by level."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)

    def at(self, level):
        return [r.getMessage() for r in self.records if r.levelno == level]


@dataclass
class Tick:
    data: object  # SensorExecutionData
    logs: Logs

    @property
    def cursor(self):
        return self.data.cursor

    @property
    def requests(self):
        """{partition key or None: [asset keys]}, one entry per run request."""
        out = {}
        for r in self.data.run_requests:
            assert r.partition_key not in out, f"two requests for {r.partition_key}"
            out[r.partition_key] = sorted(k.to_user_string() for k in r.asset_selection)
        return out

    def keys_of(self, asset):
        return sorted(r.partition_key for r in self.data.run_requests if asset in r.asset_selection)

    @property
    def warnings(self):
        return self.logs.at(logging.WARNING)


class Watch:
    """A project folder, its lake, its definitions with the watch sensor, and an instance."""

    def __init__(self, root: Path, files: dict, *, lake_root=None, translator=None, **sensor_kwargs):
        self.project_dir = root / "project"
        self.project_dir.mkdir()
        for name, text in files.items():
            (self.project_dir / name).write_text(text)
        self.lake = lake_root or str(root / "lake")
        self.translator = translator
        self.instance = dg.DagsterInstance.ephemeral()
        self.sensor, self.defs = self._definitions(sensor_kwargs)

    def _definitions(self, sensor_kwargs):
        defs = build_definitions(self.project_dir, lake_root=self.lake, translator=self.translator)
        wired = [s for s in defs.sensors or [] if s.name == WATCH_SENSOR_NAME]
        if wired and not sensor_kwargs:  # once build_definitions adds the sensor itself
            return wired[0], defs
        project = load_project(self.project_dir)
        translator = AssetlakeTranslator()
        keys = {spec.uri: translator.get_asset_key(spec) for spec in project.assets}
        keys.update({uri: translator.get_external_asset_key(uri) for uri in project.external})
        sensor = build_watch_sensor(project, keys, Lake(self.lake), **sensor_kwargs)
        others = [s for s in defs.sensors or [] if s.name != WATCH_SENSOR_NAME]
        return sensor, build_definitions(self.project_dir, lake_root=self.lake, sensors=[*others, sensor])

    def table(self, schema="landing", table="orders"):
        return os.path.join(self.lake, schema, table)

    def tick(self, cursor=None, instance=None):
        """One evaluation, as the daemon does it: run requests resolved against the
        definitions, asset events stored on the instance."""
        instance = instance or self.instance
        context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=self.defs)
        logs = Logs()
        context.log.addHandler(logs)
        data = self.sensor.evaluate_tick(context)
        for event in data.asset_events:
            instance.report_runless_asset_event(event)
        return Tick(data, logs)


def write(path, *days, mode="append", partition_by=("order_date",), **kwargs):
    rows = pa.table(
        {
            "order_id": list(range(len(days))),
            "amount": [1.0] * len(days),
            "order_date": pa.array([dt.date.fromisoformat(d) for d in days]),
        }
    )
    write_deltalake(path, rows, mode=mode, partition_by=list(partition_by) or None, **kwargs)


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    """Building the definitions and ticking the sensor must not start Spark: any attempt fails."""
    import pyspark
    from pyspark.sql import SparkSession

    def refuse(*args, **kwargs):
        raise AssertionError("the watch sensor started Spark")

    monkeypatch.setattr(pyspark.SparkContext, "_ensure_initialized", refuse)
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", refuse)
    monkeypatch.setattr(SparkSession.Builder, "create", refuse)


@pytest.fixture
def watch(tmp_path):
    """Daily, windowed (3d) and unpartitioned readers of landing.orders, which has 1 commit."""
    w = Watch(tmp_path, {"orders.sql": DAILY, "orders_3d.sql": WINDOWED, "total.sql": TOTALS})
    write(w.table(), "2024-01-01")
    return w


def cursor_of(tick):
    return json.loads(tick.cursor)


def latest_data_version(instance, key):
    record = instance.get_latest_data_version_record(key)
    return record.event_log_entry.tags.get(DATA_VERSION_TAG) if record else None


# -- the first tick, new commits, no commits, restarts ----------------------------------------


def test_first_tick_records_the_baseline_and_requests_nothing(watch):
    write(watch.table(), "2024-01-02")

    first = watch.tick()

    assert first.requests == {}
    assert cursor_of(first) == {"delta://landing/orders": 1}
    assert first.data.skip_message == "delta://landing/orders: baseline at version 1"
    (observation,) = first.data.asset_events
    assert observation.asset_key == LANDING
    assert observation.tags == {DATA_VERSION_TAG: "1"}
    assert observation.metadata["delta_version"].value == 1
    assert observation.metadata["operation"].value == "WRITE"
    # What Dagster's freshness checks read (source_freshness): the commit's time, not the tick's.
    assert observation.metadata["dagster/last_updated_timestamp"] == observation.metadata["commit_timestamp"]
    # What the UI shows as the external asset's data version.
    assert latest_data_version(watch.instance, LANDING) == "1"
    assert any("version 1 is the baseline" in m for m in first.logs.at(logging.INFO))


def test_the_external_table_is_observable_and_observe_records_its_delta_version(watch):
    """Observable, so Dagster uses the observations as the table's data version (the asset
    page shows it; a reader that read it is not stale). An external asset that is not
    observable showed "INITIAL" however many versions the sensor recorded."""
    assert watch.defs.resolve_asset_graph().get(LANDING).is_observable
    write(watch.table(), "2024-01-02")
    # "Observe" in the UI (a run selecting the asset): it reads the log, no Spark either.
    job = watch.defs.resolve_implicit_job_def_def_for_assets([LANDING])
    result = job.execute_in_process(instance=watch.instance, asset_selection=[LANDING])
    assert result.success
    assert latest_data_version(watch.instance, LANDING) == "1"
    (observation,) = [e.asset_observation_data.asset_observation for e in result.get_asset_observation_events()]
    assert observation.metadata["delta_version"].value == 1

def test_a_new_commit_requests_exactly_the_partitions_it_changed(watch):
    baseline = watch.tick()
    write(watch.table(), "2024-01-05")

    tick = watch.tick(baseline.cursor)

    assert tick.keys_of(ORDERS) == ["2024-01-05"]
    # window=3d: the partitions whose 3-day window includes 2024-01-05.
    assert tick.keys_of(ORDERS_3D) == ["2024-01-05", "2024-01-06", "2024-01-07"]
    assert tick.keys_of(TOTAL) == [None]
    # Readers with the same partitions and key share one run.
    assert tick.requests == {
        None: ["analytics/order_total"],
        "2024-01-05": ["staging/orders", "staging/orders_3d"],
        "2024-01-06": ["staging/orders_3d"],
        "2024-01-07": ["staging/orders_3d"],
    }
    assert [r.run_key for r in tick.data.run_requests] == [
        "landing.orders@1|-|analytics/order_total",
        "landing.orders@1|2024-01-05|staging/orders,staging/orders_3d",
        "landing.orders@1|2024-01-06|staging/orders_3d",
        "landing.orders@1|2024-01-07|staging/orders_3d",
    ]
    assert {r.tags[WATCH_TAG] for r in tick.data.run_requests} == {"landing.orders@1"}
    assert cursor_of(tick) == {"delta://landing/orders": 1}
    (observation,) = tick.data.asset_events
    meta = {k: v.value for k, v in observation.metadata.items()}
    assert (meta["delta_version"], meta["versions"], meta["operations"], meta["files_added"]) == (1, "1", "WRITE", 1)
    assert meta["changed_partitions"] == "order_date=2024-01-05"
    # The table's columns, read from its log, as "Observe" records them.
    assert [c.name for c in meta["dagster/column_schema"].columns][:1] == ["order_id"]
    assert meta["dagster/table_name"] == "spark_catalog.landing.orders"
    assert latest_data_version(watch.instance, LANDING) == "1"
    # Dagster evaluating the same tick again asks for the same runs (their run keys dedupe).
    again = watch.tick(baseline.cursor)
    assert [r.run_key for r in again.data.run_requests] == [r.run_key for r in tick.data.run_requests]


def test_no_new_commit_requests_nothing(watch):
    baseline = watch.tick()
    tick = watch.tick(baseline.cursor)
    assert tick.requests == {}
    assert tick.data.asset_events == []
    assert tick.cursor == baseline.cursor
    assert tick.data.skip_message == "delta://landing/orders: no new commit (version 0)"


def test_a_restart_resumes_from_the_saved_cursor(watch):
    baseline = watch.tick()
    write(watch.table(), "2024-01-05")
    seen = watch.tick(baseline.cursor)
    assert seen.keys_of(ORDERS) == ["2024-01-05"]

    # A new daemon: a fresh instance and context, with only the saved cursor.
    fresh = dg.DagsterInstance.ephemeral()
    assert watch.tick(seen.cursor, instance=fresh).requests == {}
    write(watch.table(), "2024-01-09")
    after = watch.tick(seen.cursor, instance=fresh)
    assert after.keys_of(ORDERS) == ["2024-01-09"]


def test_two_commits_between_ticks_are_both_seen(watch):
    baseline = watch.tick()
    write(watch.table(), "2024-01-05")
    write(watch.table(), "2024-01-20", "2024-01-21")

    tick = watch.tick(baseline.cursor)

    assert tick.keys_of(ORDERS) == ["2024-01-05", "2024-01-20", "2024-01-21"]
    assert tick.keys_of(TOTAL) == [None]  # one run for both commits
    assert cursor_of(tick) == {"delta://landing/orders": 2}
    (observation,) = tick.data.asset_events
    assert observation.tags[DATA_VERSION_TAG] == "2"
    assert observation.metadata["versions"].value == "1..2"
    assert observation.metadata["files_added"].value == 3


def test_a_partition_replace_requests_the_replaced_partition(watch):
    baseline = watch.tick()
    write(watch.table(), "2024-01-01", mode="overwrite", predicate="order_date = '2024-01-01'")
    assert watch.tick(baseline.cursor).keys_of(ORDERS) == ["2024-01-01"]


def test_partitions_outside_the_range_are_dropped_and_logged(watch):
    baseline = watch.tick()
    write(watch.table(), "2023-12-31", "2024-01-30")

    tick = watch.tick(baseline.cursor)

    assert tick.keys_of(ORDERS) == ["2024-01-30"]
    # The window of 2024-01-01 and 01-02 includes 2023-12-31; 2024-02-01 is past end=.
    assert tick.keys_of(ORDERS_3D) == ["2024-01-01", "2024-01-02", "2024-01-30", "2024-01-31"]
    assert (
        "delta://landing/orders (commit 1) changed data of staging.orders partitions that do not exist: "
        "2023-12-31; not requested. staging.orders has partitions 2024-01-01 .. 2024-01-31"
    ) in tick.warnings[0]
    assert "staging.orders_3d partitions that do not exist: 2023-12-31, 2024-02-01" in tick.warnings[1]


def test_a_commit_that_changes_no_rows_requests_and_records_nothing(watch):
    """OPTIMIZE, an edited description or property: no run, and no new data version (an
    observation would be one, and eager automation downstream would run on it)."""
    write(watch.table(), "2024-01-01")
    baseline = watch.tick()
    table = DeltaTable(watch.table())
    table.optimize.compact()
    table.alter.set_table_description("Orders as they land.")
    table.alter.set_table_properties({"delta.logRetentionDuration": "interval 60 days"})

    tick = watch.tick(baseline.cursor)

    assert tick.requests == {}
    assert tick.data.asset_events == []
    assert cursor_of(tick) == {"delta://landing/orders": 4}
    assert latest_data_version(watch.instance, LANDING) == "1"
    # "Observe" agrees: the data version is the newest commit that changed rows.
    job = watch.defs.resolve_implicit_job_def_def_for_assets([LANDING])
    result = job.execute_in_process(instance=watch.instance, asset_selection=[LANDING])
    (observation,) = [e.asset_observation_data.asset_observation for e in result.get_asset_observation_events()]
    assert observation.metadata["delta_version"].value == 4
    assert latest_data_version(watch.instance, LANDING) == "1"
    # The next commit that changes rows is new data again.
    write(watch.table(), "2024-01-02")
    later = watch.tick(tick.cursor)
    (observation,) = later.data.asset_events
    assert observation.tags[DATA_VERSION_TAG] == "5"


# -- missing, unreadable, expired --------------------------------------------------------------


def test_a_missing_table_is_skipped_then_all_its_commits_are_seen(tmp_path):
    watch = Watch(tmp_path, {"orders.sql": DAILY, "total.sql": TOTALS})

    first = watch.tick()
    assert first.requests == {}
    assert cursor_of(first) == {"delta://landing/orders": -1}
    assert first.data.asset_events == []
    (warning,) = first.warnings
    assert warning.startswith(f"delta://landing/orders does not exist: no Delta table at {watch.table()}")
    assert warning.endswith(
        "Nothing is requested until it does; then every commit it has triggers its readers "
        "(analytics.order_total, staging.orders)."
    )
    still = watch.tick(first.cursor)
    assert still.warnings == [] and still.cursor == first.cursor  # said once, then at info level

    write(watch.table(), "2024-01-03")
    write(watch.table(), "2024-01-04")
    created = watch.tick(still.cursor)
    assert created.keys_of(ORDERS) == ["2024-01-03", "2024-01-04"]
    assert created.keys_of(TOTAL) == [None]
    assert cursor_of(created) == {"delta://landing/orders": 1}
    assert latest_data_version(watch.instance, LANDING) == "1"


def test_commits_removed_by_log_cleanup_are_reported_not_a_crash(watch):
    baseline = watch.tick()  # version 0
    write(watch.table(), "2024-01-05")
    write(watch.table(), "2024-01-06")
    DeltaTable(watch.table()).create_checkpoint()  # at version 2
    write(watch.table(), "2024-01-09")
    for version in (0, 1, 2):  # log cleanup, before the sensor read 1 and 2
        os.remove(os.path.join(watch.table(), "_delta_log", f"{version:020d}.json"))

    tick = watch.tick(baseline.cursor)

    # What is still readable is requested; the unpartitioned reader runs anyway.
    assert tick.keys_of(ORDERS) == ["2024-01-09"]
    assert tick.keys_of(TOTAL) == [None]
    assert cursor_of(tick) == {"delta://landing/orders": 3}
    (warning,) = tick.warnings
    assert warning.startswith(
        "delta://landing/orders: the commits 1..2 are no longer in its Delta log (log cleanup removed them "
        "after checkpoint 2), so the sensor cannot tell what they changed. Requested a run of "
        "analytics.order_total anyway. Partitions of staging.orders, staging.orders_3d are requested only "
        "for the commits still readable (3): backfill them"
    )
    (observation,) = tick.data.asset_events
    assert observation.metadata["expired_versions"].value == "1..2"
    assert observation.metadata["versions"].value == "1..3"


def test_an_unreadable_log_skips_that_table_and_keeps_its_cursor(tmp_path):
    other = TOTALS.replace("analytics/order_total", "analytics/customer_count").replace(
        "sum(amount) AS amount FROM landing.orders", "count(*) AS n FROM landing.customers"
    )
    watch = Watch(tmp_path, {"orders.sql": DAILY, "customers.sql": other})
    write(watch.table(), "2024-01-01")
    write(watch.table("landing", "customers"), "2024-01-01", partition_by=())
    baseline = watch.tick()
    write(watch.table(), "2024-01-05")
    write(watch.table("landing", "customers"), "2024-01-02", partition_by=())
    with open(os.path.join(watch.table(), "_delta_log", f"{1:020d}.json"), "a") as f:
        f.write("{damaged\n")

    tick = watch.tick(baseline.cursor)

    (warning,) = tick.warnings
    assert warning.startswith("delta://landing/orders skipped this tick (retried on the next): ")
    assert "00000000000000000001.json:" in warning and "The commit file is damaged" in warning
    assert tick.requests == {None: ["analytics/customer_count"]}  # the other table still counts
    assert cursor_of(tick) == {"delta://landing/customers": 1, "delta://landing/orders": 0}


# -- a lake in a bucket ----------------------------------------------------------------------

BUCKET = "lake"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """One S3 server for the module, its bucket, and the AWS variables pointing at it."""
    with bucket_in_env(str(tmp_path_factory.mktemp("s3")), BUCKET) as server:
        yield server


def s3_options():
    # delta-rs refuses to commit to S3 without a lock; one writer per test needs none.
    return {**S3Settings.from_env().storage_options(), "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}


def test_a_table_in_a_bucket_is_watched_and_observed(s3, tmp_path):
    watch = Watch(tmp_path, {"orders.sql": DAILY, "total.sql": TOTALS}, lake_root=f"s3a://{BUCKET}/{tmp_path.name}")
    table = watch.table()
    assert table == f"s3a://{BUCKET}/{tmp_path.name}/landing/orders"
    write(table, "2024-01-01", storage_options=s3_options())
    baseline = watch.tick()
    assert cursor_of(baseline) == {"delta://landing/orders": 0} and baseline.warnings == []
    write(table, "2024-01-05", storage_options=s3_options())

    tick = watch.tick(baseline.cursor)

    assert tick.requests == {None: ["analytics/order_total"], "2024-01-05": ["staging/orders"]}
    assert cursor_of(tick) == {"delta://landing/orders": 1}
    (observation,) = tick.data.asset_events
    meta = {k: v.value for k, v in observation.metadata.items()}
    assert (meta["delta_version"], meta["path"], meta["changed_partitions"]) == (1, table, "order_date=2024-01-05")
    assert [c.name for c in meta["dagster/column_schema"].columns] == ["order_id", "amount", "order_date"]
    # "Observe" in the UI reads the same log from the bucket, without Spark.
    write(table, "2024-01-06", storage_options=s3_options())
    job = watch.defs.resolve_implicit_job_def_def_for_assets([LANDING])
    result = job.execute_in_process(instance=watch.instance, asset_selection=[LANDING])
    assert result.success
    assert latest_data_version(watch.instance, LANDING) == "2"


def test_a_bucket_that_cannot_be_listed_skips_the_table_and_keeps_its_cursor(s3, tmp_path):
    watch = Watch(tmp_path, {"orders.sql": DAILY}, lake_root="s3a://no-such-bucket/lake")

    tick = watch.tick(json.dumps({"delta://landing/orders": 3}))

    assert tick.requests == {} and cursor_of(tick) == {"delta://landing/orders": 3}
    (warning,) = tick.warnings
    assert warning.startswith(
        "delta://landing/orders skipped this tick (retried on the next): cannot list the Delta log "
        "s3a://no-such-bucket/lake/landing/orders/_delta_log: "
    )
    assert "bucket does not exist" in warning


def test_a_cursor_it_did_not_write_starts_over(watch):
    tick = watch.tick("not json")
    assert tick.requests == {} and cursor_of(tick) == {"delta://landing/orders": 0}
    assert "is not the JSON object this sensor writes" in tick.warnings[0]


def test_a_re_created_table_counts_all_its_commits_as_new(watch):
    write(watch.table(), "2024-01-02")
    baseline = watch.tick()  # version 1
    shutil.rmtree(watch.table())
    write(watch.table(), "2024-01-08")  # version 0 of a new table

    tick = watch.tick(baseline.cursor)
    assert tick.keys_of(ORDERS) == ["2024-01-08"]
    assert "went back from version 1 to 0: the table was re-created" in tick.warnings[0]


# -- partitions that cannot be derived, other partition kinds ----------------------------------


def test_an_unpartitioned_landing_table_requests_only_unpartitioned_readers(tmp_path):
    watch = Watch(tmp_path, {"orders.sql": DAILY, "total.sql": TOTALS})
    write(watch.table(), "2024-01-01", partition_by=())
    baseline = watch.tick()
    write(watch.table(), "2024-01-05", partition_by=())

    tick = watch.tick(baseline.cursor)

    assert tick.requests == {None: ["analytics/order_total"]}
    (warning,) = tick.warnings
    assert warning == (
        "delta://landing/orders is not partitioned in Delta (the files of its commit 1 carry no "
        "partition values), so the sensor cannot tell which partitions of staging.orders changed, "
        "and requested none. Partition delta://landing/orders by a date column (partitionBy), or "
        "materialize the partitions of staging.orders that need it yourself (the UI, or "
        "`assetlake backfill staging/orders --from … --to …`)."
    )


def test_values_that_are_not_dates_are_explained(tmp_path):
    watch = Watch(tmp_path, {"orders.sql": DAILY})
    rows = pa.table({"region": ["eu"], "amount": [1.0]})
    write_deltalake(watch.table(), rows, partition_by=["region"])
    baseline = watch.tick()
    write_deltalake(watch.table(), rows, partition_by=["region"], mode="append")

    tick = watch.tick(baseline.cursor)

    assert tick.requests == {}
    (warning,) = tick.warnings
    assert warning.startswith(
        "the partition values region=eu of delta://landing/orders (commit 1) are neither dates (YYYY-MM-DD) "
        "nor timestamps (YYYY-MM-DD HH:MM[:SS]) nor partition keys of staging.orders, so the sensor "
        "requested nothing for them."
    )


def test_a_static_reader_gets_the_values_equal_to_its_keys(tmp_path):
    by_region = """-- materialize delta://staging/region_orders
-- partitioned static eu,us

SELECT amount FROM landing.orders WHERE region = {partition}
"""
    watch = Watch(tmp_path, {"regions.sql": by_region})
    rows = pa.table({"region": ["eu", "us", "apac"], "amount": [1.0, 2.0, 3.0]})
    write_deltalake(watch.table(), rows.slice(0, 1), partition_by=["region"])
    baseline = watch.tick()
    write_deltalake(watch.table(), rows.slice(1), partition_by=["region"], mode="append")

    tick = watch.tick(baseline.cursor)

    assert tick.requests == {"us": ["staging/region_orders"]}
    (warning,) = tick.warnings
    assert warning.startswith(
        "the partition values region=apac of delta://landing/orders (commit 1) match no partition key of "
        "staging.region_orders (eu, us)"
    )


def test_a_day_maps_to_every_hour_of_an_hourly_reader_in_its_time_zone(tmp_path):
    hourly = """-- materialize delta://staging/orders_hourly
-- partitioned hourly start=2024-01-01 end=2024-02-01 tz=Europe/Berlin

SELECT amount FROM landing.orders WHERE order_date = CAST({partition_start} AS DATE)
"""
    watch = Watch(tmp_path, {"hourly.sql": hourly})
    write(watch.table(), "2024-01-01")
    baseline = watch.tick()
    write(watch.table(), "2024-01-05")

    tick = watch.tick(baseline.cursor)
    assert tick.keys_of(dg.AssetKey(["staging", "orders_hourly"])) == [f"2024-01-05-{h:02d}:00" for h in range(24)]


def test_an_instant_maps_to_the_window_containing_it(tmp_path):
    monthly = """-- materialize delta://staging/events_monthly
-- partitioned monthly start=2024-01-01 end=2024-06-01

SELECT count(*) AS n FROM landing.events WHERE ts >= {partition_start} AND ts < {partition_end}
"""
    watch = Watch(tmp_path, {"monthly.sql": monthly})
    events = watch.table("landing", "events")

    def rows(*instants):
        return pa.table({"ts": pa.array(list(instants), pa.timestamp("us")), "n": [1] * len(instants)})

    write_deltalake(events, rows(dt.datetime(2024, 1, 1)), partition_by=["ts"])
    baseline = watch.tick()
    write_deltalake(events, rows(dt.datetime(2024, 3, 31, 23, 59), dt.datetime(2024, 4, 1)), partition_by=["ts"], mode="append")

    tick = watch.tick(baseline.cursor)
    assert tick.keys_of(dg.AssetKey(["staging", "events_monthly"])) == ["2024-03-01", "2024-04-01"]


# -- readers as the definitions make them: a translator's partitions, Python assets -----------


class DailyTotals(AssetlakeTranslator):
    """Partitions analytics.order_total (unpartitioned in its file) by day."""

    def get_partitions_def(self, spec):
        if spec.uri.table == "order_total":
            return dg.DailyPartitionsDefinition("2024-01-01", end_date="2024-02-01")
        return super().get_partitions_def(spec)


def test_a_translators_partitions_decide_what_the_sensor_requests(tmp_path):
    watch = Watch(tmp_path, {"total.sql": TOTALS}, translator=DailyTotals())
    write(watch.table(), "2024-01-01")
    baseline = watch.tick()
    write(watch.table(), "2024-01-05")

    tick = watch.tick(baseline.cursor)

    # The asset is daily in the definitions: a whole-table run of it is no valid request.
    assert tick.requests == {"2024-01-05": ["analytics/order_total"]}


PYTHON_READERS = '''
import dagster as dg

DAILY = dg.DailyPartitionsDefinition("2024-01-01", end_date="2024-02-01")


@dg.asset(key=["py", "daily_orders"], partitions_def=DAILY, ins={"orders": dg.AssetIn(key=["landing", "orders"])})
def daily_orders(orders):
    return orders


@dg.asset(key=["py", "order_count"], deps=[dg.AssetKey(["landing", "orders"])])
def order_count():
    return None


@dg.asset(key=["py", "payments"], deps=[dg.AssetKey(["landing", "payments"])])
def payments():
    return None


@dg.asset(key=["py", "unrelated"])
def unrelated():
    return None
'''


def test_python_assets_that_read_an_external_table_are_triggered(tmp_path):
    """Python assets declare their upstreams as ``ins=`` or ``deps=``; those reading an
    external table are its readers like the SQL files, whether SQL reads the table too
    (landing.orders) or only Python does (landing.payments)."""
    watch = Watch(tmp_path, {"orders.sql": DAILY, "readers.py": PYTHON_READERS})
    write(watch.table(), "2024-01-01")
    write(watch.table("landing", "payments"), "2024-01-01")
    baseline = watch.tick()
    assert cursor_of(baseline) == {"delta://landing/orders": 0, "delta://landing/payments": 0}
    write(watch.table(), "2024-01-05")
    write(watch.table("landing", "payments"), "2024-01-06")

    tick = watch.tick(baseline.cursor)

    assert tick.requests == {
        None: ["py/order_count", "py/payments"],
        "2024-01-05": ["py/daily_orders", "staging/orders"],
    }
    assert watch.defs.resolve_asset_graph().get(dg.AssetKey(["landing", "payments"])).is_observable


# -- building the sensor -----------------------------------------------------------------------


def test_no_external_table_means_no_sensor(tmp_path):
    (tmp_path / "a.sql").write_text("-- materialize delta://s/a\n\nSELECT 1 AS x\n")
    project = load_project(tmp_path)
    keys = {spec.uri: dg.AssetKey(spec.uri.asset_key_path) for spec in project.assets}
    assert build_watch_sensor(project, keys, Lake(str(tmp_path / "lake"))) is None


def test_sensor_settings(watch, monkeypatch):
    assert watch.sensor.name == WATCH_SENSOR_NAME
    assert watch.sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert watch.sensor.minimum_interval_seconds == 30
    project = load_project(watch.project_dir)
    keys = {uri: dg.AssetKey(uri.asset_key_path) for uri in [*project.external, *project.by_uri()]}
    lake = Lake(watch.lake)
    monkeypatch.setenv(WATCH_INTERVAL_ENV, "120")
    assert build_watch_sensor(project, keys, lake).minimum_interval_seconds == 120
    assert build_watch_sensor(project, keys, lake, minimum_interval_seconds=5).minimum_interval_seconds == 5
    monkeypatch.setenv(WATCH_INTERVAL_ENV, "30s")
    with pytest.raises(ConfigError) as caught:
        build_watch_sensor(project, keys, lake)
    assert str(caught.value) == (
        "ASSETLAKE_WATCH_INTERVAL_S='30s' is not a whole number of seconds. "
        "Use a number of seconds of at least 1 (the default is 30)."
    )
    stopped = build_watch_sensor(
        project, keys, lake, minimum_interval_seconds=5, default_status=dg.DefaultSensorStatus.STOPPED
    )
    assert stopped.default_status == dg.DefaultSensorStatus.STOPPED




def test_the_dagster_internals_the_sensor_uses():
    """Each non-public Dagster name the sensor relies on still means what it meant."""
    from assetlake_dagster.defs.dagster_internals import partition_keys_starting_in

    assert dg.AssetObservation(LANDING, tags={DATA_VERSION_TAG: "3"}).data_version == "3"
    daily = dg.DailyPartitionsDefinition(start_date="2024-01-10", end_date="2024-01-12")
    utc = dt.timezone.utc
    # Windows starting in the range, whatever the definition's own start and end.
    assert partition_keys_starting_in(daily, dt.datetime(2024, 1, 1, 12, tzinfo=utc), dt.datetime(2024, 1, 3, tzinfo=utc)) == [
        "2024-01-02"
    ]
    assert partition_keys_starting_in(daily, dt.datetime(2024, 1, 20, tzinfo=utc), dt.datetime(2024, 1, 21, 1, tzinfo=utc)) == [
        "2024-01-20",
        "2024-01-21",
    ]


def test_a_reader_in_a_publish_group_is_requested_with_its_whole_group(tmp_path):
    files = {
        "total.sql": "-- materialize delta://analytics/order_total\n-- publish_with totals\n\n"
        "SELECT sum(amount) AS total FROM landing.orders\n",
        "summary.sql": "-- materialize delta://analytics/summary\n-- publish_with totals\n\n"
        "SELECT total FROM analytics.order_total\n",
    }
    watch = Watch(tmp_path, files)
    write(watch.table(), "2024-01-01", partition_by=())
    baseline = watch.tick()
    write(watch.table(), "2024-01-05", partition_by=())

    tick = watch.tick(baseline.cursor)

    # summary does not read landing.orders; it is requested because its group runs whole.
    assert tick.requests == {None: ["analytics/order_total", "analytics/summary"]}
