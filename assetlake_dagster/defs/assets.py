"""SQL files -> Dagster assets whose compute runs the SQL and hands the rows to the IO manager.

The compute's body is :mod:`assetlake_dagster.run.sql_asset`, loaded when a run starts.
"""

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.defs.checks import check_specs, restore_run_retries
from assetlake_dagster.defs.dagster_internals import (
    check_spec_output_name,
    decorated_op_function,
    dep_input_name,
    with_metadata,
)
from assetlake_dagster.spark.engine import engine_lost_failure
from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.defs.partitions import backfill_policy
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.defs.run_config import argument_config_schema, arguments_metadata, bind_arguments
from assetlake_dagster.spec import SqlAssetSpec, TableUri, WriteStrategy
from assetlake_dagster.defs.translator import AssetlakeTranslator

SPARK_RESOURCE_KEY = "spark"


def build_sql_asset(
    spec: SqlAssetSpec,
    translator: AssetlakeTranslator,
    lake: Optional[Lake] = None,
    io_manager_key: str = "io_manager",
    spark_key: str = SPARK_RESOURCE_KEY,
    views: Mapping[TableUri, SqlAssetSpec] = {},
) -> dg.AssetsDefinition:
    """One annotated SQL file -> one asset.

    Managed files return the SELECT's DataFrame; the Delta IO manager writes it with the
    file's strategy. ``manual`` files run every statement themselves and only record the
    table's resulting version. A ``view`` file's asset is a virtual asset: its run makes the
    view in the catalog, and writes nothing.

    Args:
        spec: the parsed file.
        translator: decides the Dagster attributes, bound to the definitions' tables
            (:meth:`~AssetlakeTranslator.bound_to`) so that deps follow renamed keys.
        lake: where the table is stored (its location becomes ``dagster/uri``).
        io_manager_key: the resource key of the Delta IO manager that writes the rows.
        spark_key: the resource key of the :class:`SparkDeltaResource` the asset runs on.
        views: the project's ``materialize view`` files by name: a run reading one makes it
            in the catalog first.
    """
    asset_spec = sql_asset_spec(spec, translator, lake)
    upstream_keys = upstream_asset_keys(spec, translator)
    output_name = asset_spec.key.to_python_identifier()

    managed = spec.materialize.strategy not in (WriteStrategy.MANUAL, WriteStrategy.VIEW)
    tested = bool(spec.data_tests)
    checks = check_specs(spec, asset_spec.key, asset_spec.partitions_def)

    def _sql_asset(context: dg.AssetExecutionContext):
        restore_run_retries(context.instance, context.run.run_id)
        if spec.partitions and not (context.has_partition_key or context.has_partition_key_range):
            # Dagster launches a check-only run of a partitioned asset without a partition
            # if asked to; its partition keys would fail below with an internal error.
            raise AssetlakeError(
                f"{spec.uri} is partitioned: run it, or its checks, for one or more partitions.", allow_retries=False
            )
        # Before Spark: a date argument that is not a date fails in a moment, not after a session.
        args = bind_arguments(spec.arguments, context.op_execution_context.op_config or {})
        resource: SparkDeltaResource = getattr(context.resources, spark_key)
        # The run's half (PySpark and all) loads with the first run, not with the definitions.
        from assetlake_dagster.run.sql_asset import run_sql_asset

        inputs = changes_since = None
        if managed and asset_spec.key in context.selected_asset_keys and not _reads_a_view(spec, views):
            # Before any session: a run whose inputs did not change does nothing (run/decision.py).
            from assetlake_dagster.run.decision import Skip, decide, skipped_run_events

            decision = decide(context, spec, resource.lake, args, asset_spec.key)
            if isinstance(decision, Skip):
                yield from skipped_run_events(context, spec, asset_spec.key, output_name, decision)
                return
            inputs, changes_since = decision.inputs, decision.changes_since
        # A session of the asset's own: its setup's SETs and temp views reach no other
        # asset of this run and no other run sharing the engine. Released once the IO
        # manager has written the DataFrame (it runs while this generator is suspended).
        spark = resource.new_session()
        try:
            yield from run_sql_asset(
                context, spec, asset_spec, output_name, managed, resource, spark, args, upstream_keys, inputs,
                changes_since, views,
            )
        except AssetlakeError:
            raise
        except Exception as exc:
            lake = resource.lake
            lost = engine_lost_failure(exc, f"the run of {spec.uri}", None if lake.is_url else lake.table_path(spec.uri))
            if lost is not None:
                raise lost from exc
            raise
        finally:
            resource.release_session(spark)

    return assets_definition(
        _sql_asset,
        name=f"sql__{output_name}",
        asset_specs=[asset_spec],
        # A managed file returns rows for the IO manager (type Any); a manual one returns
        # only a MaterializeResult (type Nothing).
        dagster_type=dg.Any if managed else dg.Nothing,
        checks=checks,
        # A check can run on its own against the committed table (the asset unselected).
        can_subset=tested,
        config_schema=argument_config_schema(spec.arguments),
        policy=backfill_policy(spec.partitions) if spec.partitions else None,
        io_manager_key=io_manager_key,
        spark_key=spark_key,
    )


def sql_asset_spec(spec: SqlAssetSpec, translator: AssetlakeTranslator, lake: Optional[Lake] = None) -> dg.AssetSpec:
    """The file's asset as the translator makes it, with its write contract (and, for a
    view, as a virtual asset)."""
    translated = translator.get_asset_spec(spec)
    if spec.materialize.strategy is WriteStrategy.VIEW:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dg.PreviewWarning)  # virtual assets are a preview in Dagster 1.13
            translated = translated.replace_attributes(is_virtual=True)
    return with_metadata(translated, write_contract(translated, spec, lake))


def upstream_asset_keys(spec: SqlAssetSpec, translator: AssetlakeTranslator) -> dict[TableUri, dg.AssetKey]:
    """The keys a run records lineage and external reads under, as the deps name them."""
    return {u.uri: translator.get_upstream_key(u.uri) for u in spec.upstreams}


def _reads_a_view(spec: SqlAssetSpec, views: Mapping[TableUri, SqlAssetSpec]) -> bool:
    """Whether ``spec`` reads one of the project's views: its run decision cannot read a
    view's version from a Delta log, so it runs (and makes the view if needed)."""
    return any(u.uri in views for u in spec.upstreams)


# Built once and shared by every op (immutable): Dagster resolves a type per In/Out, and
# converts a config dict to a schema per op, at a cost that showed in a 1000-file load.
_DEP_IN = dg.In(dagster_type=dg.Nothing)
_CHECK_OUT = {required: dg.Out(dagster_type=None, is_required=required) for required in (False, True)}
_NO_CONFIG = dg.Field(dg.Shape({}))  # what Dagster makes of ``{}``


def assets_definition(
    compute: Callable[..., Any],
    *,
    name: str,
    asset_specs: Sequence[dg.AssetSpec],
    dagster_type: Any,
    checks: Sequence[dg.AssetCheckSpec],
    can_subset: bool,
    config_schema: Optional[Mapping[str, dg.Field]],
    policy: Optional[dg.BackfillPolicy],
    io_manager_key: str = "io_manager",
    spark_key: str = SPARK_RESOURCE_KEY,
) -> dg.AssetsDefinition:
    """The asset ``@dg.multi_asset`` would build from these, built directly: one output per
    spec (one for a SQL file, one per member for a publish group), each named by its key.

    The decorator inspects the compute function's signature about 16 times per asset and
    validates what is valid by construction here: that was most of building a 1000-file
    project (B4). ``compute`` runs as under the decorator (its context an
    ``AssetExecutionContext``); ``unit/test_assets_definition.py`` checks that every part of
    the result equals what the decorator builds.
    """
    own = {asset_spec.key for asset_spec in asset_specs}
    # A dep on another asset of the same op is the op's own order, not an input.
    inputs = {
        dep_input_name(dep.asset_key): dep.asset_key for s in asset_specs for dep in s.deps if dep.asset_key not in own
    }
    checks_by_output = {check_spec_output_name(check): check for check in checks}
    check_out = _CHECK_OUT[not can_subset]
    outs = {
        asset_spec.key.to_python_identifier(): dg.Out(
            dagster_type=dagster_type,
            description=asset_spec.description,
            metadata=asset_spec.metadata,
            is_required=not can_subset,
            code_version=asset_spec.code_version,
            io_manager_key=io_manager_key,
        )
        for asset_spec in asset_specs
    }
    op = dg.OpDefinition(
        compute_fn=decorated_op_function(compute),
        name=name,
        ins=dict.fromkeys(inputs, _DEP_IN),
        outs={**outs, **dict.fromkeys(checks_by_output, check_out)},
        required_resource_keys={spark_key},
        config_schema=config_schema or _NO_CONFIG,  # as @multi_asset: no arguments, an empty config
    )
    return dg.AssetsDefinition(
        keys_by_input_name=inputs,
        keys_by_output_name={s.key.to_python_identifier(): s.key for s in asset_specs},
        node_def=op,
        can_subset=can_subset,
        backfill_policy=policy,
        check_specs_by_output_name=checks_by_output,
        specs=list(asset_specs),
    )


def write_contract(asset_spec: dg.AssetSpec, spec: SqlAssetSpec, lake: Optional[Lake] = None) -> dict[str, Any]:
    """The metadata of the translator's ``AssetSpec`` plus what no translator override may
    change.

    The write contract (the file's ``MaterializeSpec``) is attached here, after the
    translator, so a ``get_metadata`` override without ``super()`` cannot turn a merge
    into an overwrite; so are the table's storage location and the list of the file's
    arguments, which :func:`~assetlake_dagster.defs.run_config.sql_run_config` reads.

    Example:
        >>> metadata = write_contract(translator.get_asset_spec(sql), sql)  # doctest: +SKIP
        >>> metadata["assetlake/write"]["strategy"]  # doctest: +SKIP
        'merge'
    """
    metadata = {
        **asset_spec.metadata,
        **spec.materialize.to_metadata(),
        **spec.layout.to_metadata(),
        **arguments_metadata(spec.arguments),
    }
    if lake is not None:  # the storage location, as the catalog and the materializations name it
        metadata["dagster/uri"] = dg.MetadataValue.path(lake.table_path(spec.uri))
    return metadata
