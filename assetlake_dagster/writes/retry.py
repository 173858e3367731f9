"""Bounded retries of a write that lost a race with a concurrent Delta commit.

Delta's optimistic concurrency rejects a commit whose reads or writes overlap a commit
made since the transaction began (e.g. two runs replacing the same partition). Each
strategy recomputes its diff from the table's new state, so simply running it again is
correct; after :data:`MAX_ATTEMPTS` the conflict is raised. A history attempt also takes a
fresh run timestamp after its re-read (never the failed attempt's, which may now be older
than the winner's), and checks it against the table under the table lock.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from assetlake_dagster.writes.base import WriteStrategyBase
from assetlake_dagster.writes.commit import WriteResult, WriteTarget

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, SparkSession


MAX_ATTEMPTS = 4
#: Delta's conflict error classes (Delta 4) and their older exception names.
CONFLICT_MARKERS = (
    "DELTA_CONCURRENT_",
    "DELTA_METADATA_CHANGED",
    "DELTA_PROTOCOL_CHANGED",
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "MetadataChangedException",
    "ProtocolChangedException",
    # A first write (mode "error") that found the table another run created after this
    # run checked for it: the retry sees the table and merges onto it.
    "DELTA_PATH_EXISTS",
    # The same race lost by a first write that creates the table with CREATE TABLE … AS
    # SELECT (writes/create.py).
    "TABLE_OR_VIEW_ALREADY_EXISTS",
)


def is_write_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is Delta's "a concurrent transaction got there first"."""
    text = f"{type(exc).__name__}: {exc}"
    return any(marker in text for marker in CONFLICT_MARKERS)


def write_with_retries(
    strategy: WriteStrategyBase, spark: SparkSession, df: DataFrame, target: WriteTarget, log: Any = None
) -> WriteResult:
    """Run ``strategy.write``; on a Delta write conflict, try again (bounded, with jitter)."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return strategy.write(spark, df, target)
        except Exception as exc:
            if attempt == MAX_ATTEMPTS or not is_write_conflict(exc):
                raise
            delay = 0.2 * attempt + random.random() * 0.3
            if log is not None:
                log.warning(
                    f"{target.uri}: a concurrent commit conflicted with this write "
                    f"(attempt {attempt}/{MAX_ATTEMPTS}); retrying in {delay:.1f}s"
                )
            time.sleep(delay)
    raise AssertionError("unreachable")
