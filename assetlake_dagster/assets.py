"""SQL files -> Dagster assets whose compute runs the SQL and hands the rows to the IO manager."""

from collections.abc import Iterator, Mapping
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.engine import engine_lost_failure
from assetlake_dagster.errors import AssetlakeError, display_path
from assetlake_dagster.lake import Lake, ensure_schema, register_table
from assetlake_dagster.lineage_metadata import column_lineage_metadata
from assetlake_dagster.materialization import materialization_metadata
from assetlake_dagster.partitions import backfill_policy, run_slices
from assetlake_dagster.resources import SparkDeltaResource
from assetlake_dagster.spark_session import local_checkpoint
from assetlake_dagster.spec import SqlAssetSpec, TableUri, WriteStrategy
from assetlake_dagster.run_config import argument_config_schema, arguments_metadata, bind_arguments
from assetlake_dagster.sql_runner import resolve_upstreams, run_sql_file, run_sql_slices
from assetlake_dagster.translator import AssetlakeTranslator
from assetlake_dagster.checks import (
    audit_failure,
    check_events,
    check_specs,
    refuse_run_retries,
    restore_run_retries,
    selected_tests,
)
from assetlake_dagster.data_tests import blocking_failures, evaluate_run
from assetlake_dagster.writes import CommitStamp, WriteResult, WriteTarget, strategy_for
from assetlake_dagster.writes.commit import current_version

SPARK_RESOURCE_KEY = "spark"
UPSTREAM_VERSIONS_KEY = "assetlake/upstream_versions"


def build_sql_asset(
    spec: SqlAssetSpec,
    translator: AssetlakeTranslator,
    keys_by_table: Optional[Mapping[TableUri, dg.AssetKey]] = None,
    lake: Optional[Lake] = None,
) -> dg.AssetsDefinition:
    """One annotated SQL file -> one asset.

    Managed files return the SELECT's DataFrame; the Delta IO manager writes it with the
    file's strategy. ``manual`` files run every statement themselves and only record the
    table's resulting version.

    Args:
        spec: the parsed file.
        translator: decides the Dagster attributes.
        keys_by_table: the (translated) asset key of each table of the definitions, so
            deps on upstream tables follow a translator that renames keys.
        lake: where the table is stored (its location becomes ``dagster/uri``).
    """
    asset_spec = with_write_contract(translator.get_asset_spec(spec), spec, keys_by_table or {}, lake)
    output_name = asset_spec.key.to_python_identifier()

    managed = spec.materialize.strategy is not WriteStrategy.MANUAL
    # A managed file returns rows for the IO manager (type Any); a manual one returns
    # only a MaterializeResult (type Nothing).
    # (AssetOut cannot carry deps; the op-level deps apply to its single output.)
    tested = bool(spec.data_tests)
    out = dg.AssetOut.from_spec(
        asset_spec.replace_attributes(deps=[]),
        dagster_type=dg.Any if managed else dg.Nothing,
        # A check can run on its own against the committed table (the asset unselected).
        is_required=not tested,
    )

    @dg.multi_asset(
        name=f"sql__{output_name}",
        outs={output_name: out},
        deps=list(asset_spec.deps),
        required_resource_keys={SPARK_RESOURCE_KEY},
        config_schema=argument_config_schema(spec.arguments),
        partitions_def=asset_spec.partitions_def,
        backfill_policy=backfill_policy(spec.partitions) if spec.partitions else None,
        check_specs=check_specs(spec, asset_spec.key, asset_spec.partitions_def),
        can_subset=tested,
    )
    def _sql_asset(context: dg.AssetExecutionContext):
        restore_run_retries(context.instance, context.run.run_id)
        if spec.partitions and not (context.has_partition_key or context.has_partition_key_range):
            # Dagster launches a check-only run of a partitioned asset without a partition
            # if asked to; its partition keys would fail below with an internal error.
            raise dg.Failure(
                f"{spec.uri} is partitioned: run it, or its checks, for one or more partitions.", allow_retries=False
            )
        # Before Spark: a date argument that is not a date fails in a moment, not after a session.
        args = bind_arguments(spec.arguments, context.op_execution_context.op_config or {})
        resource: SparkDeltaResource = getattr(context.resources, SPARK_RESOURCE_KEY)
        # A session of the asset's own: its setup's SETs and temp views reach no other
        # asset of this run and no other run sharing the engine. Released once the IO
        # manager has written the DataFrame (it runs while this generator is suspended).
        spark = resource.new_session()
        try:
            yield from _run_sql_asset(
                context, spec, asset_spec, output_name, managed, resource, spark, args, keys_by_table or {}
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

    return _sql_asset


def with_write_contract(
    asset_spec: dg.AssetSpec,
    spec: SqlAssetSpec,
    keys_by_table: Mapping[TableUri, dg.AssetKey],
    lake: Optional[Lake] = None,
) -> dg.AssetSpec:
    """The translator's ``AssetSpec`` plus what no translator override may change.

    The write contract (the file's ``MaterializeSpec``) is attached here, after the
    translator, so a ``get_metadata`` override without ``super()`` cannot turn a merge
    into an overwrite; so are the table's storage location and the list of the file's arguments, which
    :func:`~assetlake_dagster.run_config.sql_run_config` reads. Deps on tables of these
    definitions point at those tables' translated keys (a ``get_asset_key`` that adds a
    prefix leaves no phantom, unprefixed upstream in the graph); other deps stay as the
    translator made them.

    Example:
        >>> spec = with_write_contract(translator.get_asset_spec(sql), sql, {})  # doctest: +SKIP
        >>> spec.metadata["assetlake/write"]["strategy"]  # doctest: +SKIP
        'merge'
    """
    deps = [
        dg.AssetDep(_translated_key(dep.asset_key, keys_by_table), partition_mapping=dep.partition_mapping)
        for dep in asset_spec.deps
    ]
    metadata = {**asset_spec.metadata, **spec.materialize.to_metadata(), **arguments_metadata(spec.arguments)}
    if lake is not None:  # the storage location, as the catalog and the materializations name it
        metadata["dagster/uri"] = dg.MetadataValue.path(lake.table_path(spec.uri))
    return asset_spec.replace_attributes(deps=deps, metadata=metadata)


def _translated_key(key: dg.AssetKey, keys_by_table: Mapping[TableUri, dg.AssetKey]) -> dg.AssetKey:
    """The translated key of the table whose default key is ``key``; else ``key`` itself.

    Looked up per dep, not by building a map of every table per asset: that was quadratic
    (a 1000-file load spent about a second making asset keys).
    """
    if len(key.path) == 2:
        try:
            return keys_by_table.get(TableUri(*key.path), key)
        except ValueError:  # not a table name: a dep the translator added
            return key
    return key


def _run_sql_asset(
    context: dg.AssetExecutionContext,
    spec: SqlAssetSpec,
    asset_spec: dg.AssetSpec,
    output_name: str,
    managed: bool,
    resource: SparkDeltaResource,
    spark: Any,
    args: dict[str, Any],
    keys_by_table: Mapping[TableUri, dg.AssetKey],
) -> Iterator[Any]:
    """The body of a SQL asset's compute, in the asset's own session ``spark``, with the
    run config's argument values ``args``."""
    lake = resource.lake
    upstream_versions = resolve_upstreams(spark, lake, spec)
    context.log.info(f"running {display_path(spec.path)} -> {spec.uri}")
    slices = run_slices(context) if spec.partitions else []
    if slices:
        keys = ", ".join(s.key for s in slices[:3]) + (f" … ({len(slices)} partitions)" if len(slices) > 3 else "")
        context.log.info(f"partitions: {keys}")
    if not managed:
        yield _run_manual(context, spark, lake, spec, args, upstream_versions, slices)
        return
    tests = selected_tests(context, spec, asset_spec.key)
    partitions = [s.key for s in slices]
    if asset_spec.key not in context.selected_asset_keys:
        # Checks run on their own: test the committed table, write nothing.
        write = strategy_for(spec.materialize.strategy)
        scope, scope_text = write.committed_scope(spark, _audit_target(spec, lake, partitions))
        if scope is None:
            raise dg.Failure(f"{spec.uri} has no Delta table yet; materialize it first.", allow_retries=False)
        outcomes = evaluate_run(spark, lake, tests, scope, scope_text, args, slices)
        if blocking_failures(outcomes):
            # Dagster fails the step for a failed blocking check; retrying cannot help.
            refuse_run_retries(context.instance, context.run.run_id)
        yield from check_events(context, asset_spec.key, outcomes)
        return
    df = run_sql_slices(spark, spec, args, slices) if slices else run_sql_file(spark, spec, args)
    outcomes = []
    if tests:
        # Audit before publish: the tests see exactly the rows the write will commit
        # (checkpointed once, so a non-deterministic SELECT cannot differ between them).
        df = local_checkpoint(df)
        target = _audit_target(spec, lake, partitions)
        scope, scope_text = strategy_for(spec.materialize.strategy).staged_scope(spark, df, target)
        outcomes = evaluate_run(spark, lake, tests, scope, scope_text, args, slices)
        for outcome in outcomes:
            if not outcome.passed:
                context.log.warning(outcome.message(str(spec.uri)))
        if blocking_failures(outcomes):
            # Nothing is written: the results judge the table as it stays.
            yield from check_events(context, asset_spec.key, outcomes)
            refuse_run_retries(context.instance, context.run.run_id)
            raise audit_failure(outcomes, str(spec.uri), current_version(spark, target.path))
    output = dg.Output(
        df,
        output_name=output_name,
        metadata={
            UPSTREAM_VERSIONS_KEY: dg.MetadataValue.json(upstream_versions),
            **column_lineage_metadata(spark, spec, keys_by_table),
        },
    )
    # The tests ran on the staged rows, before the commit; their results are reported
    # after it, so that each evaluation targets the materialization this write creates
    # (Dagster links a result to the asset's latest materialization when it is yielded;
    # before the write that was the previous one, or none: "Target materialization –").
    # A partition's check status also shows only while it targets its latest one.
    yield output
    yield from check_events(context, asset_spec.key, outcomes)


def _audit_target(spec: SqlAssetSpec, lake, partitions: list[str]) -> WriteTarget:
    """The write the IO manager is about to make (for the tests' scopes; never written)."""
    stamp = CommitStamp(run_id="audit", asset=f"{spec.uri.schema}/{spec.uri.table}")
    return WriteTarget.from_spec(spec.materialize, lake.table_path(spec.uri), stamp, partitions)


def _run_manual(
    context: dg.AssetExecutionContext,
    spark: Any,
    lake: Any,
    spec: SqlAssetSpec,
    args: dict[str, Any],
    upstream_versions: dict[str, Any],
    slices: list,
) -> dg.MaterializeResult:
    ensure_schema(spark, lake, spec.uri.schema)
    if lake.table_exists(spark, spec.uri):
        register_table(spark, lake, spec.uri)
    for bindings in [s.bindings() for s in slices] or [{}]:
        run_sql_file(spark, spec, {**args, **bindings})
    metadata: dict[str, Any] = {UPSTREAM_VERSIONS_KEY: dg.MetadataValue.json(upstream_versions)}
    if lake.table_exists(spark, spec.uri):
        register_table(spark, lake, spec.uri)
        path = lake.table_path(spec.uri)
        result = WriteResult(committed=True, version=current_version(spark, path), operation="manual")
        metadata.update(materialization_metadata(spark, spec.uri, path, "manual", result))
        # The script wrote by itself: we cannot tell whether this run committed.
        for key in ("delta/committed", "assetlake/rows_written", "delta/operation_metrics"):
            metadata.pop(key, None)
    else:
        context.log.warning(f"{spec.uri}: the manual script left no Delta table at {lake.table_path(spec.uri)}")
    return dg.MaterializeResult(asset_key=context.asset_key, metadata=metadata)
