"""`assetlake validate` and the loader (`build_definitions`) report the same errors for a folder.

Each case is a tiny broken folder, written under ``tmp_path``; both entry points must print
exactly the same problems (one round, nothing reported twice), and the expected ones.
"""

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.cli.main import main
from assetlake_dagster.errors import ProjectError

PYTHON_ASSET = '''
import dagster as dg

@dg.asset(key={key!r}, metadata={metadata!r})
def {name}():
    return None
'''


def _python(name, key, metadata=None):
    return PYTHON_ASSET.format(name=name, key=key, metadata=metadata or {})


CASES = [
    pytest.param(
        {"a.sql": "-- materialize delta://m/a\n-- data_test relationships id -> delta://m/nope.id\n\nSELECT id FROM raw.x\n"},
        [
            "a.sql:2:28: data test references delta://m/nope, which is no asset of this project. "
            "Point it at a table a SQL file or Python asset produces, or one the SQL reads.",
        ],
        id="relationships-to-a-table-nobody-produces",
    ),
    pytest.param(
        {
            "events.sql": "-- materialize delta://raw/events\n\nSELECT 1 AS id\n",
            "sources.py": _python("events", ["raw", "events"]),
        },
        [
            "events.sql:1:16: delta://raw/events is also produced by the Python asset raw/events in sources.py. "
            "A table has exactly one producer; retarget the '-- materialize' line or the Python asset's table.",
        ],
        id="sql-and-python-produce-one-table",
    ),
    pytest.param(
        {
            "t.sql": "-- materialize delta://M/T\n\nSELECT 1 AS id\n",
            "sources.py": _python("t", ["lake", "m", "t"], {"assetlake/write": {"table": "delta://m/t"}}),
        },
        [
            "t.sql:1:16: delta://M/T is also produced by the Python asset lake/m/t in sources.py. "
            "A table has exactly one producer; retarget the '-- materialize' line or the Python asset's table.",
        ],
        id="python-table-from-its-write-contract",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n\nSELECT id FROM m.b\n",
            "b.sql": "-- materialize delta://m/b\n\nSELECT id FROM m.a\n",
        },
        [
            "a.sql:3:16: dependency cycle: delta://m/a reads delta://m/b, which reads delta://m/a. "
            "Assets must form a DAG; remove one of these reads.",
        ],
        id="dependency-cycle",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n\nSELECT 1 AS id\n",
            "b.sql": "-- materialize delta://m/a\n\nSELECT 1 AS id\n",
        },
        [
            "a.sql:1:16: delta://m/a is also materialized by b.sql:1. "
            "A table has exactly one producing file; retarget or remove one '-- materialize' line.",
            "b.sql:1:16: delta://m/a is also materialized by a.sql:1. "
            "A table has exactly one producing file; retarget or remove one '-- materialize' line.",
        ],
        id="two-files-one-table",
    ),
    pytest.param(
        {"a.sql": "-- materialise delta://m/a\n\nSELECT 1 AS id\n"},
        [
            "a.sql:1:1: no '-- materialize' annotation. "
            "Add '-- materialize delta://<schema>/<table> [append] [key=<c1,c2>]' at the top of the file.",
            "a.sql:1:4: unknown annotation 'materialise'. Did you mean 'materialize'?",
        ],
        id="unknown-keyword",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n\nSELECT 1 AS id\n",
            "broken.py": "import dagster as dg\n\nraise RuntimeError('no source configured.')\n",
        },
        [
            "broken.py:3:1: importing the file raised RuntimeError: no source configured. "
            "Fix it, or start the file name with '_' so that assetlake does not import it.",
        ],
        id="python-file-that-fails-to-import",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- partitioned daily start=2024-01-01\n"
            "-- on delta://m/b window=7d\n\nSELECT 1 AS id\n",
            "b.sql": "-- materialize delta://m/b\n\nSELECT 1 AS id\n",
        },
        [
            "a.sql:3:7: window=7d needs delta://m/b partitioned daily. b.sql:1 is not partitioned; "
            "drop window= to read all of it.",
        ],
        id="window-on-an-unpartitioned-upstream",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- partitioned daily start=2024-01-01\n"
            "-- on delta://m/b window=1000000d\n\nSELECT 1 AS id\n",
            "b.sql": "-- materialize delta://m/b\n-- partitioned daily start=2024-01-01\n\nSELECT 1 AS id\n",
        },
        [
            "a.sql:3:19: window=1000000d reaches back more than 100 years. "
            "Use at most window=36600d; to read all of the upstream, drop window=.",
        ],
        # Dagster's partition mapping overflowed datetime when a run or backfill mapped it
        id="window-reaching-past-year-1",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- partitioned weekly start=2024-01-01 tz=Pacific/Kiritimati\n\n"
            "SELECT id FROM m.b\n",
            "b.sql": "-- materialize delta://m/b\n-- partitioned hourly start=2024-01-01\n\nSELECT 1 AS id\n",
            "c.sql": "-- materialize delta://m/c\n-- partitioned daily start=2024-01-01 tz=UTC\n\nSELECT id FROM m.b\n",
        },
        [
            "a.sql:4:16: this file's partitions are in Pacific/Kiritimati, those of delta://m/b in UTC (b.sql:1). "
            "Dagster maps time windows only within one time zone; give both '-- partitioned' lines the same tz= "
            "(none means UTC).",
        ],
        # found by scripts/fuzz_annotations.py: the run's partition mapping raised
        # "Timezones UTC and Pacific/Kiritimati don't match"
        id="time-windows-in-two-zones",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- schedule 0 25 * * *\n-- automation on_cron\n\nSELECT 1 AS id\n",
            "b.sql": "-- materialize delta://m/b\n-- automation eager\n-- automation eagr\n\nSELECT id FROM m.a\n",
        },
        [
            "a.sql:2:13: cron schedule '0 25 * * *' is not valid: '25' is not a valid hour (0-23). "
            "Write five fields: minute hour day-of-month month day-of-week, e.g. '0 2 * * *'.",
            "a.sql:3:15: 'on_cron' needs a cron schedule. "
            "Write '-- automation on_cron <cron> [tz=<zone>]', e.g. '0 2 * * *' for 02:00 every day.",
            "b.sql:3:4: automation is already set on line 2. "
            "An asset has one automation condition; keep one '-- automation' line.",
        ],
        id="schedule-and-automation",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- freshness fail=24h warn=1x\n\nSELECT 1 AS id\n",
            "b.sql": "-- materialize delta://m/b\n-- freshness cron 0 9 * * * lower_bound=2d\n\nSELECT id FROM m.a\n",
        },
        [
            "a.sql:2:28: '1x' is not a duration. "
            "Write a whole number and a unit, m (minutes), h (hours) or d (days), e.g. '26h'.",
            "b.sql:2:29: 'lower_bound=2d' is longer than the time between two ticks of '0 9 * * *'. "
            "Make 'lower_bound=' at most the cron's smallest interval, e.g. 'lower_bound=1h' for a daily cron.",
        ],
        id="freshness",
    ),
    pytest.param(
        {"a.sql": "-- materialize delta://m/a\n-- partitioned daily start=0000-01-01 tz=Europe/Berlin\n\nSELECT 1 AS id\n"},
        ["a.sql:2:22: start= '0000-01-01' is not a date. Write start=YYYY-MM-DD, or start=YYYY-MM-DDTHH:MM for an hour."],
        id="year-0-start-with-a-zone",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- partitioned daily start=0001-01-01 tz=Europe/Berlin\n\nSELECT 1 AS id\n",
            "b.sql": "-- materialize delta://m/b\n-- partitioned hourly start=2024-01-01 end=9999-12-31 tz=Pacific/Kiritimati\n\n"
            "SELECT 1 AS id\n",
            "c.sql": "-- materialize delta://m/c\n-- partitioned monthly start=2024-02-01 end=2024-01-01\n\nSELECT 1 AS id\n",
        },
        [
            "a.sql:2:22: start= 0001-01-01 is outside the supported range 1900-01-01 to 2999-12-31. "
            "Time-window partitions need dates a time zone can shift by a day and more; choose a date in 1900..2999.",
            "b.sql:2:40: end= 9999-12-31 is outside the supported range 1900-01-01 to 2999-12-31. "
            "Time-window partitions need dates a time zone can shift by a day and more; choose a date in 1900..2999.",
            "c.sql:2:41: end= must be after start=. end= is exclusive: the first instant not covered.",
        ],
        id="extreme-and-reversed-dates",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- partitioned daily start=2024-03-31T02:30 end=2024-04-01 tz=Europe/Berlin\n\n"
            "SELECT 1 AS id\n",
            "b.sql": "-- materialize delta://m/b\n-- partitioned weekly start=2024-03-31 end=2024-04-01\n\nSELECT 1 AS id\n",
        },
        [
            "a.sql:2:45: no whole daily partition fits between start= and end= (the first starts 2024-04-01 00:00 "
            "and ends 2024-04-02 00:00). Partitions start on a whole day; move end= later or start= earlier.",
            "b.sql:2:40: no whole weekly partition fits between start= and end= (the first starts 2024-03-31 00:00 "
            "and ends 2024-04-07 00:00). Partitions start on a whole week; move end= later or start= earlier.",
        ],
        # Dagster then reports a first window after the last one and fails on key ranges
        id="no-whole-partition-before-end",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- partitioned static a,b\tc\n\nSELECT 1 AS id\n",
            "b.sql": "-- materialize delta://m/b\n-- partitioned static x\x01y,z\n\nSELECT 1 AS id\n",
        },
        [
            "a.sql:2:25: partition key 'b\\tc' contains the control character '\\t'. "
            "Partition keys are printable text (Dagster rejects tabs and newlines); remove it.",
            "b.sql:2:23: partition key 'x\\x01y' contains the control character '\\x01'. "
            "Partition keys are printable text (Dagster rejects tabs and newlines); remove it.",
        ],
        id="control-characters-in-static-keys",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- partitioned daily start=2024-01-01\n\n"
            "SELECT id FROM raw.x WHERE d >= {partition_strat} AND d < '{partitio_end}' AND n = '{x}'\n",
            "b.sql": "-- materialize delta://m/b\n\nSELECT {id} AS id, '${v}' AS v, '{' AS brace\n",
        },
        [
            "a.sql:4:33: '{partition_strat}' is not a partition placeholder. Did you mean '{partition_start}'? "
            "A literal brace belongs in a string, e.g. concat('{', 'x', '}').",
            "a.sql:4:59: '{partitio_end}' is not a partition placeholder. Did you mean '{partition_end}'? "
            "A literal brace belongs in a string, e.g. concat('{', 'x', '}').",
            "b.sql:3:8: '{id}' is not a partition placeholder. Placeholders are {partition}, {partition_start}, "
            "{partition_end}. A literal brace belongs in a string, e.g. concat('{', 'x', '}').",
        ],
        id="misspelt-placeholders",
    ),
    pytest.param(
        # Found by the fuzzer's runs: these loaded, then Spark failed to parse them at run time.
        {
            "a.sql": "-- materialize delta://m/a\n\nSELECT {pa\u0c1ftition} AS tenant\n",
            "b.sql": "-- materialize delta://m/b\n\nSELECT 1 AS id, {} AS m, ${v} AS v\n",
        },
        [
            "a.sql:3:8: '{pa\u0c1ftition}' is not a partition placeholder. Did you mean '{partition}'? "
            "A literal brace belongs in a string, e.g. concat('{', 'x', '}').",
            "b.sql:3:17: '{' is not Spark SQL outside a string literal. Placeholders are {partition}, {partition_start}, "
            "{partition_end}. A literal brace belongs in a string, e.g. concat('{', 'x', '}').",
        ],
        id="braces-spark-cannot-parse",
    ),
    pytest.param(
        {
            "a.sql": "-- materialize delta://m/a\n-- partitioned daily start=2024-01-01 event_time=orderd_at batch=10\n\n"
            "SELECT 1 AS id, current_timestamp() AS ordered_at FROM raw.x WHERE d = {partition}\n",
            "b.sql": "-- materialize delta://m/b\n-- partitioned static a,b event_time=t\n\nSELECT 1 AS id\n",
            "c.sql": "-- materialize delta://m/c\n-- partitioned hourly start=2024-01-01 tz=Europe/Berlin event_time=t\n\nSELECT 1 AS id\n",
            "d.sql": "-- materialize delta://m/d\n-- partitioned daily start=2024-01-01 event_time=t-1\n\nSELECT 1 AS id\n",
        },
        [
            "a.sql:2:50: event_time column 'orderd_at' is not among the SELECT's columns. Did you mean 'ordered_at'?",
            "a.sql:4:72: '{partition}' names one partition, but with event_time= a run of several partitions is one "
            "query. Filter on the range instead, e.g. 'WHERE t >= {partition_start} AND t < {partition_end}'.",
            "b.sql:2:27: event_time= needs time-window partitions, not static. A static or dynamic key is not a time; remove event_time=.",
            "c.sql:2:57: event_time= with hourly partitions needs tz=UTC, not 'Europe/Berlin'. Dagster names the hours of "
            "a daylight-saving change apart ('01:00-0500'); keep hourly windows in UTC, or drop event_time= (one query per partition).",
            "d.sql:2:39: event_time= must name one output column, got 't-1'. Write e.g. 'event_time=ordered_at': a DATE "
            "or TIMESTAMP column of the SELECT.",
        ],
        id="event-time",
    ),
]


def _write(root, files):
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)


@pytest.mark.parametrize("files, expected", CASES)
def test_validate_and_load_report_the_same_errors(tmp_path, monkeypatch, capsys, files, expected):
    _write(tmp_path / "case", files)
    monkeypatch.chdir(tmp_path / "case")  # messages name files as 'a.sql'

    assert main(["validate", "."]) == 1
    out, validate_err = capsys.readouterr()
    with pytest.raises(ProjectError) as loaded:
        build_definitions(".", lake_root=str(tmp_path / "lake"))

    assert out == ""
    assert validate_err == f"{loaded.value}\n"
    assert [d.render().splitlines()[0] for d in loaded.value.diagnostics] == expected


def test_a_python_asset_producing_the_referenced_table_passes_both(tmp_path, monkeypatch, capsys):
    _write(
        tmp_path / "case",
        {
            "a.sql": "-- materialize delta://m/a\n-- data_test relationships id -> delta://raw/people.id\n\n"
            "SELECT id FROM raw.x\n",
            # a prefixed key: the table comes from the write contract, not the key
            "people.py": _python("people", ["lake", "raw", "people"], {"assetlake/write": {"table": "delta://raw/people"}}),
        },
    )
    monkeypatch.chdir(tmp_path / "case")

    assert main(["validate", "."]) == 0
    assert capsys.readouterr() == ("ok: 1 assets, 1 external tables in .\n", "")
    defs = build_definitions(".", lake_root=str(tmp_path / "lake"))
    keys = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {"m/a", "raw/x", "lake/raw/people"}


@pytest.mark.parametrize(
    "line",
    [
        "daily start=1900-01-01 tz=Pacific/Kiritimati",
        "hourly start=1900-01-01 end=1900-01-02 tz=Etc/GMT+12",
        "weekly start=2999-12-01 end=2999-12-31T23:00 tz=Etc/GMT-14",
        "monthly start=2999-01-01 tz=America/St_Johns",
        "daily start=2024-03-31 end=2024-04-02 tz=Europe/Berlin",
        "daily start=2024-03-31T02:30 end=2024-04-02 tz=Europe/Berlin",
        "hourly start=2024-03-31T02:00 end=2024-03-31T04:00 tz=Europe/Berlin",
        "weekly start=2024-03-31 end=2024-04-07 tz=America/New_York",
        "static a,b c,~!@#$%^&*(),ü,日本",
    ],
)
def test_what_validate_accepts_dagster_builds(tmp_path, line):
    """The edges of the accepted range: Dagster's own objects take them, no crash later."""
    from assetlake_dagster.defs.partitions import partitions_definition
    from assetlake_dagster.project.load import parse_file

    spec, problems = parse_file("f.sql", f"-- materialize delta://m/a\n-- partitioned {line}\n\nSELECT 1 AS id\n")
    assert problems == []
    definition = partitions_definition(spec.partitions)
    keys = definition.get_partition_keys()[:3]  # time windows: up to now (none yet for 2999)
    for key in keys:
        assert definition.has_partition_key(key)
    if keys:
        assert definition.get_partition_keys_in_range(dg.PartitionKeyRange(keys[0], keys[-1])) == keys
    if hasattr(definition, "get_last_partition_window"):
        definition.get_last_partition_window()
        definition.get_first_partition_window()


def test_the_first_window_is_dagsters():
    """The end= check aligns the first partition exactly as Dagster does (past starts, UTC)."""
    import datetime as dt
    import random

    from assetlake_dagster.annotations.partitioned import first_window
    from assetlake_dagster.defs.partitions import partitions_definition
    from assetlake_dagster.spec import PartitionKind, PartitionSpec

    rng = random.Random(15)
    for _ in range(300):
        start = dt.datetime(1900, 1, 1) + dt.timedelta(minutes=rng.randrange(0, 125 * 365 * 24 * 60))
        start = start.replace(minute=rng.choice([0, start.minute]), hour=rng.choice([0, start.hour]))
        kind = rng.choice([PartitionKind.HOURLY, PartitionKind.DAILY, PartitionKind.WEEKLY, PartitionKind.MONTHLY])
        window = partitions_definition(PartitionSpec(kind, start=start.isoformat(timespec="minutes"))).get_first_partition_window()
        assert (window.start.replace(tzinfo=None), window.end.replace(tzinfo=None)) == first_window(kind, start), (kind, start)


@pytest.mark.parametrize("kind, window", [("hourly", "878400h"), ("daily", "36600d"), ("weekly", "5300w"), ("monthly", "1200mo")])
def test_the_largest_window_maps_from_the_earliest_partition(tmp_path, kind, window):
    from assetlake_dagster.defs.dagster_internals import resolve_assets_def

    _write(
        tmp_path / "case",
        {
            "a.sql": f"-- materialize delta://m/a\n-- partitioned {kind} start=1900-01-01 end=1900-03-01\n"
            f"-- on delta://m/b window={window}\n\nSELECT 1 AS id\n",
            "b.sql": f"-- materialize delta://m/b\n-- partitioned {kind} start=1900-01-01 end=1900-03-01\n\nSELECT 1 AS id\n",
        },
    )
    defs = build_definitions(str(tmp_path / "case"), lake_root=str(tmp_path / "lake"), load_python_files=False)
    a, b = (resolve_assets_def(defs, dg.AssetKey(["m", name])) for name in ("a", "b"))
    first = a.partitions_def.get_first_partition_key()
    mapped = a.get_partition_mapping(dg.AssetKey(["m", "b"])).get_upstream_mapped_partitions_result_for_partitions(
        a.partitions_def.subset_with_partition_keys([first]), a.partitions_def, b.partitions_def
    )
    assert mapped.partitions_subset.get_partition_keys() == [first]


def test_a_symlink_out_of_the_project_is_the_same_error_in_both(tmp_path, monkeypatch, capsys):
    import os

    (tmp_path / "outside.sql").write_text("-- materialize delta://m/b\n\nSELECT 1 AS id\n")
    _write(tmp_path / "case", {"a.sql": "-- materialize delta://m/a\n\nSELECT 1 AS id\n"})
    os.symlink(tmp_path / "outside.sql", tmp_path / "case" / "b.sql")
    monkeypatch.chdir(tmp_path / "case")

    assert main(["validate", "."]) == 1
    _, validate_err = capsys.readouterr()
    with pytest.raises(ProjectError) as loaded:
        build_definitions(".", lake_root=str(tmp_path / "lake"))
    assert validate_err == f"{loaded.value}\n"
    assert validate_err.startswith(f"b.sql:1:1: the file is a symlink to {os.path.realpath(tmp_path / 'outside.sql')}, outside")
