"""The code location ``workspace.yaml`` loads. No library logic here.

Environment:
    ASSETLAKE_PROJECT_DIR: the folder of SQL files (default: the bundled demo).
    ASSETLAKE_LAKE_ROOT: where Delta tables live (default: ``.assetlake/lake``).

Example:
    ASSETLAKE_PROJECT_DIR=pipelines/ dagster dev -m assetlake_dagster.definitions
"""

import os

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.demo import DEMO_PROJECT_DIR

PROJECT_DIR_ENV = "ASSETLAKE_PROJECT_DIR"

defs = build_definitions(os.environ.get(PROJECT_DIR_ENV) or DEMO_PROJECT_DIR)
