"""``build_definitions``: a project folder -> ``dagster.Definitions``."""

import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Optional, Union

import dagster as dg

from assetlake_dagster.assets import SPARK_RESOURCE_KEY, build_sql_asset
from assetlake_dagster.io_manager import DeltaIOManager
from assetlake_dagster.errors import ProjectError, SourceText
from assetlake_dagster.project import Project, load_project
from assetlake_dagster.resources import SparkDeltaResource
from assetlake_dagster.translator import AssetlakeTranslator

AssetLike = Union[dg.AssetsDefinition, dg.AssetSpec]


def build_definitions(
    project_dir: Union[str, os.PathLike],
    *,
    lake_root: Optional[str] = None,
    spark: Optional[SparkDeltaResource] = None,
    translator: Optional[AssetlakeTranslator] = None,
    python_assets: Sequence[AssetLike] = (),
    load_python_files: bool = True,
    schedules: Iterable = (),
    sensors: Iterable = (),
) -> dg.Definitions:
    """Turn a folder of annotated SQL files (plus Python assets) into Dagster definitions.

    Every ``*.sql`` file under ``project_dir`` becomes an asset; tables they read that
    nothing produces become external assets. Every ``*.py`` file in the folder is imported
    and its assets added (turn off with ``load_python_files=False``). All files' load errors
    are raised together as one :class:`~assetlake_dagster.errors.ProjectError`.

    Args:
        project_dir: the folder of SQL files.
        lake_root: where the Delta tables live (default: ``$ASSETLAKE_LAKE_ROOT``, else
            ``.assetlake/lake``). Ignored when ``spark`` is given.
        spark: the Spark resource, for a cluster, Spark Connect or extra Spark conf.
        translator: overrides how specs become Dagster attributes.
        python_assets: more assets (written by the same Delta IO manager by default).
        load_python_files: import ``*.py`` files found in ``project_dir``.

    Returns:
        Definitions with the assets, the ``spark`` resource, the Delta IO manager as the
        default ``io_manager``, and the in-process executor (one JVM for the whole run).

    Example:
        >>> defs = build_definitions("pipelines/", lake_root="/data/lake")  # doctest: +SKIP
        >>> dg.materialize(defs.resolve_all_asset_specs())  # doctest: +SKIP
    """
    translator = translator or AssetlakeTranslator()
    project = load_project(project_dir)
    extra: list[AssetLike] = list(python_assets)
    if load_python_files:
        extra.extend(load_python_assets(str(project_dir)))
    sql_assets = [build_sql_asset(spec, translator) for spec in project.assets]

    produced = {key for a in extra for key in _keys(a)}
    readers: dict = {}
    for spec in project.assets:
        for up in spec.upstreams:
            readers.setdefault(up.uri, []).append(spec.uri.sql_name)
    external = [
        translator.get_external_asset_spec(uri, readers.get(uri))
        for uri in project.external
        if translator.get_external_asset_key(uri) not in produced
    ]
    known = {translator.get_asset_key(spec) for spec in project.assets} | produced
    known |= {translator.get_external_asset_key(uri) for uri in project.external}
    _check_test_references(project, known)
    resource = spark or SparkDeltaResource(lake_root=lake_root)
    return dg.Definitions(
        assets=[*sql_assets, *external, *extra],
        schedules=list(schedules),
        sensors=list(sensors),
        resources={SPARK_RESOURCE_KEY: resource, "io_manager": DeltaIOManager(spark=resource)},
        executor=dg.in_process_executor,
    )


def _check_test_references(project: Project, known: set) -> None:
    """``relationships … -> delta://s/t.c`` must name an asset of these definitions."""
    problems = []
    for spec in project.assets:
        for test in spec.data_tests:
            if test.ref_uri is not None and dg.AssetKey(test.ref_uri.asset_key_path) not in known:
                with open(spec.path, encoding="utf-8") as f:
                    src = SourceText.of(spec.path, f.read())
                where = test.location
                problems.append(
                    src.diagnostic(
                        where.line,
                        where.col,
                        f"data test references {test.ref_uri}, which is no asset of this project.",
                        "Point it at a table a SQL file or Python asset produces, or one the SQL reads.",
                        span=len(test.columns[0]),
                    )
                )
    if problems:
        raise ProjectError(problems)


def load_python_assets(project_dir: str) -> list[AssetLike]:
    """Import each ``*.py`` file directly in ``project_dir``; collect its assets."""
    found: list[AssetLike] = []
    for name in sorted(os.listdir(project_dir)):
        if not name.endswith(".py") or name.startswith("_"):
            continue
        path = os.path.join(project_dir, name)
        module_name = f"assetlake_project_{abs(hash(os.path.abspath(path)))}_{name[:-3]}"
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            assert spec and spec.loader
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
        found.extend(v for v in vars(module).values() if isinstance(v, (dg.AssetsDefinition, dg.AssetSpec)))
    return found


def _keys(asset: AssetLike) -> set[dg.AssetKey]:
    return {asset.key} if isinstance(asset, dg.AssetSpec) else set(asset.keys)
