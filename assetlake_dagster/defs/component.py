"""``AssetlakeProjectComponent``: a folder of annotated SQL files as a component of a ``dg`` project.

The YAML face of :func:`~assetlake_dagster.defs.build.build_definitions`, following
``dagster_dbt.DbtProjectComponent``: a ``defs.yaml`` names the SQL folder, the lake and the
Spark settings, and ``translation`` changes the asset attributes with templates. Unlike the
Pythonic API's defaults, the component is a good neighbour in a project with other
components: its Delta IO manager has a resource key of its own (``assetlake_io_manager``),
and it sets no executor. ``post_processing`` is the ``defs.yaml`` key every component has.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional, Union

import dagster as dg
from dagster.components.component.component import Component
from dagster.components.component_scaffolding import scaffold_component
from dagster.components.core.context import ComponentLoadContext
from dagster.components.resolved.base import Resolvable
from dagster.components.resolved.model import Model
from dagster.components.scaffold.scaffold import Scaffolder, ScaffoldRequest, scaffold_with
from dagster.components.utils.translation import TranslationFn, TranslationFnResolver
from pydantic import BaseModel, Field, create_model

from assetlake_dagster.defs.assets import SPARK_RESOURCE_KEY
from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.errors import AssetlakeError, ConfigError, display_path
from assetlake_dagster.defs.io_manager import DeltaIOManager
from assetlake_dagster.lake.identity import canonical_lake_root
from assetlake_dagster.lake.storage import url_scheme
from assetlake_dagster.defs.neighbours import NeighbourTable
from assetlake_dagster.project.load import load_project
from assetlake_dagster.project.python_assets import PythonAsset, python_tables
from assetlake_dagster.project.seeds import seed_tables
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.spec import SqlAssetSpec, TableUri
from assetlake_dagster.defs.translator import AssetlakeTranslator

#: The resource key of the component's Delta IO manager (not the project's ``io_manager``).
COMPONENT_IO_MANAGER_KEY = "assetlake_io_manager"

EXAMPLE_SQL = """\
-- materialize delta://analytics/example
-- description An example table: replace this file with your own SELECTs.

SELECT 1 AS id, 'hello' AS greeting
"""


def _spark_settings() -> type[Model]:
    """The model of ``spark:``: every field of :class:`~assetlake_dagster.defs.resources.SparkDeltaResource`
    but ``lake_root`` (the component's own attribute), each optional (unset: the resource's
    default, which falls back to the environment), described as the resource describes it.

    Derived, so the two cannot drift: a new resource setting is a ``defs.yaml`` setting.
    """
    fields: dict[str, Any] = {}
    for name, info in SparkDeltaResource.model_fields.items():
        if name == "lake_root":
            continue
        fields[name] = (Optional[info.annotation], Field(default=None, description=info.description))
    return create_model(  # type: ignore[call-overload]
        "SparkSettings",
        __base__=Model,
        __doc__="The Spark resource's settings (unset: the resource's default).",
        __module__=__name__,
        **fields,
    )


#: ``spark:`` in ``defs.yaml`` (:func:`_spark_settings`).
SparkSettings = _spark_settings()


def _translation_vars(sql: SqlAssetSpec) -> Mapping[str, Any]:
    """What a ``translation`` template sees of a SQL file, beside ``spec`` (the AssetSpec)."""
    return {
        "sql": sql,
        "table": sql.materialize.uri.table,
        "schema": sql.materialize.uri.schema,
        "file": Path(sql.path).stem,
    }


#: One Spark resource and Delta IO manager per settings, shared by the components that name
#: the same: Dagster merges the components' resources under one key only when they are the
#: same object (and one lake has one warm engine).
_SHARED: dict[str, tuple[SparkDeltaResource, DeltaIOManager]] = {}


def _shared_resources(settings: Mapping[str, Any]) -> tuple[SparkDeltaResource, DeltaIOManager]:
    key = json.dumps(settings, sort_keys=True)
    if key not in _SHARED:
        spark = SparkDeltaResource(**settings)
        _SHARED[key] = (spark, DeltaIOManager(spark=spark))
    return _SHARED[key]


class _TranslatedTranslator(AssetlakeTranslator):
    """The component's translator: the assetlake attributes, then ``translation``'s."""

    def __init__(self, translation: TranslationFn[SqlAssetSpec]):
        self._translation = translation
        self._specs: dict[str, dg.AssetSpec] = {}
        self._untranslated: set[str] = set()  # files whose base spec is being made

    def get_asset_spec(self, spec: SqlAssetSpec) -> dg.AssetSpec:
        # Once per file: the key is asked for again for the deps of the files reading it.
        if spec.path not in self._specs:
            self._untranslated.add(spec.path)
            try:
                base = super().get_asset_spec(spec)
            finally:
                self._untranslated.discard(spec.path)
            self._specs[spec.path] = self._translation(base, spec)
        return self._specs[spec.path]

    def get_asset_key(self, spec: SqlAssetSpec) -> dg.AssetKey:
        if spec.path in self._untranslated:  # the base spec's key
            return super().get_asset_key(spec)
        return self.get_asset_spec(spec).key

    def bound_to(self, keys_by_table: Mapping[TableUri, dg.AssetKey]) -> "_TranslatedTranslator":
        # The specs made before binding name their upstreams by default keys: make them again.
        bound = super().bound_to(keys_by_table)
        bound._specs, bound._untranslated = {}, set()
        return bound


class AssetlakeProjectScaffolder(Scaffolder[BaseModel]):
    """``dg scaffold defs assetlake_dagster.AssetlakeProjectComponent <name>``: a ``defs.yaml``
    and ``sql/example.sql`` beside it."""

    def scaffold(self, request: ScaffoldRequest[BaseModel]) -> None:
        scaffold_component(request, {"project": "sql"})
        sql_dir = Path(request.target_path) / "sql"
        sql_dir.mkdir(parents=True, exist_ok=True)
        example = sql_dir / "example.sql"
        if not example.exists():
            example.write_text(EXAMPLE_SQL)


@scaffold_with(AssetlakeProjectScaffolder)
@dataclass
class AssetlakeProjectComponent(Component, Resolvable):
    """A folder of annotated Spark SQL files as Dagster assets with managed Delta writes.

    Everything :func:`~assetlake_dagster.defs.build.build_definitions` makes of the folder: an asset
    per SQL file, its checks, the external tables it reads, a job per group, a schedule per
    ``-- schedule`` line, the automation and watch sensors.

    Example ``defs.yaml``:

    .. code-block:: yaml

        type: assetlake_dagster.AssetlakeProjectComponent
        attributes:
          project: sql
          lake_root: /data/lake
          spark:
            spark_conf:
              spark.sql.shuffle.partitions: "8"
          translation:
            group_name: "lake_{{ schema }}"
          maintain:
            "*": "0 3 * * 0 vacuum=window"
    """

    project: str = field(metadata={"description": "The folder of SQL files, relative to this defs folder."})
    lake_root: Optional[str] = None
    spark: Optional[SparkSettings] = None
    translation: Optional[
        Annotated[
            TranslationFn[SqlAssetSpec],
            TranslationFnResolver(template_vars_for_translation_fn=_translation_vars),
        ]
    ] = None
    load_python_files: bool = True
    io_manager_key: str = COMPONENT_IO_MANAGER_KEY
    # ``spark``, as the Python assets of the folder name it (``spark: SparkDeltaResource``).
    spark_resource_key: str = SPARK_RESOURCE_KEY
    git_url: Optional[str] = None
    git_branch: Optional[str] = None
    maintain: Optional[Union[str, dict[str, str]]] = field(
        default=None,
        metadata={"description": "Scheduled OPTIMIZE/VACUUM for tables without a '-- maintain' line: that "
                  "line's text, or texts by group name ('*': every other group)."},
    )
    source_freshness: Optional[Union[str, dict[str, str]]] = field(
        default=None,
        metadata={"description": "Freshness checks of the external tables: a '-- freshness' line's text "
                  "('fail=26h'), or texts by schema.table ('*': every other one)."},
    )

    @classmethod
    def load(cls, attributes: Optional[BaseModel], context: ComponentLoadContext) -> "AssetlakeProjectComponent":
        component = super().load(attributes, context)
        # Its folder, for the sibling components that ask which tables it produces.
        component._defs_path = Path(context.path)
        return component

    def project_dir(self, context: ComponentLoadContext) -> Path:
        """The SQL folder: ``project`` relative to the component's defs folder."""
        return (Path(context.path) / self.project).resolve()

    def neighbour_tables(self, context: ComponentLoadContext) -> list[NeighbourTable]:
        """The tables the other assetlake components of the project produce.

        A component whose folder does not load is left out: its own build reports why.
        """
        tables = []
        for other in _siblings(self, context):
            defs_path = other._defs_path
            owner = f"the component {display_path(str(defs_path))}"
            try:
                project = load_project((defs_path / other.project).resolve(), load_python_files=other.load_python_files)
            except AssetlakeError:
                continue
            translator = other.translator()
            for spec in project.assets:
                where = str(spec.materialize.location or display_path(spec.path))
                tables.append(NeighbourTable(spec.uri, translator.get_asset_key(spec), where, owner))
            for table in [*python_tables([PythonAsset(asset) for asset in project.python_assets]), *seed_tables(project.seeds)]:
                tables.append(NeighbourTable(table.uri, table.key, table.describe(), owner))
        return tables

    def spark_resource(self) -> SparkDeltaResource:
        """The Spark resource of ``lake_root`` and ``spark`` (the same object for every
        component with the same settings)."""
        return self._resources()[0]

    def _resources(self) -> tuple[SparkDeltaResource, DeltaIOManager]:
        return _shared_resources(self._settings())

    def _settings(self) -> dict[str, Any]:
        settings = self.spark.model_dump(exclude_none=True) if self.spark else {}
        # A URL in canonical form: components on two spellings of one bucket are one lake (one
        # resource, one engine). A local root stays as written; the Lake resolves it.
        root = self.lake_root
        if root and url_scheme(root) is not None:
            root = canonical_lake_root(root)
        return {"lake_root": root, **settings}

    def _name_suffix(self, context: ComponentLoadContext) -> str:
        """``__<folder>`` for the generated names when the project has other assetlake
        components (each makes its own group jobs and sensors); none when it is alone."""
        if not _siblings(self, context):
            return ""
        try:
            folder = Path(context.path).relative_to(context.defs_module_path).as_posix()
        except ValueError:
            folder = Path(context.path).name
        return "__" + re.sub(r"[^A-Za-z0-9_]", "_", folder.replace("/", "__"))

    def _check_resource_keys(self, context: ComponentLoadContext) -> None:
        """Refuse what Dagster would refuse later without naming the components: a sibling
        with other ``lake_root``/``spark`` settings under one of the same resource keys."""
        for other in _siblings(self, context):
            shared = {self.spark_resource_key, self.io_manager_key} & {other.spark_resource_key, other.io_manager_key}
            if shared and other._settings() != self._settings():
                mine, theirs = display_path(str(context.path)), display_path(str(other._defs_path))
                raise ConfigError(
                    f"{mine}/defs.yaml: the components {theirs} and {mine} have different lake_root or spark "
                    f"settings under the same resource key {', '.join(repr(k) for k in sorted(shared))}. Give one "
                    "of them keys of its own (spark_resource_key: and io_manager_key:), or the same settings."
                )

    def translator(self) -> AssetlakeTranslator:
        """The translator ``build_defs`` uses; override to subclass ``AssetlakeTranslator``."""
        return _TranslatedTranslator(self.translation) if self.translation else AssetlakeTranslator()

    def build_defs(self, context: ComponentLoadContext) -> dg.Definitions:
        self._check_resource_keys(context)
        spark, io_manager = self._resources()
        return build_definitions(
            self.project_dir(context),
            spark=spark,
            io_manager=io_manager,
            translator=self.translator(),
            load_python_files=self.load_python_files,
            git_url=self.git_url,
            git_branch=self.git_branch,
            io_manager_key=self.io_manager_key,
            spark_resource_key=self.spark_resource_key,
            maintain=self.maintain,
            source_freshness=self.source_freshness,
            own_assets_only=True,  # the automation sensor and group jobs: not the others' assets
            name_suffix=self._name_suffix(context),
            neighbours=self.neighbour_tables(context),
            executor=None,  # the code location's: a component does not choose it for the others
        )


def _siblings(component: AssetlakeProjectComponent, context: ComponentLoadContext) -> list[AssetlakeProjectComponent]:
    """The project's other assetlake components (those that loaded: one whose ``defs.yaml``
    fails reports that itself)."""
    try:
        found = context.component_tree.get_all_components(AssetlakeProjectComponent)
    except Exception:  # noqa: BLE001 - see above
        return []
    return [c for c in found if c is not component and getattr(c, "_defs_path", None) is not None]
