"""The watch sensor: external Delta tables' logs observed, their readers' runs requested.

- :mod:`~assetlake_dagster.defs.watch.sensor`: the sensor and its tick (cursor, observations,
  run requests, warnings); its docstring is the behaviour contract.
- :mod:`~assetlake_dagster.defs.watch.table_changes`: one table's new commits since the cursor,
  read from its Delta log.
- :mod:`~assetlake_dagster.defs.watch.partition_keys`: changed files' partition values mapped
  to the reader's partition keys.
"""

from assetlake_dagster.defs.watch.sensor import (
    WATCH_INTERVAL_ENV,
    WATCH_SENSOR_NAME,
    WATCH_TAG,
    build_watch_sensor,
    watch_interval_seconds,
)

__all__ = [
    "WATCH_INTERVAL_ENV",
    "WATCH_SENSOR_NAME",
    "WATCH_TAG",
    "build_watch_sensor",
    "watch_interval_seconds",
]
