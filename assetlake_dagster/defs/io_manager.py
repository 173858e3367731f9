"""The Delta IO manager: every asset output becomes one managed Delta commit.

SQL assets and Python assets share this path. The table and the strategy come from the
write contract in the asset's definition metadata (``assetlake/write``, a
:class:`~assetlake_dagster.spec.MaterializeSpec`), which SQL assets get from their
``-- materialize`` line (attached after the translator, so no override drops it) and
Python assets from :func:`~assetlake_dagster.defs.write_contract.managed_write`. Only a
Python asset whose contract names no table falls back to its key ``[schema, table]``.

This class is what the definitions hold; what it does in a run is
:mod:`assetlake_dagster.run.asset_io`, imported when a run writes or reads.

No ``from __future__ import annotations`` here: Dagster introspects IO manager fields.
"""

from typing import Any

import dagster as dg

from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.lake.root import Lake


class DeltaIOManager(dg.ConfigurableIOManager):
    """Writes asset outputs as managed Delta commits and loads inputs as DataFrames.

    Inputs load as Spark DataFrames, or pandas when the parameter is annotated
    ``pd.DataFrame``. Set input metadata ``{"assetlake/version": N}`` to read as of a
    Delta version.

    Example:
        >>> io_manager = DeltaIOManager(spark=SparkDeltaResource(lake_root="/tmp/lake"))
    """

    spark: dg.ResourceDependency[SparkDeltaResource]

    @property
    def lake(self) -> Lake:
        return self.spark.lake

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        from assetlake_dagster.run.asset_io import write_output

        write_output(self.spark, context, obj)

    def load_input(self, context: dg.InputContext) -> Any:
        from assetlake_dagster.run.asset_io import read_input

        return read_input(self.spark, context)
