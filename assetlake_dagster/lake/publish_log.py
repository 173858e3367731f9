"""The lake's publish log: one row per publish of a ``-- publish_with`` group.

A group's tables commit one after the other (open-source Delta has no transaction over
several tables), so a reader of each table's latest version can, for a moment, see some of
them new and others not yet. The log says which versions belong together: after every
member of a group committed, its run appends one row (the group, the run, the time, and
each table's version), in one commit. Reading each table *as of* a publish's versions gives
a set that was published together::

    SELECT * FROM mart.orders VERSION AS OF 12

:func:`published_tables` reads the tables of a publish, pinned; ``assetlake published
<group>`` prints them. A group's publishes are numbered from 1, in the order they were logged.

The log is a Delta table in the lake, at ``<lake root>/_assetlake/publish_log``: any Spark
reader can query it (``SELECT * FROM delta.`<lake root>/_assetlake/publish_log```).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.delta_sql import is_delta_table, read
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import TableUri

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Where the log lives in the lake (a folder of its own beside the schemas).
PUBLISH_LOG = TableUri("_assetlake", "publish_log")
#: ``tables``: in the order the group committed them.
_SCHEMA = "group STRING, run_id STRING, published_at TIMESTAMP, tables ARRAY<STRUCT<table: STRING, version: BIGINT>>"


@dataclass(frozen=True)
class Publish:
    """One publish of a group.

    Attributes:
        group: the group's name.
        number: the publish's number in its group (from 1).
        run_id: the Dagster run that published it.
        published_at: when its last table had committed (UTC).
        versions: each table (``delta://schema/table``) and the version it was left at, in
            the order they were committed.
    """

    group: str
    number: int
    run_id: str
    published_at: dt.datetime
    versions: Mapping[str, int]


def record_publish(
    spark: "SparkSession", lake: Lake, group: str, run_id: str, versions: Mapping[TableUri, Optional[int]]
) -> int:
    """Append the publish of ``group`` by ``run_id`` to the lake's log (once per run: a
    retry of the append adds nothing); its number in the group.

    Example:
        >>> record_publish(spark, lake, "daily_sales", run_id, {TableUri("mart", "orders"): 12})  # doctest: +SKIP
        3
    """
    tables = [(str(uri), v) for uri, v in versions.items() if v is not None]
    row = (group, run_id, dt.datetime.now(dt.timezone.utc), tables)
    (
        spark.createDataFrame([row], _SCHEMA)
        .write.format("delta")
        .mode("append")
        # Delta skips a transaction of an app id it has applied: one row per run and group.
        .option("txnAppId", f"assetlake-publish:{run_id}:{group}")
        .option("txnVersion", 0)
        .save(lake.table_path(PUBLISH_LOG))
    )
    return next(p.number for p in publishes(spark, lake, group) if p.run_id == run_id)


def publishes(spark: "SparkSession", lake: Lake, group: str) -> list[Publish]:
    """The publishes of ``group``, oldest first (none when the lake has no log yet)."""
    path = lake.table_path(PUBLISH_LOG)
    if not is_delta_table(spark, path):
        return []
    from pyspark.sql import functions as F

    rows = read(spark, path).where(F.col("group") == F.lit(group)).collect()  # the name is a value, not SQL
    rows.sort(key=lambda r: (r["published_at"], r["run_id"]))
    return [
        Publish(group, number, r["run_id"], r["published_at"], {t["table"]: t["version"] for t in r["tables"] or ()})
        for number, r in enumerate(rows, start=1)
    ]


def find_publish(spark: "SparkSession", lake: Lake, group: str, number: Optional[int] = None) -> Publish:
    """Publish ``number`` of ``group`` (default: its latest).

    Raises:
        ConfigError: the group has no such publish.
    """
    return pick_publish(publishes(spark, lake, group), group, lake, number)


def pick_publish(found: list[Publish], group: str, lake: Lake, number: Optional[int] = None) -> Publish:
    """Publish ``number`` (default: the latest) of ``found``, the publishes of ``group``.

    Raises:
        ConfigError: the group has no such publish.
    """
    if not found:
        raise ConfigError(
            f"publish group '{group}' has no publish in the lake at {lake.root}. Materialize the group's "
            "tables together (a run of any of them runs them all), then ask again."
        )
    if number is None:
        return found[-1]
    if not 1 <= number <= len(found):
        raise ConfigError(f"publish group '{group}' has publishes 1..{len(found)}; there is no publish {number}.")
    return found[number - 1]


def published_tables(
    spark: "SparkSession", lake: Lake, group: str, number: Optional[int] = None
) -> dict[str, "DataFrame"]:
    """Each table of a group's publish, read as of the version that publish left it at.

    Example:
        >>> tables = published_tables(spark, Lake("/data/lake"), "daily_sales")  # doctest: +SKIP
        >>> tables["delta://mart/orders"].count()  # doctest: +SKIP
        1204
    """
    publish = find_publish(spark, lake, group, number)
    return {name: read(spark, lake.table_path(TableUri.parse(name)), version) for name, version in publish.versions.items()}
