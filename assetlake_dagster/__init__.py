"""assetlake_dagster: annotated Spark SQL files as Dagster assets with managed Delta writes.

The public API, pinned by ``assetlake_dagster_tests/unit/test_public_api.py`` and described in
``docs/your-project.md``: what a user calls (``build_definitions``, ``sql_run_config``,
``managed_write``, ``load_project``), names in a ``defs.yaml`` (``AssetlakeProjectComponent``),
configures (``SparkDeltaResource``, ``DeltaIOManager``), subclasses (``AssetlakeTranslator``),
receives in a translator's methods (``SqlAssetSpec``, ``TableUri``, with ``MaterializeSpec`` and
``WriteStrategy`` on the spec), passes to several ``build_definitions`` of one code location
(``NeighbourTable``) and catches (the errors). Everything else is internal and may move.

Importing the package imports Dagster but no engine library (PySpark, pandas, sqlglot): a code
location's load stays cheap.
"""

from assetlake_dagster.defs.build import build_definitions as build_definitions
from assetlake_dagster.defs.component import AssetlakeProjectComponent as AssetlakeProjectComponent
from assetlake_dagster.errors import (
    AssetlakeError as AssetlakeError,
    ConfigError as ConfigError,
    KeyViolationError as KeyViolationError,
    ProjectError as ProjectError,
    PublishError as PublishError,
    UsageError as UsageError,
    WriteError as WriteError,
)
from assetlake_dagster.defs.io_manager import DeltaIOManager as DeltaIOManager
from assetlake_dagster.defs.write_contract import managed_write as managed_write
from assetlake_dagster.defs.neighbours import NeighbourTable as NeighbourTable
from assetlake_dagster.project.load import Project as Project, load_project as load_project
from assetlake_dagster.defs.resources import SparkDeltaResource as SparkDeltaResource
from assetlake_dagster.defs.run_config import sql_run_config as sql_run_config
from assetlake_dagster.spec import (
    MaterializeSpec as MaterializeSpec,
    SqlAssetSpec as SqlAssetSpec,
    TableUri as TableUri,
    WriteStrategy as WriteStrategy,
)
from assetlake_dagster.defs.translator import AssetlakeTranslator as AssetlakeTranslator

__version__ = "0.1.0"

# Dagster lists the integration libraries a code location loaded, as it does dagster-dbt.
from assetlake_dagster.defs.dagster_internals import register_library as _register_library  # noqa: E402

_register_library("assetlake-dagster", __version__)

__all__ = [
    # Definitions
    "build_definitions",
    "AssetlakeProjectComponent",
    "sql_run_config",
    "load_project",
    "Project",
    "NeighbourTable",
    # The translator and what its methods take
    "AssetlakeTranslator",
    "SqlAssetSpec",
    "TableUri",
    "MaterializeSpec",
    "WriteStrategy",
    # Resource and IO manager
    "SparkDeltaResource",
    "DeltaIOManager",
    "managed_write",
    # Errors
    "AssetlakeError",
    "ConfigError",
    "KeyViolationError",
    "ProjectError",
    "PublishError",
    "UsageError",
    "WriteError",
]
