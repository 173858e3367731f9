"""Whether a whole-table replace would write the rows the table holds already.

A Python asset's function runs on every run (it is the user's code), and a replace then wrote a
new version of the same rows, which woke everything downstream. Its rows are fingerprinted
instead (their count and two order-independent sums of 64- and 32-bit row hashes, with the
schema, its column comments included); the fingerprint rides in the commit's stamp
(``content``), and the next replace whose rows give the same fingerprint, over a table whose
latest row-changing commit carries it, commits nothing. A SQL file's replace is not
fingerprinted: its run is skipped before any work when its inputs did not change
(:mod:`~assetlake_dagster.run.decision`), and when they did, its rows almost always did too.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake import delta_log
from assetlake_dagster.spec import quote_identifier
from assetlake_dagster.writes.commit import CONTENT_FIELD, stamp_in

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

#: The most recent commits searched for the latest one that changed rows.
_SEARCHED_COMMITS = 20


def content_fingerprint(rows: DataFrame) -> Optional[str]:
    """The fingerprint of ``rows`` (one aggregation), or ``None`` when a column's type cannot
    be hashed by Spark (a map).

    Example:
        >>> content_fingerprint(spark.createDataFrame([(1, "a")], "id INT, v STRING"))  # doctest: +SKIP
        '9f1c…'
    """
    values = hash_values(rows.schema)
    if values is None:
        return None
    row = rows.selectExpr(
        "count(1) AS n",
        f"sum(CAST(xxhash64({values}) AS DECIMAL(38, 0))) AS h64",
        f"sum(CAST(hash({values}) AS DECIMAL(38, 0))) AS h32",
    ).first()
    digest = hashlib.sha256(rows.schema.json().encode())
    digest.update(f"{row['n']}:{row['h64']}:{row['h32']}".encode())
    return digest.hexdigest()[:32]


def hash_values(schema: StructType) -> Optional[str]:
    """The arguments of Spark's row hashes (``xxhash64``, ``hash``) over every column of
    ``schema``, each with its NULL flag: a NULL is skipped by the hashes, so (1, NULL) and
    (NULL, 1) would hash alike. ``None`` when a column holds a map, which Spark cannot hash.

    Example:
        >>> hash_values(StructType.fromDDL("id INT, v STRING"))  # doctest: +SKIP
        '`id`, `id` IS NULL, `v`, `v` IS NULL'
    """
    if any("map<" in field.dataType.simpleString() for field in schema.fields):
        return None
    return ", ".join(f"{quote_identifier(c)}, {quote_identifier(c)} IS NULL" for c in schema.fieldNames()) or "1"


def latest_content(path: str) -> Optional[tuple[int, str]]:
    """``(version, fingerprint)`` of the table's latest commit that changed rows, when that
    commit is a replace that recorded one and no commit changed rows after it; else ``None``."""
    return latest_stamp_field(path, CONTENT_FIELD)


def latest_stamp_field(path: str, name: str) -> Optional[tuple[int, str]]:
    """``(version, value)`` of the stamp field ``name`` of the table's latest commit that
    changed rows, when that commit's stamp has it; else ``None``.

    Read from the Delta log's last few commits, without Spark.
    """
    try:
        log = delta_log.DeltaLog.open(path)
        first = max(log.first_readable, log.latest_version - _SEARCHED_COMMITS + 1)
        commits = log.read_commits(first - 1)
    except (AssetlakeError, OSError):
        return None
    for commit in reversed(commits):
        if not commit.data_changed:
            continue
        value = stamp_in(commit.user_metadata).get(name)
        return (commit.version, value) if isinstance(value, str) else None
    return None
