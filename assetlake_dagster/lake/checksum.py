"""Row counts of a Delta version from its checksum file, without Spark.

After each commit delta-spark writes the version's checksum, ``_delta_log/%020d.crc``
(``PROTOCOL.md`` of ``delta-io/delta``, "Version Checksum File"): the version's
``numFiles`` and ``tableSizeBytes`` and, for a table of few files, ``allFiles``: every
``add`` action of the version, each with its statistics (``numRecords``) and its
``partitionValues``. From it the rows of the version (of the whole table, of some
partitions, per partition) are a sum, read from one small file.

A count from Spark (``COUNT(*)``, which Delta answers from the same statistics) first
rebuilds the version's state from the log: three Spark jobs on a small table (about 0.3 s
warm in process, 1 s on a warm engine compiling with C1), on every merge, append and history
write. The materialization metadata asks here first and counts
with Spark only when the checksum cannot answer: :func:`version_file_rows` returns ``None``
then, never a guess.

Example:
    >>> files = [FileRows({"_partition": "d1"}, 3), FileRows({"_partition": "d2"}, 4)]
    >>> rows_in(files), rows_in(files, "_partition", ["d2"]), rows_by_partition(files, "_partition", ["d1", "d3"])
    (7, 4, {'d1': 3, 'd3': 0})
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from assetlake_dagster.lake.files import LOG_FOLDER, LakeFiles


#: Reader features that leave a data file without a deletion vector readable as plain
#: Parquet (``PROTOCOL.md``): anything else (column mapping, type widening, variants...)
#: makes the files need Delta's reader.
PLAIN_READER_FEATURES = frozenset({"deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})


@dataclass(frozen=True)
class FileRows:
    """One data file of a version.

    Attributes:
        partition_values: the file's partition values (strings, as the log holds them).
        rows: its live rows (``numRecords`` less the rows its deletion vector removes).
        path: the file as the log names it (relative to the table, URL-encoded).
        size: its bytes.
        plain: whether its rows are its Parquet rows as written (no deletion vector, and
            the table uses no reader feature that changes what a column means, such as
            column mapping): a reader without Delta may then read it
            (:mod:`assetlake_dagster.lake.arrow_preview`).
    """

    partition_values: Mapping[str, Optional[str]]
    rows: int
    path: str = ""
    size: int = 0
    plain: bool = False


def checksum_path(files: LakeFiles, table_path: str, version: int) -> str:
    """Where the checksum of ``version`` lives.

    Example:
        >>> from assetlake_dagster.lake.files import LocalFiles
        >>> checksum_path(LocalFiles(), "/lake/s/t", 7)
        '/lake/s/t/_delta_log/00000000000000000007.crc'
    """
    return files.join(table_path, LOG_FOLDER, f"{version:020d}.crc")


def version_file_rows(files: LakeFiles, table_path: str, version: int) -> Optional[list[FileRows]]:
    """Every data file of ``version`` with its rows, from the version's checksum.

    ``None`` when the checksum cannot answer exactly: no checksum file (or one that cannot
    be read), no ``allFiles`` in it (a table of many files), a file without a
    ``numRecords`` statistic, or a checksum that disagrees with itself (its ``numFiles`` or
    ``tableSizeBytes`` against its file list).
    """
    try:
        checksum = json.loads(files.read_bytes(checksum_path(files, table_path, version)))
    except Exception:  # missing, unreadable, not JSON: Spark counts instead
        return None
    return parse_checksum(checksum)


def parse_checksum(checksum: Any) -> Optional[list[FileRows]]:
    """The files and rows of a parsed checksum (see :func:`version_file_rows`), or ``None``.

    Example:
        >>> add = {"path": "a.parquet", "size": 10, "partitionValues": {}, "stats": '{"numRecords": 5}',
        ...        "deletionVector": {"cardinality": 2}}
        >>> parse_checksum({"numFiles": 1, "tableSizeBytes": 10, "allFiles": [add]})
        [FileRows(partition_values={}, rows=3, path='a.parquet', size=10, plain=False)]
        >>> parse_checksum({"numFiles": 2, "tableSizeBytes": 10, "allFiles": [add]}) is None
        True
    """
    if not isinstance(checksum, dict):
        return None
    adds = checksum.get("allFiles")
    if not isinstance(adds, list) or checksum.get("numFiles") != len(adds):
        return None
    plain_table = _plain_table(checksum)
    found = []
    for add in adds:
        file = _file_rows(add, plain_table)
        if file is None:
            return None
        found.append(file)
    return found if checksum.get("tableSizeBytes") == sum(f.size for f in found) else None


def _plain_table(checksum: dict) -> bool:
    """Whether the version's metadata and protocol leave its files plain Parquet: no column
    mapping and no reader feature outside :data:`PLAIN_READER_FEATURES`."""
    metadata, protocol = checksum.get("metadata"), checksum.get("protocol")
    if not isinstance(metadata, dict) or not isinstance(protocol, dict):
        return False
    configuration = metadata.get("configuration") or {}
    features = protocol.get("readerFeatures") or []
    return (
        isinstance(configuration, dict)
        and configuration.get("delta.columnMapping.mode", "none") == "none"
        and isinstance(features, list)
        and set(features) <= PLAIN_READER_FEATURES
    )


def _file_rows(add: Any, plain_table: bool = False) -> Optional[FileRows]:
    if not isinstance(add, dict) or not _is_count(add.get("size")):
        return None
    try:
        records = json.loads(add.get("stats") or "null")
    except ValueError:
        return None
    records = records.get("numRecords") if isinstance(records, dict) else None
    deletion_vector = add.get("deletionVector")
    deleted = 0
    if deletion_vector is not None:
        deleted = deletion_vector.get("cardinality") if isinstance(deletion_vector, dict) else None
    values = add.get("partitionValues", {})
    path = add.get("path")
    if not _is_count(records) or not _is_count(deleted) or deleted > records or not isinstance(values, dict):
        return None
    if not isinstance(path, str):
        return None
    return FileRows(values, records - deleted, path, add["size"], plain_table and deletion_vector is None)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def rows_in(files: Sequence[FileRows], column: Optional[str] = None, values: Sequence[str] = ()) -> Optional[int]:
    """Rows of the whole version, or of the files whose partition ``column`` is one of
    ``values``; ``None`` when ``column`` is not a partition column of every file (a
    clustered table's column, a column-mapped name): the files cannot say then."""
    if column is None:
        return sum(f.rows for f in files)
    counts = rows_by_partition(files, column, values)
    return None if counts is None else sum(counts.values())


def rows_by_partition(files: Sequence[FileRows], column: str, values: Sequence[str]) -> Optional[dict[str, int]]:
    """Rows per value of the partition ``column`` for each of ``values`` (0 for a value
    without files); ``None`` as for :func:`rows_in`."""
    sliced = slice_files(files, column, values)
    if sliced is None:
        return None
    counts = dict.fromkeys(values, 0)
    for f in sliced:
        counts[f.partition_values[column]] += f.rows
    return counts


def slice_files(files: Sequence[FileRows], column: str, values: Sequence[str]) -> Optional[list[FileRows]]:
    """The files whose partition ``column`` holds one of ``values``; ``None`` as for
    :func:`rows_in` (the files cannot say which rows are in the slice)."""
    if any(column not in f.partition_values for f in files):
        return None
    wanted = set(values)
    return [f for f in files if f.partition_values[column] in wanted]



def checksum_file_statistics(checksum: Any) -> Optional[list[Optional[str]]]:
    """The ``stats`` (JSON text, ``None`` for a file without) of every file a parsed checksum
    lists; ``None`` when it lists none or not all of them (a table of many files).

    Example:
        >>> checksum_file_statistics({"numFiles": 1, "allFiles": [{"stats": '{"numRecords": 1}'}]})
        ['{"numRecords": 1}']
    """
    adds = checksum.get("allFiles") if isinstance(checksum, dict) else None
    if not isinstance(adds, list) or checksum.get("numFiles") != len(adds):
        return None
    return [add.get("stats") if isinstance(add, dict) and isinstance(add.get("stats"), str) else None for add in adds]
