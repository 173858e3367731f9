"""assetlake_dagster: annotated Spark SQL files as Dagster assets with managed Delta writes."""

from assetlake_dagster.build import build_definitions as build_definitions
from assetlake_dagster.errors import (
    AssetlakeError as AssetlakeError,
    ConfigError as ConfigError,
    KeyViolationError as KeyViolationError,
    ProjectError as ProjectError,
    WriteError as WriteError,
)
from assetlake_dagster.io_manager import (
    DeltaIOManager as DeltaIOManager,
    managed_write as managed_write,
)
from assetlake_dagster.project import Project as Project, load_project as load_project
from assetlake_dagster.resources import SparkDeltaResource as SparkDeltaResource
from assetlake_dagster.run_config import sql_run_config as sql_run_config
from assetlake_dagster.translator import AssetlakeTranslator as AssetlakeTranslator

__version__ = "0.1.0"
