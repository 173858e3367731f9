"""What a SQL asset's run does: run the file's SQL in the asset's own session, audit the
rows with its data tests, and hand them to the IO manager (or, for ``manual`` files, run
the statements and record the table's version).

Kept apart from :mod:`assetlake_dagster.defs.assets`, which builds the definitions: this half
needs PySpark, which a code location then loads only when a run starts, not with its
definitions.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.run.change_feed import READ_KEY, ChangeRead, appended_up_to, read_changes, read_new_rows
from assetlake_dagster.defs.checks import audit_failure, check_events, refuse_run_retries, selected_tests
from assetlake_dagster.run.data_tests import evaluate_run
from assetlake_dagster.run.quarantine import quarantine_uri, split_rows, write_aside
from assetlake_dagster.spec import blocking_failures
from assetlake_dagster.run.defer import deferred_inputs, deferred_metadata, sql_asset_reads
from assetlake_dagster.defs.dagster_internals import is_observable_source, run_asset_graph
from assetlake_dagster.errors import AssetlakeError, display_path
from assetlake_dagster.lake.registration import ensure_schema, register_table
from assetlake_dagster.defs.lineage_metadata import column_lineage_metadata
from assetlake_dagster.run.materialization_metadata import column_schema, materialization_metadata, version_files_here
from assetlake_dagster.defs.partitions import run_slices
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.run.decision import RunInputs, inputs_metadata, last_recorded_inputs
from assetlake_dagster.spark.python_values import in_session_zone
from assetlake_dagster.spark.session import local_checkpoint
from assetlake_dagster.spec import UPSTREAM_VERSIONS_KEY, SqlAssetSpec, TableUri, WriteStrategy
from assetlake_dagster.sql.rewrite import with_tables_replaced
from assetlake_dagster.run.sql_runner import ensure_view, resolve_upstreams, run_sql_file, run_sql_slices
from assetlake_dagster.writes import CommitStamp, WriteResult, WriteTarget, strategy_for
from assetlake_dagster.lake.versions import current_version

#: Materialization metadata of a view: whether its run created the view or found it as it is.
VIEW_METADATA_KEY = "assetlake/view"


def run_sql_asset(
    context: dg.AssetExecutionContext,
    spec: SqlAssetSpec,
    asset_spec: dg.AssetSpec,
    output_name: str,
    managed: bool,
    resource: SparkDeltaResource,
    spark: Any,
    args: dict[str, Any],
    upstream_keys: Mapping[TableUri, dg.AssetKey],
    inputs: Optional[RunInputs] = None,
    changes_since: Optional[RunInputs] = None,
    views: Mapping[TableUri, SqlAssetSpec] = {},
) -> Iterator[Any]:
    """The body of a SQL asset's compute, in the asset's own session ``spark``, with the
    run config's argument values ``args`` (a naive timestamp read in the session's zone).
    ``inputs``: what the run read, as :mod:`~assetlake_dagster.run.decision` found it before
    the run (recorded, so that the next run can tell whether anything changed);
    ``changes_since``: the last run's, when this one may read only what changed since
    (:mod:`~assetlake_dagster.run.change_feed`)."""
    lake = resource.lake
    if spec.materialize.strategy is WriteStrategy.VIEW:
        yield _run_view(context, spark, lake, spec, views, upstream_keys)
        return
    # A naive timestamp argument is a wall time in the session's zone, as in a SQL unit test
    # (sql_test_run), not in this machine's: the SQL, its setup and its data tests bind these.
    args = in_session_zone(spark, args)
    prepared = prepare_run(context, spark, resource, spec, upstream_keys, views)
    if not managed:
        yield _run_manual(context, spark, lake, prepared.spec, args, prepared.upstream_versions, prepared.slices)
        return
    tests = selected_tests(context, spec, asset_spec.key)
    if asset_spec.key not in context.selected_asset_keys:
        yield from _run_checks_alone(context, spark, lake, prepared, asset_spec.key, tests, args)
        return
    staged = stage_rows(context, spark, lake, prepared, tests, args, inputs, changes_since, asset_spec.key)
    if staged.failure is not None:
        # Nothing is written: the results judge the table as it stays.
        yield from check_events(context, asset_spec.key, staged.outcomes)
        refuse_run_retries(context.instance, context.run.run_id)
        raise staged.failure
    yield from publish_rows(context, spark, resource, prepared, staged, asset_spec.key, output_name, inputs, upstream_keys)


@dataclass(frozen=True)
class PreparedRun:
    """A SQL asset's run once its upstreams are resolvable, before it reads anything.

    Attributes:
        spec: the file as the run reads it: tables from the prod lake or staged by the
            file's publish group stand in for those it names.
        written: the file as written (its lineage is the file's, whatever the run reads).
        upstream_versions: each upstream's Delta version, as resolved.
        deferred: the upstreams read from the prod lake (:mod:`~assetlake_dagster.run.defer`).
        prod_reads: those of them read as their own table, by name: ``(path, version)``.
        slices: the run's partition slices (none for a whole-table asset).
        staged: the upstreams its publish group staged, by their names in the session.
    """

    spec: SqlAssetSpec
    written: SqlAssetSpec
    upstream_versions: dict[str, Optional[int]]
    deferred: Mapping[TableUri, Any]
    prod_reads: Mapping[TableUri, tuple[str, int]]
    slices: list
    staged: Mapping[TableUri, str] = field(default_factory=dict)

    @property
    def partitions(self) -> list[str]:
        return [s.key for s in self.slices]

    @property
    def test_reads(self) -> dict[TableUri, Any]:
        """The tables a ``relationships`` test reads from elsewhere than this lake's tables."""
        return {**self.prod_reads, **self.staged}


def prepare_run(
    context: dg.AssetExecutionContext,
    spark: Any,
    resource: SparkDeltaResource,
    spec: SqlAssetSpec,
    upstream_keys: Mapping[TableUri, dg.AssetKey],
    views: Mapping[TableUri, SqlAssetSpec] = {},
    staged: Mapping[TableUri, str] = {},
) -> PreparedRun:
    """Resolve ``spec``'s upstreams in ``spark`` and log what the run reads. ``staged``: the
    upstreams a publish group staged (their SQL names in the session), read instead of
    their tables (:mod:`~assetlake_dagster.run.publish_group`)."""
    lake, prod = resource.lake, resource.defer_lake
    # A dev lake's missing upstreams are read from prod, pinned for the run (run/defer.py).
    reads = [uri for uri in sql_asset_reads(spec) if uri not in staged]
    deferred = deferred_inputs(spark, lake, prod, reads, (context.instance, context.run.run_id))
    upstream_versions = resolve_upstreams(
        spark, lake, spec, elsewhere={*deferred, *staged}, external=_external_upstreams(context, spec, upstream_keys),
        views=views,
    )
    prod_reads = {d.uri: (d.path, d.version) for d in deferred.values() if d.uri == d.table}
    written = spec
    if deferred or staged:
        spec = with_tables_replaced(spec, {**{uri: d.sql for uri, d in deferred.items()}, **staged})
    if deferred:
        shown = ", ".join(f"{d.uri} (version {d.version})" for d in deferred.values())
        context.log.info(f"read from the prod lake {prod.root}: {shown}")
    context.log.info(f"running {display_path(spec.path)} -> {spec.uri}")
    slices = run_slices(context) if spec.partitions else []
    if slices:
        keys = ", ".join(s.key for s in slices[:3]) + (f" … ({len(slices)} partitions)" if len(slices) > 3 else "")
        context.log.info(f"partitions: {keys}")
    return PreparedRun(spec, written, upstream_versions, deferred, prod_reads, slices, dict(staged))


def _run_checks_alone(
    context: dg.AssetExecutionContext,
    spark: Any,
    lake: Any,
    prepared: PreparedRun,
    key: dg.AssetKey,
    tests: list,
    args: Mapping[str, Any],
) -> Iterator[Any]:
    """Checks run on their own: test the committed table, write nothing."""
    spec = prepared.spec
    write = strategy_for(spec.materialize.strategy)
    scope, scope_text = write.committed_scope(spark, _audit_target(spec, lake, prepared.partitions))
    if scope is None:
        raise AssetlakeError(f"{spec.uri} has no Delta table yet; materialize it first.", allow_retries=False)
    outcomes = evaluate_run(spark, lake, tests, scope, scope_text, args, prepared.slices, elsewhere=prepared.prod_reads)
    if blocking_failures(outcomes):
        # Dagster fails the step for a failed blocking check; retrying cannot help.
        refuse_run_retries(context.instance, context.run.run_id)
    yield from check_events(context, key, outcomes)


@dataclass
class StagedRows:
    """A run's rows, read and audited, not yet written.

    Attributes:
        rows: what the write will commit (the quarantined rows taken out).
        outcomes: the data tests' results on them (quarantining tests' first).
        read: how the rows were read, when only changes or new rows were.
        split: the rows a quarantining test sent aside, if any test quarantines.
        failure: the run's failure when a blocking test failed (then nothing may be written).
        target: the write about to be made (for the tests' scopes; never written).
    """

    rows: Any
    outcomes: list
    read: Optional[ChangeRead]
    split: Optional[Any]
    failure: Optional[dg.Failure]
    target: WriteTarget


def stage_rows(
    context: dg.AssetExecutionContext,
    spark: Any,
    lake: Any,
    prepared: PreparedRun,
    tests: list,
    args: Mapping[str, Any],
    inputs: Optional[RunInputs],
    changes_since: Optional[RunInputs],
    key: dg.AssetKey,
    fixed: bool = False,
) -> StagedRows:
    """Read the run's rows and audit them with ``tests``; nothing is written. ``fixed``: the
    rows are checkpointed even without tests (a publish group reads them after other commits)."""
    spec, slices = prepared.spec, prepared.slices
    if spec.materialize.new_rows:
        read = _new_rows(context, spark, lake, spec, args, key, prepared.deferred)
    else:
        read = None if slices else _changed_rows(context, spark, lake, spec, args, inputs, changes_since, prepared.deferred)
    if read is not None:
        df = read.rows
    else:
        df = run_sql_slices(spark, spec, args, slices) if slices else run_sql_file(spark, spec, args)
    outcomes = []
    split = None
    quarantining = [t for t in tests if t.quarantine]
    if quarantining:
        # The rows a quarantining test fails go aside; the other tests audit the rest.
        split = split_rows(spark, lake, quarantining, df, prepared.partitions, elsewhere=prepared.test_reads)
        df, tests = split.kept, [t for t in tests if not t.quarantine]
        outcomes = list(split.outcomes)
    target = _audit_target(spec, lake, prepared.partitions)
    failure = None
    if tests or fixed:
        # Audit before publish: the tests see exactly the rows the write will commit
        # (checkpointed once, so a non-deterministic SELECT cannot differ between them).
        df = local_checkpoint(df)
    if tests:
        scope, scope_text = strategy_for(spec.materialize.strategy).staged_scope(spark, df, target)
        outcomes += evaluate_run(spark, lake, tests, scope, scope_text, args, slices, elsewhere=prepared.test_reads)
        for outcome in outcomes:
            if not outcome.passed and not outcome.test.quarantine:
                context.log.warning(outcome.message(str(spec.uri)))
        if blocking_failures(outcomes):
            failure = audit_failure(outcomes, str(spec.uri), current_version(spark, target.path))
    return StagedRows(df, outcomes, read, split, failure, target)


def publish_rows(
    context: dg.AssetExecutionContext,
    spark: Any,
    resource: SparkDeltaResource,
    prepared: PreparedRun,
    staged: StagedRows,
    key: dg.AssetKey,
    output_name: str,
    inputs: Optional[RunInputs],
    upstream_keys: Mapping[TableUri, dg.AssetKey],
    upstream_versions: Optional[Mapping[str, Optional[int]]] = None,
) -> Iterator[Any]:
    """Write the quarantined rows aside, then hand the rows to the IO manager (which commits
    them), then report the tests' results. ``upstream_versions``: the versions read, when
    they are not :attr:`PreparedRun.upstream_versions` (a group member read a staged table)."""
    lake, prod, spec, split, read = resource.lake, resource.defer_lake, prepared.spec, staged.split, staged.read
    if split is not None and split.count:
        # Written before the rows are published: a run whose quarantine write fails publishes nothing.
        run = context.run
        partitions = prepared.partitions
        aside = write_aside(spark, lake, spec.uri, split.aside, run.run_id, run.root_run_id or run.run_id, partitions)
        context.log.warning(
            f"{spec.uri}: {split.count} row(s) failed a quarantining test and went to "
            f"{quarantine_uri(spec.uri).sql_name} (Delta version {aside.version}); the rest are published"
        )
    output = dg.Output(
        staged.rows,
        output_name=output_name,
        metadata={
            UPSTREAM_VERSIONS_KEY: dg.MetadataValue.json(dict(upstream_versions or prepared.upstream_versions)),
            **inputs_metadata(inputs),
            **({READ_KEY: dg.MetadataValue.json(dict(read.metadata))} if read is not None else {}),
            **(deferred_metadata(prod, prepared.deferred) if prepared.deferred else {}),
            **column_lineage_metadata(spark, prepared.written, upstream_keys),
        },
    )
    # The tests ran on the staged rows, before the commit; their results are reported
    # after it, so that each evaluation targets the materialization this write creates
    # (Dagster links a result to the asset's latest materialization when it is yielded;
    # before the write that was the previous one, or none: "Target materialization –").
    # A partition's check status also shows only while it targets its latest one.
    yield output
    yield from check_events(context, key, staged.outcomes)


def _changed_rows(
    context: dg.AssetExecutionContext,
    spark: Any,
    lake: Any,
    spec: SqlAssetSpec,
    args: Mapping[str, Any],
    inputs: Optional[RunInputs],
    changes_since: Optional[RunInputs],
    deferred: Mapping[TableUri, Any],
) -> Optional[ChangeRead]:
    """The rows of a run that reads only its upstream's changes, or ``None`` (with the
    reason in the log) when it reads in full."""
    if inputs is None or changes_since is None:
        return None
    if deferred:
        reason = "it reads tables from the prod lake"
    else:
        read = read_changes(spark, lake, spec, args, changes_since, inputs)
        if isinstance(read, ChangeRead):
            context.log.info(f"{spec.uri}: {read.message}")
            return read
        reason = read
    context.log.info(f"{spec.uri}: reads its inputs in full: {reason}.")
    return None


def _new_rows(
    context: dg.AssetExecutionContext,
    spark: Any,
    lake: Any,
    spec: SqlAssetSpec,
    args: Mapping[str, Any],
    key: dg.AssetKey,
    deferred: Mapping[TableUri, Any],
) -> ChangeRead:
    """The rows an ``append new_rows`` appends: its SELECT over what its upstream gained
    since the versions the table's rows were read up to; the run fails (nothing appended)
    when they cannot be read, as reading the upstream whole would append its rows again."""
    from assetlake_dagster.sql.incremental import incremental_shape
    from assetlake_dagster.lake.delta_log import DeltaTableMissingError

    def fail(reason: str) -> dg.Failure:
        return dg.Failure(
            f"{spec.uri}: 'append new_rows' cannot read the rows its upstream gained: {reason}. "
            "Nothing was appended; the table stays at its version.",
            allow_retries=False,
        )

    if deferred:
        raise fail("it reads tables from the prod lake, whose versions are not this lake's")
    name = str(incremental_shape(spec).table)  # checked row-local when the project loaded
    try:
        position = appended_up_to(lake, spec.uri)
        exists = True
    except DeltaTableMissingError:
        position, exists = None, False
    if exists and position is None:  # rows appended before 'new_rows' was declared
        recorded = last_recorded_inputs(context.instance, key)
        position = dict(recorded.tables) if recorded is not None else None
    start = position.get(name) if position is not None else None
    if exists and start is None:
        raise fail(
            f"the table holds rows but no record of the version of {name} they were read up to, so reading "
            f"{name} whole would append its rows again. Drop the table to append from the start, or remove 'new_rows'"
        )
    read = read_new_rows(spark, lake, spec, args, start)
    if isinstance(read, str):
        raise fail(read)
    context.log.info(f"{spec.uri}: {read.message}")
    return read


def _external_upstreams(
    context: dg.AssetExecutionContext, spec: SqlAssetSpec, upstream_keys: Mapping[TableUri, dg.AssetKey]
) -> set[TableUri]:
    """The upstreams that are external tables (observable sources, which no asset of the
    project materializes): a missing one is to be landed, not materialized.

    Read from the code location's asset graph, which every run launched from one has (the UI,
    ``dagster asset materialize``, ``dg launch``, schedules and sensors). ``execute_in_process``
    sets none; its job's graph then answers, and a job of selected assets shows every other
    asset as external without being observable, so there nothing is claimed external.
    """
    graph = run_asset_graph(context)
    return {
        upstream.uri
        for upstream in spec.upstreams
        if upstream.uri in upstream_keys and is_observable_source(graph, upstream_keys[upstream.uri])
    }


def _audit_target(spec: SqlAssetSpec, lake, partitions: list[str]) -> WriteTarget:
    """The write the IO manager is about to make (for the tests' scopes; never written)."""
    stamp = CommitStamp(run_id="audit", asset=f"{spec.uri.schema}/{spec.uri.table}")
    return WriteTarget.from_spec(spec.materialize, lake.table_path(spec.uri), stamp, partitions)


def _run_view(
    context: dg.AssetExecutionContext,
    spark: Any,
    lake: Any,
    spec: SqlAssetSpec,
    views: Mapping[TableUri, SqlAssetSpec],
    upstream_keys: Mapping[TableUri, dg.AssetKey],
) -> dg.MaterializeResult:
    """A ``materialize view`` file's run: the view made in the catalog unless it is there as
    this content of the file made it. No data is written; the materialization records the
    view's schema and column lineage, and its data version is the file's content."""
    created = ensure_view(spark, lake, spec, views)
    context.log.info(f"{spec.uri}: view {'created' if created else 'unchanged, nothing to do'}")
    schema = spark.table(spec.uri.sql_name).schema
    descriptions = {c.name: c.description for c in spec.columns if c.description}
    metadata = {
        "dagster/column_schema": column_schema(schema, descriptions),
        "dagster/table_name": dg.MetadataValue.text(spec.uri.qualified_name),
        VIEW_METADATA_KEY: dg.MetadataValue.text("created" if created else "unchanged"),
        **column_lineage_metadata(spark, spec, upstream_keys),
    }
    return dg.MaterializeResult(
        asset_key=context.asset_key, metadata=metadata, data_version=dg.DataVersion(spec.code_version)
    )


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
        files, file_rows = version_files_here(spark, lake, path, result.version)
        metadata.update(
            materialization_metadata(spark, spec.uri, path, "manual", result, file_rows=file_rows, files=files)
        )
        # The script wrote by itself: we cannot tell whether this run committed.
        for key in ("delta/committed", "assetlake/rows_written", "delta/operation_metrics"):
            metadata.pop(key, None)
    else:
        context.log.warning(f"{spec.uri}: the manual script left no Delta table at {lake.table_path(spec.uri)}")
    return dg.MaterializeResult(asset_key=context.asset_key, metadata=metadata)
