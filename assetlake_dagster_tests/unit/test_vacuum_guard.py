"""The VACUUM guard's arithmetic, without Spark: which retention keeps which version."""

import datetime as dt

import pytest

from assetlake_dagster.lake.maintenance import Need, VacuumRefused, check_vacuum, required_hours, retention_hours
from assetlake_dagster.spec import TableUri

T0 = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
#: Versions 0..3 committed at T0, T0+10h, T0+30h, T0+100h; "now" is T0+120h.
TIMES = {0: T0, 1: T0 + dt.timedelta(hours=10), 2: T0 + dt.timedelta(hours=30), 3: T0 + dt.timedelta(hours=100)}
NOW = T0 + dt.timedelta(hours=120)
URI = TableUri("s", "t")


@pytest.mark.parametrize(
    "version, hours",
    [(0, 110), (1, 90), (2, 20), (3, 0), (9, 0)],  # the current version, or one not in the log, needs nothing
)
def test_a_version_needs_the_age_of_its_successor(version, hours):
    assert required_hours(version, TIMES, NOW) == hours


def test_the_oldest_needed_version_decides_and_is_named():
    needs = [Need(2, "read by s/d"), Need(0, "pinned by s/p's input 't'"), Need(3, "current")]
    with pytest.raises(VacuumRefused, match=r"version 0 \(pinned by s/p's input 't'\)\. The oldest safe retention is 110 hours"):
        check_vacuum(URI, 100, 24, needs, TIMES, NOW)
    check_vacuum(URI, 110, 24, needs, TIMES, NOW)  # exactly enough: allowed


def test_a_retention_below_the_window_is_refused_even_without_needs():
    with pytest.raises(VacuumRefused, match="shorter than the table's restore window of 2 days"):
        check_vacuum(URI, 47, 48, [], TIMES, NOW)
    check_vacuum(URI, 48, 48, [], TIMES, NOW)


@pytest.mark.parametrize(
    "properties, hours",
    [
        ({}, 168),
        ({"delta.deletedFileRetentionDuration": "interval 2 days"}, 48),
        ({"delta.deletedFileRetentionDuration": "interval 1 week"}, 168),
        ({"delta.deletedFileRetentionDuration": "interval 36 hours"}, 36),
        ({"delta.deletedFileRetentionDuration": "interval 0 hours"}, 0),
    ],
)
def test_the_restore_window_is_the_tables_deleted_file_retention(properties, hours):
    assert retention_hours(properties) == hours
