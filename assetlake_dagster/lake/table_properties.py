"""A Delta table's properties (``TBLPROPERTIES``), read from its log without Spark."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake import delta_log
from assetlake_dagster.lake.files import LakeFiles

#: The property that gives a table deletion vectors.
DELETION_VECTORS_PROPERTY = "delta.enableDeletionVectors"
#: The property that makes Delta keep a table's change data feed.
CHANGE_DATA_FEED_PROPERTY = "delta.enableChangeDataFeed"


def table_properties(path: str, files: Optional[LakeFiles] = None) -> dict[str, str]:
    """The properties of the table at ``path`` (its ``metaData.configuration``); ``{}`` when
    there is no table or its log cannot be read here.

    Example:
        >>> table_properties("/no/such/table")
        {}
    """
    try:
        return dict(delta_log.DeltaLog.open(path, files).read_metadata().configuration)
    except (AssetlakeError, OSError):
        return {}


def is_enabled(properties: Mapping[str, str], name: str) -> bool:
    """Whether the boolean property ``name`` is on in ``properties`` (Delta accepts any case).

    Example:
        >>> is_enabled({"delta.enableChangeDataFeed": "TRUE"}, CHANGE_DATA_FEED_PROPERTY)
        True
    """
    return str(properties.get(name, "")).strip().lower() == "true"
