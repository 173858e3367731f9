"""Layer 1: the `-- freshness` line -> spec -> Dagster's FreshnessPolicy on the asset, or the exact located error."""

from datetime import timedelta

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.project.load import parse_file
from assetlake_dagster.spec import FreshnessSpec
from assetlake_dagster.defs.translator import AssetlakeTranslator
from assetlake_dagster_tests.helpers import MATERIALIZE_LINE, header_errors, parsed_header

M = MATERIALIZE_LINE
DURATION_HINT = "Write a whole number and a unit, m (minutes), h (hours) or d (days), e.g. '26h'."
FORMS = "'-- freshness fail=<duration> [warn=<duration>]' or '-- freshness cron <cron> lower_bound=<duration> [tz=<zone>]'"
CRON_FORM = "-- freshness cron <cron> lower_bound=<duration> [tz=<zone>]"


H = timedelta(hours=1)


@pytest.mark.parametrize(
    "line, expected",
    [
        pytest.param("-- freshness fail=26h warn=24h", FreshnessSpec(fail=26 * H, warn=24 * H), id="window-warn"),
        pytest.param("-- freshness warn=90m fail=2d", FreshnessSpec(fail=48 * H, warn=90 * H / 60), id="any-order"),
        pytest.param("-- freshness fail=1m", FreshnessSpec(fail=timedelta(minutes=1)), id="one-minute"),
        pytest.param(
            "-- freshness cron 0 9 * * * lower_bound=1h",
            FreshnessSpec(cron="0 9 * * *", lower_bound=H),
            id="cron",
        ),
        pytest.param(
            "-- freshness cron 0 9 * * 1-5 tz=Europe/Berlin lower_bound=24h",
            FreshnessSpec(cron="0 9 * * 1-5", lower_bound=24 * H, timezone="Europe/Berlin"),
            id="cron-zone-bound-last",
        ),
        pytest.param(
            "-- freshness cron lower_bound=1d @daily", FreshnessSpec(cron="@daily", lower_bound=24 * H), id="alias"
        ),
    ],
)
def test_freshness_line(line, expected):
    header = parsed_header(line)
    assert header.fields["freshness"] == expected
    assert (header.fields["freshness"].location.line, header.fields["freshness"].location.col) == (2, 4)


INVALID = [
    pytest.param("-- freshness", f"f.sql:2:4: '-- freshness' needs a window or a cron deadline. Write {FORMS}.", id="empty"),
    pytest.param(
        "-- freshness fail=26x",
        f"f.sql:2:19: '26x' is not a duration. {DURATION_HINT}",
        id="bad-unit",
    ),
    pytest.param("-- freshness fail=26hr", "f.sql:2:19: '26hr' is not a duration. Did you mean 'h'?", id="unit-typo"),
    pytest.param("-- freshness fail=", f"f.sql:2:14: 'fail=' needs a duration. {DURATION_HINT}", id="no-duration"),
    pytest.param("-- freshness fail=1.5h", f"f.sql:2:19: '1.5h' is not a duration. {DURATION_HINT}", id="fraction"),
    pytest.param(
        "-- freshness fail=0m",
        "f.sql:2:19: 'fail=0m' is shorter than a minute. Dagster checks freshness to the minute; give at least '1m'.",
        id="zero",
    ),
    pytest.param(
        "-- freshness fail=24h warn=26h",
        "f.sql:2:23: 'warn=26h' is not shorter than 'fail=24h'. The warning comes before the failure: "
        "make 'warn=' the shorter window, e.g. 'fail=26h warn=24h'.",
        id="warn-after-fail",
    ),
    pytest.param(
        "-- freshness warn=24h",
        "f.sql:2:4: '-- freshness' needs 'fail=', the window after which the asset fails. "
        "Write '-- freshness fail=<duration> [warn=<duration>]', e.g. 'fail=26h'.",
        id="warn-only",
    ),
    pytest.param("-- freshness fial=26h", "f.sql:2:14: unknown freshness option 'fial=26h'. Did you mean 'fail='?", id="typo"),
    pytest.param(
        "-- freshness fail=26h fail=2h", "f.sql:2:23: option 'fail=' is given twice. Keep one 'fail='.", id="twice"
    ),
    pytest.param(
        "-- freshness fail=26h lower_bound=1h",
        f"f.sql:2:23: 'lower_bound=' belongs to a cron deadline. Write '{CRON_FORM}'.",
        id="window-with-bound",
    ),
    pytest.param(
        "-- freshness fail=26h cron 0 9 * * *",
        f"f.sql:2:23: 'cron' must come right after 'freshness'. Write '{CRON_FORM}'.",
        id="cron-later",
    ),
    pytest.param(
        "-- freshness cron 0 9 * * *",
        "f.sql:2:14: a cron deadline needs 'lower_bound=', how long before the deadline a materialization counts. "
        f"Write '{CRON_FORM}', e.g. 'lower_bound=1h'.",
        id="cron-without-bound",
    ),
    pytest.param(
        "-- freshness cron lower_bound=1h",
        f"f.sql:2:14: '-- freshness cron' needs a cron schedule. Write '{CRON_FORM}', e.g. '0 2 * * *' for 02:00 every day.",
        id="bound-without-cron",
    ),
    pytest.param(
        "-- freshness cron 0 25 * * * lower_bound=1h",
        "f.sql:2:19: cron schedule '0 25 * * *' is not valid: '25' is not a valid hour (0-23). "
        "Write five fields: minute hour day-of-month month day-of-week, e.g. '0 2 * * *'.",
        id="bad-cron",
    ),
    pytest.param(
        "-- freshness cron 0 9 * * * lower_bound=2d",
        "f.sql:2:29: 'lower_bound=2d' is longer than the time between two ticks of '0 9 * * *'. "
        "Make 'lower_bound=' at most the cron's smallest interval, e.g. 'lower_bound=1h' for a daily cron.",
        id="bound-over-interval",
    ),
    pytest.param(
        "-- freshness cron 0 9 * * * lower_bound=1h warn=1h",
        f"f.sql:2:44: 'warn=' belongs to a time window, not a cron deadline. Write {FORMS}.",
        id="cron-with-warn",
    ),
    pytest.param(
        "-- freshness cron 0 9 * * * lower_bound=1h tz=Mars/Base",
        "f.sql:2:44: unknown time zone 'Mars/Base'. Use an IANA name, e.g. 'tz=Europe/Berlin' or 'tz=UTC'.",
        id="bad-zone",
    ),
    pytest.param(
        "-- freshness cron 0 9 * * * lowerbound=1h",
        "f.sql:2:29: unknown freshness option 'lowerbound=1h'. Did you mean 'lower_bound='?",
        id="bound-typo",
    ),
    pytest.param(
        "-- freshness fail=26h\n-- freshness fail=2h",
        "f.sql:3:4: freshness is already set on line 2. An asset has one freshness policy; keep one '-- freshness' line.",
        id="two-lines",
    ),
    pytest.param(
        "-- freshnes fail=26h", "f.sql:2:4: unknown annotation 'freshnes'. Did you mean 'freshness'?", id="keyword-typo"
    ),
]


@pytest.mark.parametrize("line, expected", INVALID)
def test_freshness_error(line, expected):
    assert header_errors(line) == [expected]


def test_the_spec_carries_the_line_and_the_asset_the_policy(tmp_path):
    text = M + "-- freshness fail=26h warn=24h\n\nSELECT 1 AS id\n"
    spec, problems = parse_file("f.sql", text)
    assert problems == []
    assert spec.freshness == FreshnessSpec(fail=26 * H, warn=24 * H)
    (tmp_path / "a.sql").write_text(text)
    (tmp_path / "b.sql").write_text(
        "-- materialize delta://a/u\n-- freshness cron 0 9 * * * lower_bound=1h tz=Europe/Berlin\n\nSELECT 1 AS id\n"
    )
    (tmp_path / "c.sql").write_text("-- materialize delta://a/v\n\nSELECT 1 AS id\n")
    specs = {s.key.to_user_string(): s for s in build_definitions(str(tmp_path), lake_root=str(tmp_path / "lake")).resolve_all_asset_specs()}
    assert specs["a/t"].freshness_policy == dg.FreshnessPolicy.time_window(fail_window=26 * H, warn_window=24 * H)
    assert specs["a/u"].freshness_policy == dg.FreshnessPolicy.cron(
        deadline_cron="0 9 * * *", lower_bound_delta=H, timezone="Europe/Berlin"
    )
    assert specs["a/v"].freshness_policy is None


def test_a_translator_overrides_the_policy(tmp_path):
    (tmp_path / "a.sql").write_text(M + "-- freshness fail=26h\n\nSELECT 1 AS id\n")
    (tmp_path / "b.sql").write_text("-- materialize delta://a/u\n\nSELECT 1 AS id\n")

    class DayForAll(AssetlakeTranslator):
        def get_freshness_policy(self, spec):
            return super().get_freshness_policy(spec) or dg.FreshnessPolicy.time_window(fail_window=24 * H)

    defs = build_definitions(str(tmp_path), lake_root=str(tmp_path / "lake"), translator=DayForAll())
    policies = {s.key.to_user_string(): s.freshness_policy for s in defs.resolve_all_asset_specs()}
    assert policies["a/t"] == dg.FreshnessPolicy.time_window(fail_window=26 * H)
    assert policies["a/u"] == dg.FreshnessPolicy.time_window(fail_window=24 * H)
