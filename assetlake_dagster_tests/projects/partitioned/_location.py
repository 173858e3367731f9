"""The code location of the `dagster dev` test: this folder's SQL.

The lake root comes from ``$ASSETLAKE_LAKE_ROOT`` (read when a step runs). The leading
underscore keeps ``build_definitions`` from importing this file as a Python asset module.
"""

import os

from assetlake_dagster.defs.build import build_definitions

defs = build_definitions(os.path.dirname(__file__))
