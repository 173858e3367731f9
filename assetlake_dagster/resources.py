"""The Spark resource: one SparkSession per process, pointed at one lake root.

No ``from __future__ import annotations`` here: Dagster introspects resource fields.
"""

import os
from typing import Optional

import dagster as dg
from pydantic import Field
from pyspark.sql import SparkSession

from assetlake_dagster.lake import Lake, default_lake_root
from assetlake_dagster.spark_session import build_spark_session


class SparkDeltaResource(dg.ConfigurableResource):
    """A Delta-enabled SparkSession and the lake root its tables live under.

    The default is embedded: ``local[*]`` Spark with Delta, a local folder as the lake
    root and an in-memory session catalog (no metastore server, no cloud account). Point
    ``master`` at a cluster or ``remote`` at a Spark Connect server and the same SQL runs
    there unchanged. With ``remote``, ``spark_conf`` may hold only runtime (SQL) settings:
    the rest belongs to the server.

    Example:
        >>> resource = SparkDeltaResource(lake_root="/tmp/lake", spark_conf={"spark.sql.shuffle.partitions": "4"})
        >>> spark = resource.get_session()  # doctest: +SKIP
    """

    lake_root: Optional[str] = Field(
        default=None,
        description="Folder or URL holding the Delta tables (delta://s/t lives at <lake_root>/s/t). "
        "Default: $ASSETLAKE_LAKE_ROOT, else .assetlake/lake under the current directory.",
    )
    master: str = Field(default="local[*]", description="Spark master URL.")
    remote: Optional[str] = Field(
        default=None,
        description="Spark Connect URL, e.g. sc://localhost:15002 (wins over master). The server needs "
        "the Delta jars and SQL extension (python -m assetlake_dagster.connect_server starts one) and "
        "must see lake_root at the same path.",
    )
    app_name: str = Field(default="assetlake", description="Spark application name.")
    spark_conf: dict[str, str] = Field(
        default_factory=dict, description="Extra Spark settings; they win over the defaults."
    )

    @property
    def lake(self) -> Lake:
        return Lake(self.lake_root or default_lake_root())

    def get_session(self) -> SparkSession:
        """The process's SparkSession (created on first use, then reused by every step)."""
        lake = self.lake
        if not lake.is_url:
            os.makedirs(lake.root, exist_ok=True)
        return build_spark_session(
            master=self.master,
            remote=self.remote,
            app_name=self.app_name,
            spark_conf=self.spark_conf,
            warehouse_dir=lake.warehouse_dir,
        )
