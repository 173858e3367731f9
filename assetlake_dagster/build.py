"""``build_definitions``: a project folder -> ``dagster.Definitions``."""

import os
from collections.abc import Iterable, Sequence
from typing import Optional, Union

import dagster as dg

from assetlake_dagster.assets import SPARK_RESOURCE_KEY, build_sql_asset
from assetlake_dagster.io_manager import DeltaIOManager
from assetlake_dagster.project import load_project
from assetlake_dagster.python_assets import AssetLike
from assetlake_dagster.resources import SparkDeltaResource
from assetlake_dagster.translator import AssetlakeTranslator

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
    # The one load: every file's problems, the cross-file ones included, come from here.
    project = load_project(project_dir, python_assets=python_assets, load_python_files=load_python_files)
    extra: list[AssetLike] = list(project.python_assets)
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
    resource = spark or SparkDeltaResource(lake_root=lake_root)
    return dg.Definitions(
        assets=[*sql_assets, *external, *extra],
        schedules=list(schedules),
        sensors=list(sensors),
        resources={SPARK_RESOURCE_KEY: resource, "io_manager": DeltaIOManager(spark=resource)},
        executor=dg.in_process_executor,
    )


def _keys(asset: AssetLike) -> set[dg.AssetKey]:
    return {asset.key} if isinstance(asset, dg.AssetSpec) else set(asset.keys)
