"""Layer 2: what a schedule's tick requests and how generated jobs and schedules are named,
on hand-built asset entries (no project, no Spark)."""

import datetime as dt

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.errors import ConfigError, display_path
from assetlake_dagster.defs.schedules import AssetEntry, asset_schedules, check_generated_names, group_jobs, run_requests
from assetlake_dagster.spec import ScheduleSpec

UTC = dt.timezone.utc


def generated_names_checked(entries):
    """The group jobs and the schedules of ``entries``, their names checked together."""
    jobs, scheduled = group_jobs(entries), asset_schedules(entries)
    check_generated_names(entries)
    return jobs, scheduled


def _requested(partitions_def, at):
    found = run_requests(partitions_def, dg.build_schedule_context(scheduled_execution_time=at))
    if isinstance(found, dg.SkipReason):
        return found
    return [r.partition_key for r in found]


# -- time windows with end= ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "partitions_def, at, expected",
    [
        # The final partition is the one that closed last until the window after it would have
        # closed, as any other partition is (a daily tick of a monthly asset reruns the month).
        pytest.param(dg.DailyPartitionsDefinition("2026-01-01", end_date="2026-02-01"),
                     dt.datetime(2026, 2, 1, 2, tzinfo=UTC), ["2026-01-31"], id="daily-first-tick-after-end"),
        pytest.param(dg.MonthlyPartitionsDefinition("2026-01-01", end_date="2026-03-01"),
                     dt.datetime(2026, 3, 20, 2, tzinfo=UTC), ["2026-02-01"], id="monthly-within-next-month"),
        pytest.param(dg.DailyPartitionsDefinition("2026-01-01", end_date="2026-02-01"),
                     dt.datetime(2026, 1, 31, 2, tzinfo=UTC), ["2026-01-30"], id="daily-before-end"),
    ],
)
def test_a_tick_runs_the_final_partition_while_it_is_the_last_closed_one(partitions_def, at, expected):
    assert _requested(partitions_def, at) == expected


@pytest.mark.parametrize(
    "partitions_def, at",
    [
        pytest.param(dg.DailyPartitionsDefinition("2026-01-01", end_date="2026-02-01"),
                     dt.datetime(2026, 2, 2, 2, tzinfo=UTC), id="daily-next-day"),
        pytest.param(dg.DailyPartitionsDefinition("2026-01-01", end_date="2026-02-01"),
                     dt.datetime(2027, 6, 1, 2, tzinfo=UTC), id="daily-long-after"),
        pytest.param(dg.MonthlyPartitionsDefinition("2026-01-01", end_date="2026-03-01"),
                     dt.datetime(2026, 4, 1, 2, tzinfo=UTC), id="monthly-next-month-closed"),
        pytest.param(dg.HourlyPartitionsDefinition("2026-01-01-00:00", end_date="2026-01-02-00:00", timezone="Europe/Berlin"),
                     dt.datetime(2026, 1, 2, 5, tzinfo=UTC), id="hourly-berlin"),
    ],
)
def test_after_end_a_tick_skips_instead_of_rerunning_the_final_partition(partitions_def, at):
    found = _requested(partitions_def, at)
    assert isinstance(found, dg.SkipReason), f"requested {found}"
    assert "is the last partition (end=) and no window closed since: nothing to run" in found.skip_message


# -- generated names ------------------------------------------------------------------------------

SCHEDULED = "-- materialize delta://{schema}/{table}\n-- group {group}\n-- schedule 0 2 * * *\n\nSELECT 1 AS id\n"


def test_groups_that_would_share_a_job_or_schedule_name_are_a_located_error(tmp_path):
    """``a/b`` and ``a__b`` both become ``a__b`` in Dagster's names (letters, digits, ``_``):
    two jobs and two schedules of one name. Renaming one silently (``a__b_2_schedule``) would
    hand one group's schedule state and history to the other when a group is added; the
    load says which groups clash and where instead."""
    files = {
        "x1.sql": SCHEDULED.format(schema="x", table="one", group="a/b"),
        "x2.sql": SCHEDULED.format(schema="x", table="two", group="a/b"),
        "y1.sql": SCHEDULED.format(schema="y", table="one", group="a__b"),
        "y2.sql": SCHEDULED.format(schema="y", table="two", group="a__b"),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)

    with pytest.raises(ConfigError) as caught:
        build_definitions(tmp_path, lake_root=str(tmp_path / "lake"), load_python_files=False)

    where = display_path(str(tmp_path))
    hint = (
        "Dagster names allow only letters, digits and '_' (a group's '/' becomes '__'), so rename "
        "one of them: its '-- group' line (or the translator's get_group_name), or the table."
    )
    assert str(caught.value).splitlines() == [
        f"the job name 'a__b_job' is generated twice: for the group 'a/b' (x/one in {where}/x1.sql:1) "
        f"and for the group 'a__b' (y/one in {where}/y1.sql:1). {hint}",
        f"the schedule name 'a__b_schedule' is generated twice: for the schedule of the group 'a/b' "
        f"(x/one in {where}/x1.sql:3) and for the schedule of the group 'a__b' (y/one in {where}/y1.sql:3). {hint}",
        f"the job name 'a__b_schedule_job' is generated twice: for the schedule of the group 'a/b' "
        f"(x/one in {where}/x1.sql:3) and for the schedule of the group 'a__b' (y/one in {where}/y1.sql:3). {hint}",
    ]


def test_an_asset_schedule_and_a_group_schedule_of_one_name_clash_too():
    cron = ScheduleSpec("0 2 * * *")
    entries = [
        AssetEntry(dg.AssetKey(["a", "b"]), "a", schedule=cron),  # alone: named after its key
        AssetEntry(dg.AssetKey(["c", "one"]), "a/b", schedule=cron),  # two: named after the group
        AssetEntry(dg.AssetKey(["c", "two"]), "a/b", schedule=cron),
    ]
    with pytest.raises(ConfigError, match=r"^the schedule name 'a__b_schedule' is generated twice: "
                       r"for the schedule of a/b \(a/b\) and for the schedule of the group 'a/b' \(c/one\)\."):
        generated_names_checked(entries)


def test_distinct_groups_keep_their_plain_names():
    entries = [
        AssetEntry(dg.AssetKey(["x", "one"]), "a/b"),
        AssetEntry(dg.AssetKey(["y", "one"]), "a_b"),
        AssetEntry(dg.AssetKey(["z", "one"]), "sales"),
    ]
    assert sorted(j.name for j in generated_names_checked(entries)[0]) == ["a__b_job", "a_b_job", "sales_job"]
