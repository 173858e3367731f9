"""A table's latest version: read from its Delta log here when this process sees it, else
asked of Spark."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.lake import delta_log
from assetlake_dagster.lake.delta_sql import history_rows

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import SparkSession

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:/")


def current_version(spark: SparkSession, path: str) -> Optional[int]:
    """The table's latest version, or ``None`` when there is no table yet.

    Read from the log's listing when this process sees the table's folder
    (:func:`reads_log_here`), else with ``DESCRIBE HISTORY`` (2 Spark jobs).
    """
    if reads_log_here(path):
        try:
            return delta_log.latest_version(path)
        except delta_log.DeltaTableMissingError:
            return None
    rows = history_rows(spark, path, 1, "version")
    return int(rows[0]["version"]) if rows else None


def reads_log_here(path: str) -> bool:
    """Whether this process reads the Delta log of ``path`` from its own disk.

    Yes for a local path whose schema folder exists here: a classic session writes there,
    and a Spark Connect server of a local lake sees the same folder at the same path (as
    ``SparkDeltaResource`` requires). Reading the log's few small files directly costs no
    Spark job; ``DESCRIBE HISTORY`` costs two (0.2-0.7 s per call, several per write).
    """
    return not _URL.match(path) and os.path.isdir(os.path.dirname(os.path.normpath(path)))
