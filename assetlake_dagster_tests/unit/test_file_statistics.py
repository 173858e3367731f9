"""Layer 1: bounds on a table's timestamps from its files' statistics (checksum or log), no Spark."""

import json
import os

import pytest

from assetlake_dagster.lake.file_statistics import table_timestamp_bound, timestamp_bound

HOUR = 3600 * 1_000_000
START = 1704067200 * 1_000_000  # 2024-01-01T00:00Z


def stats(rows, highs, nulls=None):
    return json.dumps({"numRecords": rows, "maxValues": highs, "nullCount": nulls or {}})


def test_the_bound_is_the_highest_maximum_plus_the_statistics_truncation():
    files = [
        stats(3, {"valid_from": "2024-01-01T01:00:00.000Z", "valid_to": "2024-01-01T02:00:00.500+01:00"}),
        # every valid_to NULL: it has no maximum and bounds nothing
        stats(2, {"valid_from": "2024-01-01T00:30:00.000Z"}, {"valid_to": 2}),
    ]
    # 02:00:00.500+01:00 is 01:00:00.500Z; a millisecond is added for the statistics' truncation
    assert timestamp_bound(files, ["valid_from", "valid_to"]) == START + HOUR + 500_000 + 1000


@pytest.mark.parametrize(
    "files",
    [
        [stats(2, {"valid_to": "2024-01-01T00:00:00.000Z"}, {"valid_from": 1})],
        [json.dumps({"numRecords": 2})],
        [None],
        [stats(1, {"valid_from": "2024-01-01T00:00:00", "valid_to": "2024-01-01T00:00:00"})],  # no zone
    ],
    ids=["values-without-statistic", "no-statistics", "stats-missing", "no-zone"],
)
def test_statistics_that_cannot_bound_every_value_give_no_bound(files):
    assert timestamp_bound(files, ["valid_from", "valid_to"]) is None


def _log(table, version, *actions):
    folder = table / "_delta_log"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_a_table_without_a_checksum_is_bounded_from_its_log(tmp_path):
    table = tmp_path / "t"
    commit = {"commitInfo": {"operation": "WRITE"}}
    _log(table, 0, commit, {"add": {"path": "a.parquet", "stats": stats(1, {"valid_from": "2024-01-01T01:00:00.000Z"}, {"valid_to": 1})}})
    _log(table, 1, commit, {"remove": {"path": "a.parquet"}},
         {"add": {"path": "b.parquet", "stats": stats(1, {"valid_from": "2024-01-01T00:00:00.000Z", "valid_to": "2024-01-01T00:30:00.000Z"})}})
    # The removed file still counts: a superset of the live files, so still a bound.
    assert table_timestamp_bound(str(table), ["valid_from", "valid_to"]) == START + HOUR + 1000
    assert table_timestamp_bound(str(tmp_path / "missing"), ["valid_from", "valid_to"]) is None  # no table
    # A checksum listing the files answers first.
    (table / "_delta_log" / f"{1:020d}.crc").write_text(json.dumps(
        {"numFiles": 1, "allFiles": [{"path": "b.parquet", "stats": stats(1, {"valid_from": "2024-01-01T00:00:00.000Z", "valid_to": "2024-01-01T00:30:00.000Z"})}]}
    ))
    assert table_timestamp_bound(str(table), ["valid_from", "valid_to"]) == START + HOUR // 2 + 1000
    _log(table, 2, commit, {"add": {"path": "c.parquet"}})  # a file without statistics
    assert table_timestamp_bound(str(table), ["valid_from", "valid_to"]) is None
