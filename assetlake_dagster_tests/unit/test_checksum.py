"""Row counts from a Delta version's checksum file: exact, or nothing (Spark counts then)."""

import json

import pytest

from assetlake_dagster.lake.checksum import FileRows, parse_checksum, rows_by_partition, rows_in, version_file_rows
from assetlake_dagster.lake.files import LocalFiles
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.run.materialization_metadata import version_files_here
from assetlake_dagster.spark.session import driver_on_this_machine
from assetlake_dagster.writes import WriteResult


def add(rows, size=100, partition=None, deleted=None, stats=None):
    action = {
        "path": f"part-{rows}-{partition}.parquet",
        "size": size,
        "partitionValues": {} if partition is None else {"_partition": partition},
        "stats": stats if stats is not None else json.dumps({"numRecords": rows, "minValues": {}}),
    }
    if deleted is not None:
        action["deletionVector"] = {"storageType": "u", "pathOrInlineDv": "x", "cardinality": deleted}
    return action


def crc(*adds, **overrides):
    size = sum(a["size"] for a in adds if isinstance(a["size"], int))
    return {"numFiles": len(adds), "tableSizeBytes": size, "allFiles": list(adds), **overrides}


def counted(files):
    """The partition values and live rows of each file (what the counts use)."""
    return None if files is None else [(f.partition_values, f.rows) for f in files]


def test_each_files_records_less_its_deleted_rows():
    files = parse_checksum(crc(add(5, partition="d1"), add(4, partition="d2", deleted=3), add(2, partition="d2")))
    assert counted(files) == [({"_partition": "d1"}, 5), ({"_partition": "d2"}, 1), ({"_partition": "d2"}, 2)]
    assert rows_in(files) == 8
    assert rows_in(files, "_partition", ["d2"]) == 3
    assert rows_by_partition(files, "_partition", ["d1", "d2", "d3"]) == {"d1": 5, "d2": 3, "d3": 0}


def test_an_empty_version_has_no_rows():
    assert parse_checksum(crc()) == []
    assert rows_in([]) == 0 and rows_by_partition([], "_partition", ["d1"]) == {"d1": 0}


@pytest.mark.parametrize(
    "checksum",
    [
        pytest.param({"numFiles": 1, "tableSizeBytes": 100}, id="no file list (a table of many files)"),
        pytest.param(crc(add(5), numFiles=2), id="numFiles disagrees with the list"),
        pytest.param(crc(add(5), tableSizeBytes=99), id="tableSizeBytes disagrees with the list"),
        pytest.param(crc(add(5, stats="")), id="a file without statistics"),
        pytest.param(crc(add(5, stats='{"minValues": {}}')), id="statistics without numRecords"),
        pytest.param(crc(add(5, stats="{not json")), id="statistics that are not JSON"),
        pytest.param(crc(add(5, stats='{"numRecords": true}')), id="a numRecords that is not a count"),
        pytest.param(crc(add(5, stats='{"numRecords": -1}')), id="a negative numRecords"),
        pytest.param(crc(add(5, deleted=6)), id="more rows deleted than written"),
        pytest.param(crc(add(5, deleted="2")), id="a cardinality that is not a count"),
        pytest.param(crc(add(5, size=None)), id="a file without its size"),
        pytest.param([add(5)], id="not an object"),
    ],
)
def test_a_checksum_that_cannot_say_exactly_says_nothing(checksum):
    assert parse_checksum(checksum) is None


PLAIN = {"metadata": {"configuration": {}}, "protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}


def test_files_are_plain_parquet_only_without_deletion_vectors_or_reader_features():
    files = parse_checksum(crc(add(5), add(4, deleted=1), **PLAIN))
    assert [(f.path, f.size, f.plain) for f in files] == [("part-5-None.parquet", 100, True), ("part-4-None.parquet", 100, False)]
    features = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors", "timestampNtz"]}
    assert parse_checksum(crc(add(5), metadata={"configuration": {}}, protocol=features))[0].plain


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({}, id="no metadata or protocol in the checksum"),
        pytest.param({**PLAIN, "metadata": {"configuration": {"delta.columnMapping.mode": "name"}}}, id="column mapping"),
        pytest.param({**PLAIN, "protocol": {"readerFeatures": ["typeWidening"]}}, id="another reader feature"),
    ],
)
def test_a_table_that_needs_deltas_reader_has_no_plain_files(overrides):
    (file,) = parse_checksum(crc(add(5), **overrides))
    assert file.rows == 5 and not file.plain


def test_a_file_without_a_path_says_nothing():
    assert parse_checksum(crc({**add(5), "path": None})) is None


def test_a_column_that_is_not_every_files_partition_column_says_nothing():
    clustered = [FileRows({}, 5), FileRows({"_partition": "d1"}, 2)]
    assert rows_in(clustered, "_partition", ["d1"]) is None
    assert rows_by_partition(clustered, "_partition", ["d1"]) is None
    assert rows_in(clustered) == 7


def test_a_missing_or_damaged_checksum_file_says_nothing(tmp_path):
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    assert version_file_rows(LocalFiles(), str(tmp_path / "t"), 0) is None
    (log / "00000000000000000000.crc").write_text('{"numFiles": 1, "allFi')
    assert version_file_rows(LocalFiles(), str(tmp_path / "t"), 0) is None
    (log / "00000000000000000001.crc").write_text(json.dumps(crc(add(7))))
    assert counted(version_file_rows(LocalFiles(), str(tmp_path / "t"), 1)) == [({}, 7)]


class _Client:
    def __init__(self, host):
        self.host = host


def _connect_session(host):
    """An object the Connect check takes for a Spark Connect session (decided by class)."""
    cls = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})
    session = cls()
    session.client = _Client(host)
    return session


def test_only_a_driver_on_this_machine_reads_the_same_local_files():
    assert driver_on_this_machine(object())  # a classic session: the driver is this process
    assert driver_on_this_machine(_connect_session("localhost"))
    assert driver_on_this_machine(_connect_session("127.0.0.1"))
    assert not driver_on_this_machine(_connect_session("spark.example.com"))


def test_a_local_lake_is_read_here_only_when_the_driver_is_on_this_machine(tmp_path):
    log = tmp_path / "s" / "t" / "_delta_log"
    log.mkdir(parents=True)
    (log / "00000000000000000000.crc").write_text(json.dumps(crc(add(7))))
    lake, path = Lake(str(tmp_path)), str(tmp_path / "s" / "t")
    files, file_rows = version_files_here(_connect_session("localhost"), lake, path, 0)
    assert files.is_local and counted(file_rows) == [({}, 7)]
    # Another host's /same/path may hold other files: its Spark counts instead.
    assert version_files_here(_connect_session("spark.example.com"), lake, path, 0) == (None, None)
    assert version_files_here(object(), lake, path, None)[1] is None  # no version: nothing to read

