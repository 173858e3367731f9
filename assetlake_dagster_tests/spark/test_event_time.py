"""Layer 4: ``event_time=`` places each row in its time window exactly as Dagster does
(Dagster's own ``get_partition_key_for_timestamp`` is the reference), in any zone and
whatever the session's zone; a row outside the run's partitions fails the write."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from pyspark.errors import PySparkException

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.defs.partitions import event_time_range, partitions_definition, with_event_time_partitions
from assetlake_dagster.defs.partitions import PartitionSlice
from assetlake_dagster.spec import PartitionKind, PartitionSpec

UTC = dt.timezone.utc
#: Instants around midnights, month and week ends, and the 2024 DST changes of New York
#: (03-10, 11-03) and Lord Howe (half-hour shift, 04-07 and 10-06).
INSTANTS = [
    dt.datetime(2024, 1, 1, 0, 0, tzinfo=UTC),
    dt.datetime(2024, 1, 1, 4, 59, 59, tzinfo=UTC),
    dt.datetime(2024, 1, 1, 5, 0, tzinfo=UTC),
    dt.datetime(2024, 1, 6, 23, 59, tzinfo=UTC),
    dt.datetime(2024, 1, 7, 0, 0, 1, tzinfo=UTC),
    dt.datetime(2024, 1, 31, 23, 30, tzinfo=UTC),
    dt.datetime(2024, 2, 29, 18, 45, tzinfo=UTC),
    dt.datetime(2024, 3, 10, 6, 59, tzinfo=UTC),
    dt.datetime(2024, 3, 10, 7, 0, tzinfo=UTC),
    dt.datetime(2024, 4, 6, 14, 45, tzinfo=UTC),
    dt.datetime(2024, 4, 6, 15, 15, tzinfo=UTC),
    dt.datetime(2024, 10, 5, 15, 29, tzinfo=UTC),
    dt.datetime(2024, 11, 3, 5, 30, tzinfo=UTC),
    dt.datetime(2024, 11, 3, 6, 30, tzinfo=UTC),
    dt.datetime(2024, 12, 31, 23, 59, 59, tzinfo=UTC),
]
ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
KINDS = [PartitionKind.HOURLY, PartitionKind.DAILY, PartitionKind.WEEKLY, PartitionKind.MONTHLY]


def _spec(kind, zone, column="t"):
    return PartitionSpec(kind, start="2023-12-01", end="2025-02-01", timezone=zone, event_time=column)


# Hourly windows take event_time= in UTC only (a load error otherwise): Dagster names the
# repeated hour of a daylight-saving change apart ('2024-11-03-01:00-0500').
@pytest.mark.parametrize(
    "kind, zone", [(PartitionKind.HOURLY, "UTC")] + [(kind, zone) for kind in KINDS[1:] for zone in ZONES], ids=str
)
def test_a_timestamp_lands_in_the_window_dagster_gives_it(spark, kind, zone):
    spec = _spec(kind, zone)
    reference = partitions_definition(spec)
    expected = [reference.get_partition_key_for_timestamp(t.timestamp()) for t in INSTANTS]
    rows = spark.createDataFrame([(t,) for t in INSTANTS], "t TIMESTAMP")
    placed = with_event_time_partitions(spark, rows, spec, sorted(set(expected)), "f.sql:2")
    assert [r._partition for r in placed.collect()] == expected


def test_the_sessions_own_zone_does_not_move_a_row(spark):
    spec = _spec(PartitionKind.DAILY, "America/New_York")
    reference = partitions_definition(spec)
    expected = [reference.get_partition_key_for_timestamp(t.timestamp()) for t in INSTANTS]
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        rows = spark.createDataFrame([(t,) for t in INSTANTS], "t TIMESTAMP")
        placed = with_event_time_partitions(spark, rows, spec, sorted(set(expected)), "f.sql:2")
        assert [r._partition for r in placed.collect()] == expected
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


@pytest.mark.parametrize("kind", KINDS[1:], ids=lambda k: k.value)
def test_a_date_is_the_zones_local_day(spark, kind):
    spec = _spec(kind, "Asia/Kolkata", column="d")
    reference = partitions_definition(spec)
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 6), dt.date(2024, 1, 7), dt.date(2024, 2, 29), dt.date(2024, 12, 31)]
    zone = reference.timezone
    expected = [
        reference.get_partition_key_for_timestamp(dt.datetime.combine(d, dt.time(), tzinfo=ZoneInfo(zone)).timestamp())
        for d in days
    ]
    rows = spark.createDataFrame([(d,) for d in days], "d DATE")
    placed = with_event_time_partitions(spark, rows, spec, sorted(set(expected)), "f.sql:2")
    assert [r._partition for r in placed.collect()] == expected


def test_a_row_outside_the_runs_partitions_fails_with_its_value(spark):
    spec = _spec(PartitionKind.DAILY, "UTC")
    rows = spark.createDataFrame([(INSTANTS[0],), (INSTANTS[6],)], "t TIMESTAMP")
    placed = with_event_time_partitions(spark, rows, spec, ["2024-01-01"], "f.sql:2")
    with pytest.raises(PySparkException, match=r"f\.sql:2: a row's t \(2024-02-29 18:45:00\) is outside this run's partitions \(2024-01-01\)"):
        placed.collect()
    nulls = with_event_time_partitions(spark, spark.createDataFrame([(None,)], "t TIMESTAMP"), spec, ["2024-01-01"], "f.sql:2")
    with pytest.raises(PySparkException, match=r"a row's t \(NULL\) is outside"):
        nulls.collect()


@pytest.mark.parametrize(
    "kind, schema, message",
    [
        (PartitionKind.DAILY, "t STRING", "f.sql:2: the event_time column 't' is STRING; daily partitions need a DATE or TIMESTAMP. Cast it in the SELECT."),
        (PartitionKind.HOURLY, "t DATE", "f.sql:2: the event_time column 't' is DATE; hourly partitions need a TIMESTAMP. Cast it in the SELECT."),
        (PartitionKind.DAILY, "x DATE", "f.sql:2: the event_time column 't' is not among the SELECT's columns. Project it."),
    ],
)
def test_an_event_time_of_the_wrong_type_is_a_clear_error(spark, kind, schema, message):
    rows = spark.createDataFrame([], schema)
    with pytest.raises(ConfigError) as err:
        with_event_time_partitions(spark, rows, _spec(kind, "UTC"), ["2024-01-01"], "f.sql:2")
    assert str(err.value.description) == message


def test_the_range_of_a_batch_spans_its_windows():
    first = PartitionSlice("2024-01-01", dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 2, tzinfo=UTC))
    last = PartitionSlice("2024-01-03", dt.datetime(2024, 1, 3, tzinfo=UTC), dt.datetime(2024, 1, 4, tzinfo=UTC))
    assert event_time_range([first, last]) == {"partition_start": first.start, "partition_end": last.end}


def test_a_quarter_with_event_time_is_one_query_with_one_scan(spark, lake_root):
    """91 daily partitions: one SELECT over the range (no union), the source scanned once,
    each row in its own day; without event_time= the same batch is a union of 91 scans."""
    from assetlake_dagster.lake.root import Lake
    from assetlake_dagster.lake.registration import register_table
    from assetlake_dagster.project.load import parse_file
    from assetlake_dagster.spec import TableUri
    from assetlake_dagster.run.sql_runner import run_sql_slices

    lake = Lake(lake_root)
    source = TableUri("raw", "events")
    start = dt.datetime(2024, 1, 1, tzinfo=UTC)
    rows = [(i, start + dt.timedelta(hours=5 * i)) for i in range(91 * 24 // 5)]
    spark.createDataFrame(rows, "id INT, at TIMESTAMP").write.format("delta").save(lake.table_path(source))
    register_table(spark, lake, source)
    slices = [
        PartitionSlice(day.isoformat(), dt.datetime.combine(day, dt.time(), UTC), dt.datetime.combine(day, dt.time(), UTC) + dt.timedelta(days=1))
        for day in (dt.date(2024, 1, 1) + dt.timedelta(days=n) for n in range(91))
    ]
    body = "\n\nSELECT id, at FROM raw.events WHERE at >= {partition_start} AND at < {partition_end}\n"
    scans = {}
    for option in ("event_time=at ", ""):
        spec, problems = parse_file("e.sql", f"-- materialize delta://s/e\n-- partitioned daily start=2024-01-01 {option}batch=91{body}")
        assert spec is not None, problems
        df = run_sql_slices(spark, spec, {}, slices)
        plan = df._jdf.queryExecution().optimizedPlan().toString()
        scans[option] = plan.count("Relation ")
        got = sorted((r.id, r._partition) for r in df.collect())
        assert got == sorted((i, at.date().isoformat()) for i, at in rows)
    assert scans == {"event_time=at ": 1, "": 91}
