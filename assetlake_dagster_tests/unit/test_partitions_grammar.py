"""Layer 1-2: the `-- partitioned` line, `window=`, partition placeholders and their checks."""

import datetime as dt

import dagster as dg
import pytest

from assetlake_dagster.annotations import parse_header
from assetlake_dagster.errors import SourceText
from assetlake_dagster.defs.partitions import PartitionSlice, partition_mapping, partitions_definition
from assetlake_dagster.project.load import parse_file
from assetlake_dagster.spec import PartitionKind, PartitionSpec, TableUri, UpstreamSpec, WindowSpec
from assetlake_dagster.sql.analysis import replace_placeholders
from assetlake_dagster.writes.slices import describe_slice, partition_literal, partition_predicate

M = "-- materialize delta://a/t\n"


def _partitions(line):
    header, problems = parse_header(SourceText.of("f.sql", M + line + "\n"))
    assert [p.render() for p in problems] == []
    return header.partitions


def _errors(text):
    _, problems = parse_header(SourceText.of("f.sql", text))
    return [p.render().splitlines()[0] for p in problems]


@pytest.mark.parametrize(
    "line, expected",
    [
        pytest.param(
            "-- partitioned daily start=2024-01-01",
            PartitionSpec(PartitionKind.DAILY, start="2024-01-01"),
            id="daily",
        ),
        pytest.param(
            "-- partitioned hourly start=2024-01-01T06:00 end=2024-01-02 tz=Europe/Berlin batch=24",
            PartitionSpec(PartitionKind.HOURLY, "2024-01-01T06:00", "2024-01-02", "Europe/Berlin", batch_size=24),
            id="hourly-all-options",
        ),
        pytest.param(
            "-- partitioned weekly start=2024-01-01", PartitionSpec(PartitionKind.WEEKLY, start="2024-01-01"), id="weekly"
        ),
        pytest.param(
            "-- partitioned daily start=2024-01-01 tz=Europe/Berlin event_time=paid_at batch=31",
            PartitionSpec(PartitionKind.DAILY, start="2024-01-01", timezone="Europe/Berlin", batch_size=31, event_time="paid_at"),
            id="daily-event-time",
        ),
        pytest.param(
            "-- partitioned monthly start=2024-01-01 end=2025-01-01",
            PartitionSpec(PartitionKind.MONTHLY, start="2024-01-01", end="2025-01-01"),
            id="monthly",
        ),
        pytest.param(
            "-- partitioned static eu, us ,x' OR '1'='1",
            PartitionSpec(PartitionKind.STATIC, values=("eu", "us", "x' OR '1'='1")),
            id="static-keys-kept-byte-for-byte",
        ),
        pytest.param(
            "-- partitioned static a,b batch=1",
            PartitionSpec(PartitionKind.STATIC, values=("a", "b"), batch_size=1),
            id="static-batch",
        ),
        pytest.param(
            "-- partitioned dynamic tenants", PartitionSpec(PartitionKind.DYNAMIC, name="tenants"), id="dynamic"
        ),
    ],
)
def test_valid_partitioned_lines(line, expected):
    assert _partitions(line) == expected


@pytest.mark.parametrize(
    "line, expected",
    [
        pytest.param(
            "-- partitioned", "f.sql:2:4: '-- partitioned' needs a kind. Write '-- partitioned daily|hourly|", id="no-kind"
        ),
        pytest.param(
            "-- partitioned daly start=2024-01-01",
            "f.sql:2:16: unknown partition kind 'daly'. Did you mean 'daily'?",
            id="unknown-kind",
        ),
        pytest.param(
            "-- partitioned daily",
            "f.sql:2:4: 'partitioned daily' needs start=. Add the first partition's date, e.g. 'start=2024-01-01'.",
            id="missing-start",
        ),
        pytest.param(
            "-- partitioned daily start=2024-02-30",
            "f.sql:2:22: start= '2024-02-30' is not a date. Write start=YYYY-MM-DD, or start=YYYY-MM-DDTHH:MM for an hour.",
            id="bad-date",
        ),
        pytest.param(
            "-- partitioned daily start=2024-01-05 end=2024-01-01",
            "f.sql:2:39: end= must be after start=. end= is exclusive: the first instant not covered.",
            id="end-before-start",
        ),
        pytest.param(
            "-- partitioned daily start=2024-01-01 tz=Mars/Base",
            "f.sql:2:39: unknown time zone 'Mars/Base'. Use an IANA name, e.g. 'tz=Europe/Berlin' or 'tz=UTC'.",
            id="bad-tz",
        ),
        pytest.param(
            "-- partitioned daily start=2024-01-01 strt=3",
            "f.sql:2:39: unknown option 'strt=3'. Did you mean 'start='?",
            id="unknown-option",
        ),
        pytest.param(
            "-- partitioned daily start=2024-01-01 batch=0",
            "f.sql:2:39: batch= must be a whole number from 1 to 1000, got '0'. It is how many partitions",
            id="bad-batch",
        ),
        pytest.param(
            "-- partitioned static a,,b",
            "f.sql:2:25: empty partition key in the list. Write '-- partitioned static a,b,c'.",
            id="static-empty-key",
        ),
        pytest.param(
            "-- partitioned static a,b,a",
            "f.sql:2:27: partition key 'a' is listed twice. Remove the repeated key.",
            id="static-duplicate",
        ),
        pytest.param(
            "-- partitioned static a...b",
            "f.sql:2:23: partition key 'a...b' contains '...', '|', '[' or ']'. Dagster reserves them",
            id="static-reserved-substring",
        ),
        pytest.param(
            "-- partitioned dynamic",
            "f.sql:2:16: 'partitioned dynamic' needs one name. Write '-- partitioned dynamic <name>'",
            id="dynamic-no-name",
        ),
        pytest.param(
            "-- on delta://raw/o window=7y",
            "f.sql:2:21: window '7y' is not <count><unit>. Write e.g. 'window=7d'; units: h (hourly), d (daily)",
            id="window-bad-unit",
        ),
        pytest.param(
            "-- on delta://raw/o window=0d",
            "f.sql:2:21: window '0d' is not <count><unit>.",
            id="window-zero",
        ),
    ],
)
def test_invalid_partition_annotations(line, expected):
    errors = _errors(M + line + "\n")
    assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_two_partitioned_lines_are_an_error():
    errors = _errors(M + "-- partitioned daily start=2024-01-01\n-- partitioned static a\n")
    assert errors == [
        "f.sql:3:4: partitions are already declared on line 2. A table has one partitioning; "
        "keep one '-- partitioned' line."
    ]


def test_window_parses_count_and_unit():
    header, problems = parse_header(SourceText.of("f.sql", M + "-- on delta://raw/o window=3mo\n"))
    assert problems == []
    assert header.upstreams[0].window == WindowSpec(3, PartitionKind.MONTHLY)


# -- placeholders ---------------------------------------------------------------------------


def test_placeholders_become_markers_of_the_same_length():
    sql = "WHERE d = '{partition}' AND t >= {partition_start} AND t < {partition_end}"
    rewritten, offsets = replace_placeholders(sql)
    assert rewritten == "WHERE d = :partition    AND t >= :partition_start  AND t < :partition_end "
    assert len(rewritten) == len(sql)
    assert offsets == [sql.index("'{partition}"), sql.index("{partition_start}"), sql.index("{partition_end}")]


def _file(text):
    spec, problems = parse_file("f.sql", text)
    return spec, [p.render().splitlines()[0] for p in problems]


def test_partitioned_file_binds_its_placeholders():
    spec, problems = _file(
        "-- materialize delta://a/t\n-- partitioned daily start=2024-01-01\n\n"
        "SELECT id FROM raw.o WHERE d = '{partition}' AND ts < {partition_end}\n"
    )
    assert problems == []
    assert spec.select.parameters == ("partition", "partition_end")
    assert spec.select.sql == "SELECT id FROM raw.o WHERE d = :partition    AND ts < :partition_end"


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param(
            "-- materialize delta://a/t\n\nSELECT id FROM raw.o WHERE d = {partition}\n",
            "f.sql:3:32: '{partition}' needs a '-- partitioned' annotation. Declare the partitions",
            id="not-partitioned",
        ),
        pytest.param(
            "-- materialize delta://a/t\n-- partitioned static a,b\n\nSELECT id FROM raw.o WHERE d < {partition_end}\n",
            "f.sql:4:32: '{partition_end}' needs time-window partitions, not static.",
            id="end-on-static",
        ),
        pytest.param(
            "-- materialize delta://a/t\n-- partitioned daily start=2024-01-01\n\n"
            "SELECT id FROM raw.o WHERE d = 'day={partition}'\n",
            "f.sql:4:37: a partition placeholder inside a string literal is not bound.",
            id="inside-a-string",
        ),
        pytest.param(
            "-- materialize delta://a/t\n-- partitioned daily start=2024-01-01\n-- $partition (string)\n\n"
            "SELECT id FROM raw.o\n",
            "f.sql:3:4: argument '$partition' is reserved. assetlake binds :partition",
            id="reserved-argument",
        ),
    ],
)
def test_placeholder_errors(text, expected):
    _, problems = _file(text)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


# -- Dagster definitions and predicates -----------------------------------------------------


def test_time_window_definitions_and_slices():
    daily = partitions_definition(PartitionSpec(PartitionKind.DAILY, start="2024-01-30", end="2024-02-02"))
    assert daily.get_partition_keys() == ["2024-01-30", "2024-01-31", "2024-02-01"]
    monthly = partitions_definition(PartitionSpec(PartitionKind.MONTHLY, start="2024-01-01", end="2024-03-01"))
    assert monthly.get_partition_keys() == ["2024-01-01", "2024-02-01"]
    window = monthly.time_window_for_partition_key("2024-02-01")
    assert (window.start.isoformat(), window.end.isoformat()) == ("2024-02-01T00:00:00+00:00", "2024-03-01T00:00:00+00:00")
    berlin = partitions_definition(
        PartitionSpec(PartitionKind.HOURLY, start="2024-01-01T06:00", end="2024-01-01T08:00", timezone="Europe/Berlin")
    )
    assert berlin.get_partition_keys() == ["2024-01-01-06:00", "2024-01-01-07:00"]
    static = partitions_definition(PartitionSpec(PartitionKind.STATIC, values=("a", "b'")))
    assert static.get_partition_keys() == ["a", "b'"]
    assert isinstance(partitions_definition(PartitionSpec(PartitionKind.DYNAMIC, name="t")), dg.DynamicPartitionsDefinition)


def test_window_maps_to_the_trailing_upstream_partitions():
    mapping = partition_mapping(UpstreamSpec(TableUri("s", "t"), window=WindowSpec(7, PartitionKind.DAILY)))
    daily = partitions_definition(PartitionSpec(PartitionKind.DAILY, start="2024-01-01"))
    upstream = mapping.get_upstream_mapped_partitions_result_for_partitions(
        daily.empty_subset().with_partition_keys(["2024-01-10"]), daily, daily
    ).partitions_subset.get_partition_keys()
    assert list(upstream) == [f"2024-01-{d:02d}" for d in range(4, 11)]
    assert partition_mapping(UpstreamSpec(TableUri("s", "t"))) is None


def test_slice_bindings_carry_the_window_only_for_time_partitions():
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    end = start + dt.timedelta(days=1)
    assert PartitionSlice("2024-01-01", start, end).bindings() == {
        "partition": "2024-01-01",
        "partition_start": start,
        "partition_end": end,
    }
    assert PartitionSlice("eu").bindings() == {"partition": "eu"}


@pytest.mark.parametrize("key", ["x' OR '1'='1", "a\\' OR 1=1 --", "'; DROP TABLE t; --", "ü`\"\\"])
def test_predicates_hold_keys_as_hex_only(key):
    literal = partition_literal(key)
    hex_part = literal[len("CAST(X'") : -len("' AS STRING)")]
    assert all(c in "0123456789abcdef" for c in hex_part)
    assert bytes.fromhex(hex_part).decode("utf-8") == key


def test_an_empty_slice_has_no_predicate():
    with pytest.raises(ValueError, match="at least one partition key"):
        partition_predicate([])
    assert describe_slice([]) is None
