"""Layer 4/5: a naive timestamp becomes a Spark value as a wall time in the session's zone.

Seeds, the given rows of SQL unit tests, the pandas outputs of Python assets and a real
run's ``-- $name (timestamp)`` arguments load the same instants whatever the zone of the
Python process (a laptop in Tokyo, CI in UTC): the session's zone
(``spark.sql.session.timeZone``, UTC here) decides, as Spark's own ``CAST`` of text does
(docs/seeds.md, docs/sql-unit-tests.md, docs/python-assets.md, docs/annotations.md). Each test runs
with Python's local zone set to UTC and to Asia/Tokyo (the JVM and its session stay in UTC).
"""

import datetime as dt

import dagster as dg
import pandas as pd
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.run.asset_io import to_spark
from assetlake_dagster.lake.delta_sql import path_identifier
from assetlake_dagster.defs.run_config import sql_run_config
from assetlake_dagster.spark.python_values import in_session_zone, parse_time_zone
from assetlake_dagster.cli.sql_test_run import assert_sql_tests_pass
from assetlake_dagster_tests.helpers import python_local_zone

UTC = dt.timezone.utc
#: The wall times every test loads, and the instants the session's zone (UTC) makes of them.
WALL_TIMES = ["2024-01-02 09:30:00", "2024-07-01 23:59:59.5"]
INSTANTS = [dt.datetime(2024, 1, 2, 9, 30, tzinfo=UTC), dt.datetime(2024, 7, 1, 23, 59, 59, 500000, tzinfo=UTC)]
SEED = """\
-- seed delta://ref/events key=id
id,at
1,2024-01-02 09:30:00
2,2024-07-01T23:59:59.5
"""
SQL = """\
-- materialize delta://mart/recent
-- $since (timestamp) = 2024-01-02T00:00:00

SELECT id, at, CAST(at AS STRING) AS at_text FROM raw.events WHERE at >= :since
"""
TESTS = """\
tests:
  - name: inferred_rows
    given:
      raw.events:
        - {id: 1, at: 2024-01-02 09:30:00}
        - {id: 2, at: 2024-01-01 23:00:00}
    expect:
      - {id: 1, at: 2024-01-02 09:30:00, at_text: "2024-01-02 09:30:00"}
  - name: typed_rows_and_an_argument
    given:
      raw.events:
        columns: id INT, at TIMESTAMP
        rows:
          - {id: 1, at: 2024-07-01 23:59:59.5}
          - {id: 2, at: 2024-07-01 21:00:00}
    args: {since: 2024-07-01 22:00:00}
    expect:
      - {id: 1, at: 2024-07-01 23:59:59.5, at_text: "2024-07-01 23:59:59.5"}
  - name: an_aware_time_is_its_instant
    given:
      raw.events:
        - {id: 3, at: 2024-01-02T18:30:00+09:00}
    expect:
      - {id: 3, at: 2024-01-02T10:30:00+01:00, at_text: "2024-01-02 09:30:00"}
"""
#: A real run's timestamp arguments: one given in run config, a default, an aware value.
ARGUMENTS_SQL = """\
-- materialize delta://mart/bound
-- $since (timestamp)
-- $until (timestamp) = 2024-07-01T23:59:59.5
-- $aware (timestamp)

SELECT 1 AS id, :since AS at UNION ALL SELECT 2, :until UNION ALL SELECT 3, :aware
"""
#: A real run's partition window (Dagster's, in the partitions' zone: 10:00 in Berlin is 09:00 UTC).
HOURLY_SQL = """\
-- materialize delta://mart/hourly
-- partitioned hourly start=2024-01-01 tz=Europe/Berlin

SELECT 1 AS id, {partition_start} AS at UNION ALL SELECT 2, {partition_end}
"""


@pytest.fixture(params=["UTC", "Asia/Tokyo"])
def local_zone(request):
    """Python's local time zone set to each zone while the test runs (restored after)."""
    with python_local_zone(request.param) as zone:
        yield zone


def stored(spark, path):
    """``(id, the time as the session's text, the instant)`` of each row, by id."""
    rows = spark.sql(f"SELECT id, CAST(at AS STRING) AS text, unix_micros(at) AS micros FROM {path_identifier(path)} ORDER BY id").collect()
    return [(r.id, r.text, dt.datetime.fromtimestamp(r.micros / 1e6, UTC)) for r in rows]


def test_the_session_zone_is_utc_and_python_is_where_the_fixture_says(spark, local_zone):
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    noon = dt.datetime(2024, 1, 2, 12, 0)
    assert noon.astimezone(UTC).hour == {"UTC": 12, "Asia/Tokyo": 3}[local_zone]  # the fixture took effect


def test_a_seed_and_a_pandas_output_load_the_same_instants_in_every_local_zone(spark, lake_root, tmp_path, local_zone):
    project = tmp_path / "project"
    (project / "ref").mkdir(parents=True)
    (project / "ref" / "events.csv").write_text(SEED)

    @dg.asset(key=["raw", "pandas_events"])
    def pandas_events() -> pd.DataFrame:
        return pd.DataFrame({
            "id": [1, 2],
            "at": pd.to_datetime(WALL_TIMES, format="ISO8601"),  # datetime64, naive
            "boxed": pd.Series([dt.datetime(2024, 1, 2, 9, 30), None], dtype=object),  # Python datetimes
            "aware": pd.to_datetime(["2024-01-02T18:30:00+09:00", "2024-07-02T08:59:59.5+09:00"], format="ISO8601"),
        })

    defs = build_definitions(str(project), lake_root=lake_root, python_assets=[pandas_events])
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=dg.DagsterInstance.ephemeral()).success

    expected = [(1, WALL_TIMES[0], INSTANTS[0]), (2, "2024-07-01 23:59:59.5", INSTANTS[1])]
    assert stored(spark, f"{lake_root}/ref/events") == expected
    path = path_identifier(f"{lake_root}/raw/pandas_events")
    assert stored(spark, f"{lake_root}/raw/pandas_events") == expected
    boxed = spark.sql(f"SELECT CAST(boxed AS STRING) AS b, CAST(aware AS STRING) AS a FROM {path} ORDER BY id").collect()
    assert [(r.b, r.a) for r in boxed] == [(WALL_TIMES[0], WALL_TIMES[0]), (None, "2024-07-01 23:59:59.5")]


@pytest.mark.parametrize("arrow", ["true", "false"])
def test_pandas_reads_naive_times_in_the_session_zone_with_and_without_arrow(spark, local_zone, arrow):
    frame = pd.DataFrame({"id": [1, 2], "at": pd.to_datetime(WALL_TIMES, format="ISO8601")})
    setting = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(setting)
    spark.conf.set(setting, arrow)
    try:
        df = to_spark(spark, frame)
        rows = df.selectExpr("id", "CAST(at AS STRING) AS text", "unix_micros(at) AS micros").orderBy("id").collect()
    finally:
        spark.conf.set(setting, before)
    assert [(r.text, dt.datetime.fromtimestamp(r.micros / 1e6, UTC)) for r in rows] == [
        (WALL_TIMES[0], INSTANTS[0]), ("2024-07-01 23:59:59.5", INSTANTS[1]),
    ]
    assert frame["at"].dt.tz is None  # the caller's frame is not changed


def test_a_sql_unit_tests_given_rows_args_and_expected_rows_are_session_wall_times(spark, tmp_path, local_zone):
    (tmp_path / "recent.sql").write_text(SQL)
    (tmp_path / "recent.tests.yml").write_text(TESTS)
    results = assert_sql_tests_pass(str(tmp_path), spark)
    assert [r.case.name for r in results if r.passed] == [
        "inferred_rows", "typed_rows_and_an_argument", "an_aware_time_is_its_instant",
    ]


def test_a_real_runs_timestamp_arguments_and_partition_window_are_the_sql_unit_tests_instants(spark, lake_root, tmp_path, local_zone):
    """The values a SQL unit test binds (above) are bound the same in a real run: a naive
    argument, from run config or the default, is a wall time in the session's zone."""
    project = tmp_path / "project"
    (project / "mart").mkdir(parents=True)
    (project / "mart" / "bound.sql").write_text(ARGUMENTS_SQL)
    (project / "mart" / "hourly.sql").write_text(HOURLY_SQL)
    defs = build_definitions(str(project), lake_root=lake_root)
    instance = dg.DagsterInstance.ephemeral()

    bound = dg.AssetKey(["mart", "bound"])
    config = sql_run_config(defs, {bound: {"since": dt.datetime(2024, 1, 2, 9, 30), "aware": "2024-01-02T18:30:00+09:00"}})
    assert config["ops"]["sql__mart__bound"]["config"]["since"] == "2024-01-02T09:30:00"  # as the launchpad shows it
    job = defs.resolve_implicit_job_def_def_for_assets([bound])
    assert job.execute_in_process(instance=instance, asset_selection=[bound], run_config=config).success
    assert stored(spark, f"{lake_root}/mart/bound") == [
        (1, WALL_TIMES[0], INSTANTS[0]), (2, "2024-07-01 23:59:59.5", INSTANTS[1]), (3, WALL_TIMES[0], INSTANTS[0]),
    ]

    hourly = dg.AssetKey(["mart", "hourly"])
    job = defs.resolve_implicit_job_def_def_for_assets([hourly])
    assert job.execute_in_process(instance=instance, asset_selection=[hourly], partition_key="2024-01-02-10:00").success
    assert stored(spark, f"{lake_root}/mart/hourly") == [
        (1, "2024-01-02 09:00:00", dt.datetime(2024, 1, 2, 9, tzinfo=UTC)),
        (2, "2024-01-02 10:00:00", dt.datetime(2024, 1, 2, 10, tzinfo=UTC)),
    ]


def test_a_wall_time_session_keeps_naive_values_as_they_are(spark, tmp_path, local_zone):
    """Where ``TIMESTAMP`` means ``TIMESTAMP_NTZ``, a value has no zone to be read in."""
    spark.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
    try:
        df = to_spark(spark, pd.DataFrame({"at": pd.to_datetime(WALL_TIMES[:1], format="ISO8601")}))
        assert df.schema.simpleString() == "struct<at:timestamp_ntz>"
        assert [r[0] for r in df.selectExpr("CAST(at AS STRING)").collect()] == WALL_TIMES[:1]
        naive = {"since": dt.datetime(2024, 1, 2, 9, 30)}
        assert in_session_zone(spark, naive) == naive  # a SQL argument, kept as its wall time
    finally:
        spark.conf.unset("spark.sql.timestampType")


@pytest.mark.parametrize(
    "name, offset",
    [
        ("UTC", 0), ("Z", 0), ("+09:00", 9 * 60), ("-05:30", -330), ("GMT+9", 9 * 60), ("UTC-0800", -480),
        ("Asia/Tokyo", 9 * 60), ("PST", -8 * 60), ("EST", -5 * 60),  # Java's short names, as Spark takes them
    ],
)
def test_spark_zone_names_are_python_zones(name, offset):
    winter = dt.datetime(2024, 1, 2, 9, 30)
    assert winter.replace(tzinfo=parse_time_zone(name)).utcoffset() == dt.timedelta(minutes=offset)


def test_a_zone_python_does_not_know_is_refused_with_how_to_name_it():
    with pytest.raises(ConfigError, match=r"spark.sql.session.timeZone is 'Mars/Olympus', a zone Python does not know.*'\+09:00'"):
        parse_time_zone("Mars/Olympus")
