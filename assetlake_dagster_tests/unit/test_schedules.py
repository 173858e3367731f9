"""Layer 2: what a schedule's tick requests and how generated jobs and schedules are named,
on hand-built asset entries (no project, no Spark)."""

import datetime as dt

import dagster as dg
import pytest

from assetlake_dagster.schedules import run_requests

UTC = dt.timezone.utc


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
