"""Layer 1: the `-- schedule` and `-- automation` lines -> specs, or the exact located error."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assetlake_dagster.annotations import parse_header
from assetlake_dagster.errors import SourceText
from assetlake_dagster.project.load import parse_file
from assetlake_dagster.spec import AutomationKind, AutomationSpec, ScheduleSpec
from assetlake_dagster_tests.helpers import MATERIALIZE_LINE, header_errors, parsed_header, run_cli

M = MATERIALIZE_LINE
CRON_HINT = "Write five fields: minute hour day-of-month month day-of-week, e.g. '0 2 * * *'."
ZONE_HINT = "Use an IANA name, e.g. 'tz=Europe/Berlin' or 'tz=UTC'."


@pytest.mark.parametrize(
    "line, expected",
    [
        pytest.param("-- schedule 0 2 * * *", ScheduleSpec("0 2 * * *"), id="daily-at-two"),
        pytest.param("-- schedule  0   2 * * 1-5 ", ScheduleSpec("0 2 * * 1-5"), id="spaces-normalised"),
        pytest.param(
            "-- schedule 30 6 * * MON tz=Europe/Berlin", ScheduleSpec("30 6 * * MON", "Europe/Berlin"), id="zone"
        ),
        pytest.param("-- schedule @daily", ScheduleSpec("@daily"), id="alias"),
        pytest.param("-- schedule */15 * * * *", ScheduleSpec("*/15 * * * *"), id="step"),
        pytest.param("// schedule 0 0 1 * *", ScheduleSpec("0 0 1 * *"), id="slash-comment"),
    ],
)
def test_schedule_line(line, expected):
    header = parsed_header(line)
    assert header.fields["schedule"] == expected
    assert (header.fields["schedule"].location.line, header.fields["schedule"].location.col) == (2, 4)


@pytest.mark.parametrize(
    "line, expected",
    [
        pytest.param("-- automation eager", AutomationSpec(AutomationKind.EAGER), id="eager"),
        pytest.param("-- automation on_missing", AutomationSpec(AutomationKind.ON_MISSING), id="on-missing"),
        pytest.param(
            "-- automation on_cron 0 * * * *", AutomationSpec(AutomationKind.ON_CRON, cron="0 * * * *"), id="on-cron"
        ),
        pytest.param(
            "-- automation on_cron 0 6 * * * tz=Asia/Tokyo",
            AutomationSpec(AutomationKind.ON_CRON, cron="0 6 * * *", timezone="Asia/Tokyo"),
            id="on-cron-zone",
        ),
    ],
)
def test_automation_line(line, expected):
    assert parsed_header(line).fields["automation"] == expected


def test_a_file_may_have_both_and_the_spec_carries_them():
    text = M + "-- schedule 0 2 * * *\n-- automation eager\n\nSELECT 1 AS id\n"
    spec, problems = parse_file("f.sql", text)
    assert problems == []
    assert spec.schedule == ScheduleSpec("0 2 * * *")
    assert spec.automation == AutomationSpec(AutomationKind.EAGER)


def test_a_file_without_them_has_none():
    spec, _ = parse_file("f.sql", M + "\nSELECT 1 AS id\n")
    assert (spec.schedule, spec.automation) == (None, None)


INVALID = [
    # -- schedule: the cron
    pytest.param(
        "-- schedule",
        "f.sql:2:4: '-- schedule' needs a cron schedule. Write '-- schedule <minute> <hour> <day-of-month> <month> "
        "<day-of-week> [tz=<zone>]', e.g. '0 2 * * *' for 02:00 every day.",
        id="schedule-without-cron",
    ),
    pytest.param(
        "-- schedule 0 2 * *",
        f"f.sql:2:13: cron schedule '0 2 * *' has 4 fields, not 5. {CRON_HINT}",
        id="four-fields",
    ),
    pytest.param(
        "-- schedule 0 0 2 * * *",
        f"f.sql:2:13: cron schedule '0 0 2 * * *' has 6 fields, not 5. {CRON_HINT}",
        id="six-fields-seconds",
    ),
    pytest.param(
        "-- schedule 61 2 * * *",
        f"f.sql:2:13: cron schedule '61 2 * * *' is not valid: '61' is not a valid minute (0-59). {CRON_HINT}",
        id="bad-minute",
    ),
    pytest.param(
        "-- schedule 0 24 * * *",
        f"f.sql:2:13: cron schedule '0 24 * * *' is not valid: '24' is not a valid hour (0-23). {CRON_HINT}",
        id="bad-hour",
    ),
    pytest.param(
        "-- schedule 0 2 0 * *",
        f"f.sql:2:13: cron schedule '0 2 0 * *' is not valid: '0' is not a valid day-of-month (1-31). {CRON_HINT}",
        id="bad-day",
    ),
    pytest.param(
        "-- schedule 0 2 * 13 *",
        f"f.sql:2:13: cron schedule '0 2 * 13 *' is not valid: '13' is not a valid month (1-12 or JAN-DEC). {CRON_HINT}",
        id="bad-month",
    ),
    pytest.param(
        "-- schedule 0 2 * * MONDAY",
        "f.sql:2:13: cron schedule '0 2 * * MONDAY' is not valid: 'MONDAY' is not a valid day-of-week "
        f"(0-6 or SUN-SAT). {CRON_HINT}",
        id="bad-weekday",
    ),
    pytest.param(
        "-- schedule every day",
        f"f.sql:2:13: cron schedule 'every day' has 2 fields, not 5. {CRON_HINT}",
        id="words",
    ),
    pytest.param(
        "-- schedule 0 2 30 2 *",
        "f.sql:2:13: cron schedule '0 2 30 2 *' is not valid: its day and month never occur together. "
        "Pick a day the month has, e.g. '0 2 28 2 *'.",
        id="thirtieth-of-february",
    ),
    pytest.param(
        "-- schedule */90 * * * *",
        "f.sql:2:13: the step in '*/90' is larger than the minute field (0-59), so Dagster would run it more often "
        "than written. Use a step that fits the field or list the values, e.g. '0 */2 * * *' for every two hours.",
        id="step-out-of-range",
    ),
    pytest.param(
        "-- schedule @dayly",
        "f.sql:2:13: unknown cron alias '@dayly'. Did you mean '@daily'?",
        id="alias-typo",
    ),
    pytest.param(
        "-- schedule @reboot",
        f"f.sql:2:13: unknown cron alias '@reboot'. {CRON_HINT}",
        id="alias-unknown",
    ),
    # -- schedule: the zone and options
    pytest.param(
        "-- schedule 0 2 * * * tz=Mars/Olympus",
        f"f.sql:2:23: unknown time zone 'Mars/Olympus'. {ZONE_HINT}",
        id="unknown-zone",
    ),
    pytest.param("-- schedule 0 2 * * * tz=", f"f.sql:2:23: unknown time zone ''. {ZONE_HINT}", id="empty-zone"),
    pytest.param(
        "-- schedule 0 2 * * * tz=America", f"f.sql:2:23: unknown time zone 'America'. {ZONE_HINT}", id="zone-folder"
    ),
    pytest.param(
        "-- schedule 0 2 * * * tx=UTC",
        "f.sql:2:23: unknown option 'tx=UTC'. Did you mean 'tz='?",
        id="option-typo",
    ),
    pytest.param(
        "-- schedule 0 2 * * * every=day",
        "f.sql:2:23: unknown option 'every=day'. "
        "Write '-- schedule <minute> <hour> <day-of-month> <month> <day-of-week> [tz=<zone>]'.",
        id="unknown-option",
    ),
    pytest.param(
        "-- schedule tz=UTC 0 2 * * *",
        "f.sql:2:13: 'tz=' must come after the cron schedule. "
        "Write '-- schedule <minute> <hour> <day-of-month> <month> <day-of-week> [tz=<zone>]'.",
        id="zone-first",
    ),
    pytest.param(
        "-- schedule 0 2 * * * tz=UTC tz=UTC",
        "f.sql:2:30: option 'tz=' is given twice. Keep one 'tz='.",
        id="zone-twice",
    ),
    pytest.param(
        "-- schedule 0 2 * * *\n-- schedule 0 3 * * *",
        "f.sql:3:4: a schedule is already set on line 2. An asset has one schedule; keep one '-- schedule' line.",
        id="two-schedules",
    ),
    # -- automation
    pytest.param(
        "-- automation",
        "f.sql:2:4: '-- automation' needs a condition. "
        "Write '-- automation eager', '-- automation on_cron <cron> [tz=<zone>]' or '-- automation on_missing'.",
        id="automation-without-condition",
    ),
    pytest.param(
        "-- automation eagr",
        "f.sql:2:15: unknown automation condition 'eagr'. Did you mean 'eager'?",
        id="condition-typo",
    ),
    pytest.param(
        "-- automation on-missing",
        "f.sql:2:15: unknown automation condition 'on-missing'. Did you mean 'on_missing'?",
        id="condition-dash",
    ),
    pytest.param(
        "-- automation lazy",
        "f.sql:2:15: unknown automation condition 'lazy'. Conditions are: eager, on_cron, on_missing.",
        id="condition-unknown",
    ),
    pytest.param(
        "-- automation eager 0 2 * * *",
        "f.sql:2:21: 'eager' takes nothing after it, got '0'. "
        "Write '-- automation eager' alone; only 'on_cron' takes a cron.",
        id="eager-with-cron",
    ),
    pytest.param(
        "-- automation on_cron",
        "f.sql:2:15: 'on_cron' needs a cron schedule. "
        "Write '-- automation on_cron <cron> [tz=<zone>]', e.g. '0 2 * * *' for 02:00 every day.",
        id="on-cron-without-cron",
    ),
    pytest.param(
        "-- automation on_cron tz=UTC",
        "f.sql:2:15: 'on_cron' needs a cron schedule. "
        "Write '-- automation on_cron <cron> [tz=<zone>]', e.g. '0 2 * * *' for 02:00 every day.",
        id="on-cron-zone-only",
    ),
    pytest.param(
        "-- automation on_cron 0 99 * * *",
        f"f.sql:2:23: cron schedule '0 99 * * *' is not valid: '99' is not a valid hour (0-23). {CRON_HINT}",
        id="on-cron-bad-cron",
    ),
    pytest.param(
        "-- automation on_cron 0 2 * * * tz=Europe/Berlinn",
        f"f.sql:2:33: unknown time zone 'Europe/Berlinn'. {ZONE_HINT}",
        id="on-cron-bad-zone",
    ),
    pytest.param(
        "-- automation eager\n-- automation on_missing",
        "f.sql:3:4: automation is already set on line 2. "
        "An asset has one automation condition; keep one '-- automation' line.",
        id="two-automation-lines",
    ),
    # -- the keyword itself
    pytest.param(
        "-- schedul 0 2 * * *",
        "f.sql:2:4: unknown annotation 'schedul'. Did you mean 'schedule'?",
        id="keyword-typo",
    ),
]


@pytest.mark.parametrize("lines, expected", INVALID)
def test_invalid_line(lines, expected):
    assert header_errors(lines) == [expected]


def test_a_bad_cron_and_a_bad_zone_are_both_reported():
    assert header_errors("-- schedule 0 2 * * tz=Nowhere") == [
        f"f.sql:2:13: cron schedule '0 2 * *' has 4 fields, not 5. {CRON_HINT}",
        f"f.sql:2:21: unknown time zone 'Nowhere'. {ZONE_HINT}",
    ]


def test_a_second_schedule_is_refused_even_when_the_first_is_invalid():
    assert header_errors("-- schedule 0 2 * *\n-- schedule 0 3 * * *") == [
        f"f.sql:2:13: cron schedule '0 2 * *' has 4 fields, not 5. {CRON_HINT}",
        "f.sql:3:4: a schedule is already set on line 2. An asset has one schedule; keep one '-- schedule' line.",
    ]


def test_the_error_underlines_the_whole_cron():
    _, [problem] = parse_header(SourceText.of("f.sql", M + "-- schedule 0 2 * 13 * tz=UTC\n"))
    assert problem.render().splitlines()[1:] == ["  -- schedule 0 2 * 13 * tz=UTC", "              ^^^^^^^^^^"]


def test_assetlake_validate_reports_them(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.sql").write_text(M + "-- schedule 0 2 * * * tz=Mars\n-- automation eagre\n\nSELECT 1 AS id\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "validate", ".")
    assert (code, out) == (1, "")
    lines = [line for line in err.splitlines() if line.startswith("a.sql:")]
    assert lines == [
        f"a.sql:2:23: unknown time zone 'Mars'. {ZONE_HINT}",
        "a.sql:3:15: unknown automation condition 'eagre'. Did you mean 'eager'?",
    ]


_WORDS = st.sampled_from(
    ["schedule", "automation", "eager", "on_cron", "on_missing", "0", "2", "*", "*/5", "*/90", "1-5", "MON", "L",
     "5#3", "@daily", "@", "tz=UTC", "tz=", "tz=America", "tz=Europe/Berlin", "x=1", "99999999999999999999", ",",
     "-", "/", "?", "H"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.lists(_WORDS, min_size=1, max_size=8), min_size=1, max_size=3))
def test_any_schedule_or_automation_line_gives_a_spec_or_located_errors(lines):
    text = M + "".join("-- " + " ".join(words) + "\n" for words in lines) + "\nSELECT 1 AS id\n"
    spec, problems = parse_file("f.sql", text)  # must not raise
    assert (spec is None) == bool(problems)
    for problem in problems:
        assert problem.render().startswith("f.sql:"), problem.render()
