"""What the Delta IO manager does in a run: write an output as one managed Delta commit,
and read an input.

The definitions hold :class:`~assetlake_dagster.defs.io_manager.DeltaIOManager`, whose
methods call :func:`write_output` and :func:`read_input` here once a run needs them. The
table and the strategy come from the asset's write contract
(:func:`~assetlake_dagster.defs.write_contract.materialize_spec_for`).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

import dagster as dg

from assetlake_dagster.defs.dagster_internals import (
    add_partition_output_metadata,
    input_run,
    output_run,
    set_output_data_version,
)
from assetlake_dagster.run.defer import deferred_inputs
from assetlake_dagster.lake.delta_sql import read
from assetlake_dagster.spark.engine import engine_lost_failure
from assetlake_dagster.spark.error_logs import errors_reported_by_caller
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.registration import register_current_view, register_table
from assetlake_dagster.run.materialization_metadata import (
    materialization_metadata,
    partition_row_counts,
    schema_version_metadata,
    version_files_here,
)
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.defs.write_contract import materialize_spec_for
from assetlake_dagster.run.decision import previous_data_version
from assetlake_dagster.spec import (
    COLUMN_DESCRIPTIONS_KEY,
    LAYOUT_METADATA_KEY,
    LayoutSpec,
    TableComments,
    UPSTREAM_VERSIONS_KEY,
    PUBLISH_GROUP_KEY,
    READ_VERSION_KEY,
    TableUri,
)
from assetlake_dagster.defs.partitions import with_partition_key
from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster.writes import STRATEGIES, CommitStamp, WriteResult, WriteTarget, strategy_for
from assetlake_dagster.writes.layout import LAYOUT_CHANGES_KEY, apply_layout, new_table_properties, with_column_comments
from assetlake_dagster.writes.orphans import (
    CHECKED_THROUGH_KEY,
    IN_FLIGHT,
    ORPHAN_COMMITS_KEY,
    CommitCheck,
    check_commits,
    describe_orphans,
    stamps_after,
)
from assetlake_dagster.writes.writer import this_writer, writer_is_gone
from assetlake_dagster.writes.retry import write_with_retries
from assetlake_dagster.writes.slices import describe_slice

if TYPE_CHECKING:  # PySpark (and pandas) load when a run needs them, not with the definitions
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

#: Tags Dagster puts on "re-execute from (asset) failure" runs, including automatic retries.
_RESUME_RETRY_TAGS = ("dagster/is_resume_retry", "dagster/is_asset_resume_retry")


def to_spark(spark: "SparkSession", obj: Any) -> "DataFrame":
    """Accept a Spark or pandas DataFrame (pandas goes through Arrow, keeping NULLs).

    Classic and Spark Connect DataFrames both subclass ``pyspark.sql.DataFrame``; a
    pandas DataFrame becomes one of the session's kind. Its naive timestamps are wall times
    in the session's zone (``spark.sql.session.timeZone``), with or without Arrow, whatever
    this process's zone (:func:`~assetlake_dagster.spark.python_values.pandas_in_session_zone`).
    """
    if _is_spark_frame(obj):
        return obj
    if isinstance(obj, _pandas_frame_type()):
        from assetlake_dagster.spark.python_values import pandas_in_session_zone

        return spark.createDataFrame(_contiguous(pandas_in_session_zone(spark, obj)))
    # Duck-typed DataFrames (wrappers with the same API) are written as they are.
    if hasattr(obj, "sparkSession") and hasattr(obj, "write"):
        return obj
    raise ConfigError(
        f"the Delta IO manager writes Spark or pandas DataFrames, got {type(obj).__name__}. "
        "Return a DataFrame, or give the asset another io_manager_key."
    )


def _pandas_frame_type() -> tuple[type, ...]:
    """``pandas.DataFrame`` if pandas is loaded, else nothing to match.

    Not imported here: a pandas frame (or an asset typed with one) means the user's code
    has imported pandas already, and importing it for every code-location load cost 0.4 s.
    """
    pandas = sys.modules.get("pandas")
    return (pandas.DataFrame,) if pandas is not None else ()


def _is_spark_frame(obj: Any) -> bool:
    """Whether ``obj`` is a classic or Spark Connect DataFrame (imports PySpark: a run's work)."""
    from pyspark.sql import DataFrame

    return isinstance(obj, DataFrame)


def _contiguous(pdf: "pd.DataFrame") -> "pd.DataFrame":
    """The frame with single-chunk Arrow columns.

    pandas 3 keeps strings in Arrow arrays, and e.g. ``pd.concat`` leaves them in several
    chunks, which PySpark 4.0's Arrow conversion rejects ("Cannot convert
    pyarrow.lib.ChunkedArray to pyarrow.lib.Array"). Rebuilding such a column in the same
    dtype gives one chunk, with missing values still missing.
    """
    chunked = [
        c for c in pdf.columns
        if getattr(getattr(pdf[c].array, "_pa_array", None), "num_chunks", 1) > 1
    ]
    if not chunked:
        return pdf
    pdf = pdf.copy()
    for column in chunked:
        pdf[column] = type(pdf[column])(pdf[column].to_numpy(dtype=object), dtype=pdf[column].dtype, index=pdf.index)
    return pdf


def write_output(spark: SparkDeltaResource, context: dg.OutputContext, obj: Any) -> None:
    """What ``DeltaIOManager.handle_output`` does: write ``obj`` as one managed commit to
    ``spark``'s lake."""
    lake = spark.lake
    if obj is None:
        # An asset that wrote nothing (e.g. a `manual` SQL file returning a result).
        return
    # A Spark DataFrame is written in its own session (a SQL asset's, with its
    # setup's temp views); pandas goes through the process's shared one.
    session = obj.sparkSession if _is_spark_frame(obj) else spark.get_session()
    contract = materialize_spec_for(context.asset_key, context.definition_metadata)
    uri, strategy = contract.uri, contract.strategy
    write = strategy_for(strategy)
    partitions = tuple(context.asset_partition_keys) if context.has_asset_partitions else ()
    if context.has_asset_partitions and not partitions:
        # Fail closed: a partitioned write without keys must never become a whole-table one.
        raise ConfigError(f"{uri}: the run names no partition keys; nothing was written.")
    if partitions and write.whole_table_only:
        others = "/".join(s.value for s, w in STRATEGIES.items() if not w.whole_table_only)
        raise ConfigError(f"{uri}: {write.title} is whole-table only; remove the partitions or use {others}.")
    target = WriteTarget.from_spec(contract, lake.table_path(uri), _stamp(context, uri, partitions), partitions)
    df = to_spark(session, obj)
    if partitions:
        df = with_partition_column(session, df, partitions, uri)
    layout = LayoutSpec.from_metadata(context.definition_metadata)
    comments = TableComments.from_metadata(context.definition_metadata)
    df = with_column_comments(df, comments)
    # What the first commit gives the table besides its rows (writes/create.py).
    target = dataclasses.replace(
        target,
        stamp=_with_read_position(target.stamp, context) if contract.new_rows else target.stamp,
        cluster_by=tuple(c.name for c in layout.cluster_by),
        comment=comments.table,
        properties=tuple(layout.properties),
        # A SQL file's output says what it read; its unchanged runs never get here.
        compare_content=UPSTREAM_VERSIONS_KEY not in (context.output_metadata or {}),
    )
    group = (context.definition_metadata or {}).get(PUBLISH_GROUP_KEY)
    group = getattr(group, "value", group)
    if group is None:
        _write(spark, context, session, df, uri, target, layout, comments)
        return
    # One of a publish group's commits: a failure restores the group's earlier ones.
    from assetlake_dagster.run.publish_group import member_commit

    # Each attempt starts from the versions a failed one restored: its appends are new.
    target = dataclasses.replace(target, stamp=dataclasses.replace(target.stamp, idempotency_id=context.run_id))
    with member_commit(session, context.run_id, str(group), uri, target.path) as commit:
        result = _write(spark, context, session, df, uri, target, layout, comments)
        commit.version = result.version if result.committed else None


def _write(
    spark: SparkDeltaResource,
    context: dg.OutputContext,
    session: "SparkSession",
    df: "DataFrame",
    uri: TableUri,
    target: WriteTarget,
    layout: LayoutSpec,
    comments: TableComments,
) -> "WriteResult":
    """Commit ``df`` to ``target`` and record the materialization's metadata on ``context``."""
    lake, strategy, partitions = spark.lake, target.strategy, target.partitions
    write = strategy_for(strategy)
    try:
        # A failing write is reported once, by Dagster's step failure (not also as
        # PySpark's JSON record of the same error with the JVM's stack trace).
        with new_table_properties(session, layout), errors_reported_by_caller():
            result = write_with_retries(write, session, df, target, context.log)
    except Exception as exc:
        lost = engine_lost_failure(exc, f"the write of {uri}", None if lake.is_url else target.path)
        if lost is not None:
            raise lost from exc
        raise
    layout_changes = apply_layout(session, target.path, layout, comments)
    for change in layout_changes:
        context.log.info(f"{uri}: {change['change']} {change['from']} -> {change['to']} (Delta version {change['version']})")
    register_table(session, lake, uri)
    if write.current_view:
        # Kept in step with every run, committed or not, so later steps can read it.
        register_current_view(session, lake, uri)
    context.log.info(
        f"{uri}: {strategy.value} -> "
        + (f"Delta version {result.version}" if result.committed else "no change, no new version")
    )
    # The version's checksum lists its files: the counts the commit does not state and
    # the preview come from it, without Spark, when this process reads the lake's files.
    files, file_rows = version_files_here(session, lake, target.path, result.version)
    # A batch's rows per partition (from the checksum, else one grouped query), whose
    # sum is also the slice's count.
    partition_counts = (
        partition_row_counts(session, target.path, result, partitions, file_rows) if len(partitions) > 1 else None
    )
    metadata = materialization_metadata(
        session,
        uri,
        target.path,
        strategy.value,
        result,
        partitions,
        partition_counts=partition_counts,
        key=target.key,
        descriptions=(context.definition_metadata or {}).get(COLUMN_DESCRIPTIONS_KEY),
        file_rows=file_rows,
        files=files,
    )
    _, instance = output_run(context) or (None, None)
    # The Delta version that holds the rows is the data version: a run that changed
    # nothing keeps the last one, so readers that follow data versions stay asleep.
    data_version = str(result.version) if result.committed else None
    if data_version is None:
        data_version = previous_data_version(instance, context.asset_key, partitions) or str(result.version)
    set_output_data_version(context, data_version)
    metadata.update(schema_version_metadata(instance, context.asset_key, metadata["dagster/column_schema"]))
    check = _check_commits(context, instance, session, target)
    if check is not None:
        metadata[CHECKED_THROUGH_KEY] = dg.MetadataValue.int(check.checked_through)
        if check.orphans:
            context.log.warning(describe_orphans(uri, check.orphans))
            metadata[ORPHAN_COMMITS_KEY] = dg.MetadataValue.json(check.orphans)
    if layout:
        metadata[LAYOUT_METADATA_KEY] = dg.MetadataValue.json(layout.to_json())
    if layout_changes:
        metadata[LAYOUT_CHANGES_KEY] = dg.MetadataValue.json(layout_changes)
    context.add_output_metadata(metadata)
    if partition_counts:
        # Each partition of a batch gets its own row count on its materialization.
        for partition, count in partition_counts.items():
            add_partition_output_metadata(context, {"dagster/partition_row_count": dg.MetadataValue.int(count)}, partition)
    return result


def read_input(spark: SparkDeltaResource, context: dg.InputContext) -> Any:
    """What ``DeltaIOManager.load_input`` does: read the upstream's table from ``spark``'s lake."""
    lake = spark.lake
    session = spark.get_session()
    # The upstream's own contract names its table (its key may carry a prefix).
    upstream = context.upstream_output.definition_metadata if context.upstream_output else None
    uri = materialize_spec_for(context.asset_key, upstream).uri
    version = (context.definition_metadata or {}).get(READ_VERSION_KEY)
    version = getattr(version, "value", version)
    path = lake.table_path(uri)
    deferred = deferred_inputs(session, lake, spark.defer_lake, [uri], input_run(context))
    if uri in deferred:  # a dev lake without this table reads prod's, pinned (run/defer.py)
        source = deferred[uri]
        path, version = source.path, version if version is not None else source.version
        if input_run(context) is not None:  # a bare test context has no log
            context.log.info(f"{uri}: read from the prod lake, version {version}")
    df = read(session, path, version)
    if context.dagster_type.typing_type in _pandas_frame_type():
        return df.toPandas()
    return df


def with_partition_column(spark: "SparkSession", df: "DataFrame", keys: Sequence[str], uri: TableUri) -> "DataFrame":
    """The rows with the managed ``_partition`` column: the run's key (bound, not spliced).

    Rows that already carry ``_partition`` (a SQL asset's batch, or a Python asset
    writing several partitions) keep it; the write checks it stays inside the slice.
    """
    if PARTITION_COLUMN in df.columns:
        return df
    if len(keys) > 1:
        raise ConfigError(
            f"{uri}: this run writes {len(keys)} partitions ({describe_slice(keys)}), so each row "
            f"needs a {PARTITION_COLUMN} column naming its partition key. Add it to the returned "
            "DataFrame, or run one partition per run."
        )
    return with_partition_key(spark, df, keys[0])


def _stamp(context: dg.OutputContext, uri: TableUri, partitions: Sequence[str] = ()) -> CommitStamp:
    partition = describe_slice(partitions)
    # None for a bare build_output_context() in tests.
    run, instance = output_run(context) or (None, None)
    idempotency_id = context.run_id
    if run is not None and _continues_a_failed_run(run, instance):
        # A re-execution from failure continues the original run: an append that an
        # earlier attempt already committed must not be repeated.
        idempotency_id = run.root_run_id
    return CommitStamp(
        run_id=context.run_id,
        asset=f"{uri.schema}/{uri.table}",
        partition=partition,
        idempotency_id=idempotency_id,
        code_version=_code_version(context),
        writer=this_writer(),
    )


def _with_read_position(stamp: CommitStamp, context: dg.OutputContext) -> CommitStamp:
    """``stamp`` with the upstream version an ``append new_rows``'s rows were read up to
    (its output's read metadata), so the next run appends what came after it."""
    from assetlake_dagster.run.change_feed import READ_KEY

    read = (context.output_metadata or {}).get(READ_KEY)
    read = getattr(read, "value", read)
    if not isinstance(read, Mapping) or "table" not in read or "to_version" not in read:
        return stamp
    return dataclasses.replace(stamp, read=((str(read["table"]), int(read["to_version"])),))


def _code_version(context: dg.OutputContext) -> Optional[str]:
    """The asset's code version, when the context knows its asset (not a bare test context)."""
    try:
        return context.asset_spec.code_version
    except Exception:  # DagsterInvariantViolationError: built without an asset spec
        return None


#: Run statuses of a run that has not ended.
_NOT_ENDED = frozenset({
    dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING,
})


def _check_commits(
    context: dg.OutputContext, instance: Optional[dg.DagsterInstance], session: "SparkSession", target: WriteTarget
) -> Optional[CommitCheck]:
    """The table's commits for this asset since the last check whose run is dead and never
    recorded them (see :mod:`assetlake_dagster.writes.orphans`); ``None`` without an instance."""
    if instance is None:
        return None

    def recorded(run_id: str) -> bool:
        events = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
        return any(e.dagster_event is not None and e.dagster_event.asset_key == context.asset_key for e in events)

    def judge(run_id: str, stamp: dict) -> Optional[str]:
        run = instance.get_run_by_id(run_id)
        if run is None:  # another instance's run: nothing to say about it
            return None
        if run.status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):
            return None if recorded(run_id) else run.status.value
        if run.status not in _NOT_ENDED or not stamp.get("writer") or recorded(run_id):
            return None  # (a stamp without its writer, from an older version, cannot be judged)
        if not writer_is_gone(stamp["writer"]):
            return IN_FLIGHT
        # Killed where no daemon watches (`dagster asset materialize`): it never ends by itself.
        instance.report_run_failed(
            run,
            message=(
                f"Marked failed by run {context.run_id}: the process that wrote {target.uri}'s commit "
                f"for this run ({stamp['writer']}) is gone, and the run never recorded it."
            ),
        )
        return dg.DagsterRunStatus.FAILURE.value

    try:
        previous = _checked_through(instance, context.asset_key)
        stamps, latest = stamps_after(session, target.path, previous)
        return check_commits(stamps, latest, target.asset, context.run_id, judge)
    except Exception as exc:  # noqa: BLE001 - a report, never a reason to fail a committed write
        context.log.warning(f"{target.uri}: could not check the table's commits for orphans ({exc}).")
        return None


def _checked_through(instance: dg.DagsterInstance, key: dg.AssetKey) -> Optional[int]:
    """The version up to which the asset's last materialization found every commit
    accounted for; ``None`` when none says."""
    event = instance.get_latest_materialization_event(key)
    materialization = event.asset_materialization if event is not None else None
    value = materialization.metadata.get(CHECKED_THROUGH_KEY) if materialization is not None else None
    return value.value if isinstance(value, dg.IntMetadataValue) else None


def _continues_a_failed_run(run: dg.DagsterRun, instance: dg.DagsterInstance) -> bool:
    """Whether this run re-executes a failed run (UI/daemon tag it; the Python API does not).

    A re-execution of a *successful* run is a deliberate new load and appends again.
    """
    if not run.root_run_id:
        return False
    if any(run.tags.get(tag) == "true" for tag in _RESUME_RETRY_TAGS):
        return True
    parent = instance.get_run_by_id(run.parent_run_id) if run.parent_run_id else None
    return parent is not None and parent.status in (
        dg.DagsterRunStatus.FAILURE,
        dg.DagsterRunStatus.CANCELED,
    )
