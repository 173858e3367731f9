"""SQL files -> Dagster assets whose compute runs the SQL and hands the rows to the IO manager."""

from typing import Any

import dagster as dg

from assetlake_dagster.errors import display_path
from assetlake_dagster.lake import ensure_schema, register_table
from assetlake_dagster.materialization import materialization_metadata
from assetlake_dagster.partitions import backfill_policy, run_slices
from assetlake_dagster.resources import SparkDeltaResource
from assetlake_dagster.spec import SqlAssetSpec, WriteStrategy
from assetlake_dagster.sql_runner import (
    argument_config_schema,
    bind_arguments,
    resolve_upstreams,
    run_sql_file,
    run_sql_slices,
)
from assetlake_dagster.translator import AssetlakeTranslator
from assetlake_dagster.data_tests import (
    audit_failure,
    blocking_failures,
    check_specs,
    committed_scope,
    evaluate_run,
    staged_scope,
)
from assetlake_dagster.writes import CommitStamp, WriteResult, WriteTarget
from assetlake_dagster.writes.commit import current_version

SPARK_RESOURCE_KEY = "spark"
UPSTREAM_VERSIONS_KEY = "assetlake/upstream_versions"


def build_sql_asset(spec: SqlAssetSpec, translator: AssetlakeTranslator) -> dg.AssetsDefinition:
    """One annotated SQL file -> one asset.

    Managed files return the SELECT's DataFrame; the Delta IO manager writes it with the
    file's strategy. ``manual`` files run every statement themselves and only record the
    table's resulting version.
    """
    asset_spec = translator.get_asset_spec(spec)
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
        check_specs=check_specs(spec, asset_spec.key),
        can_subset=tested,
    )
    def _sql_asset(context: dg.AssetExecutionContext):
        resource: SparkDeltaResource = getattr(context.resources, SPARK_RESOURCE_KEY)
        spark = resource.get_session()
        lake = resource.lake
        upstream_versions = resolve_upstreams(spark, lake, spec)
        args = bind_arguments(spec.arguments, context.op_execution_context.op_config or {})
        context.log.info(f"running {display_path(spec.path)} -> {spec.uri}")
        slices = run_slices(context) if spec.partitions else []
        if slices:
            keys = ", ".join(s.key for s in slices[:3]) + (f" … ({len(slices)} partitions)" if len(slices) > 3 else "")
            context.log.info(f"partitions: {keys}")
        if not managed:
            yield _run_manual(context, resource, spec, args, upstream_versions, slices)
            return
        tests = _selected_tests(context, spec, asset_spec.key)
        partitions = [s.key for s in slices]
        if asset_spec.key not in context.selected_asset_keys:
            # Checks run on their own: test the committed table, write nothing.
            scope, scope_text = committed_scope(spark, lake, spec, partitions)
            if scope is None:
                raise dg.Failure(f"{spec.uri} has no Delta table yet; materialize it first.", allow_retries=False)
            for outcome in evaluate_run(spark, lake, tests, scope, scope_text, args, slices):
                yield outcome.check_result(asset_spec.key)
            return
        df = run_sql_slices(spark, spec, args, slices) if slices else run_sql_file(spark, spec, args)
        if tests:
            # Audit before publish: the tests see exactly the rows the write will commit
            # (checkpointed once, so a non-deterministic SELECT cannot differ between them).
            df = df.localCheckpoint(eager=True)
            target = _audit_target(spec, lake, partitions)
            scope, scope_text = staged_scope(spark, df, target)
            outcomes = evaluate_run(spark, lake, tests, scope, scope_text, args, slices)
            for outcome in outcomes:
                if not outcome.passed:
                    context.log.warning(outcome.message(str(spec.uri)))
                yield outcome.check_result(asset_spec.key)
            if blocking_failures(outcomes):
                raise audit_failure(outcomes, str(spec.uri), current_version(spark, target.path))
        yield dg.Output(
            df,
            output_name=output_name,
            metadata={UPSTREAM_VERSIONS_KEY: dg.MetadataValue.json(upstream_versions)},
        )

    return _sql_asset


def _selected_tests(context: dg.AssetExecutionContext, spec: SqlAssetSpec, key: dg.AssetKey) -> list:
    selected = context.selected_asset_check_keys
    return [t for t in spec.data_tests if dg.AssetCheckKey(key, t.name) in selected]


def _audit_target(spec: SqlAssetSpec, lake, partitions: list[str]) -> WriteTarget:
    """The write the IO manager is about to make (for the staged scope; never written)."""
    return WriteTarget(
        uri=spec.uri,
        path=lake.table_path(spec.uri),
        strategy=spec.materialize.strategy,
        stamp=CommitStamp(run_id="audit", asset=f"{spec.uri.schema}/{spec.uri.table}"),
        key=spec.materialize.key,
        track=spec.materialize.track,
        close_deletes=spec.materialize.close_deletes,
        partitions=tuple(partitions),
    )


def _run_manual(
    context: dg.AssetExecutionContext,
    resource: SparkDeltaResource,
    spec: SqlAssetSpec,
    args: dict[str, Any],
    upstream_versions: dict[str, Any],
    slices: list,
) -> dg.MaterializeResult:
    spark, lake = resource.get_session(), resource.lake
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
