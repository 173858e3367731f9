"""The code location of ``test_data_test_retries``: this folder's SQL, one job.

The lake root comes from ``$ASSETLAKE_LAKE_ROOT`` (read when a step runs). The leading
underscore keeps ``build_definitions`` from importing this file as a Python asset module.
"""

import os

import dagster as dg

from assetlake_dagster.defs.build import build_definitions

ORDERS = dg.AssetKey(["mart", "orders"])

defs = dg.Definitions.merge(
    build_definitions(os.path.dirname(__file__)),
    dg.Definitions(jobs=[dg.define_asset_job("orders", selection=[ORDERS])]),
)
