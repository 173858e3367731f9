"""Tables published together: the run of a ``-- publish_with <group>`` group.

Open-source Delta has no transaction over several tables, so a group is published in three
steps, all in one Dagster step:

1. **Stage and audit** every member, in dependency order, writing nothing. A member that
   reads another member reads that member's table *as its write will leave it* (a view of the
   staged rows, the committed rows the write keeps included), not the committed table.
2. If any blocking test failed, **nothing commits**: every member's results are reported
   and the run fails, naming the members that failed.
3. **Commit** the members one after the other, in dependency order (each through the Delta
   IO manager: one commit per table). If a commit fails, the members this run already
   committed are **restored** to their prior versions (Delta ``RESTORE``; a table this run
   created has its rows deleted), and the run fails saying what was restored.

A run that commits every member appends one row to the lake's publish log
(:mod:`assetlake_dagster.lake.publish_log`): the group's tables and the version each was
left at, so that a reader can pin a consistent set ("as of the group's publish N"). Between
the first and the last commit a reader of the latest versions can see some members new and
others not yet; a reader that pins the publish log's versions never does.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import dagster as dg

from assetlake_dagster.defs.checks import check_events, refuse_run_retries, selected_tests
from assetlake_dagster.errors import PublishError
from assetlake_dagster.lake.delta_sql import is_delta_table, path_identifier, read
from assetlake_dagster.lake.publish_log import record_publish
from assetlake_dagster.lake.versions import current_version
from assetlake_dagster.run.decision import RunInputs, Skip, decide, skipped_run_events
from assetlake_dagster.run.sql_asset import PreparedRun, StagedRows, prepare_run, publish_rows, stage_rows
from assetlake_dagster.spark.python_values import in_session_zone
from assetlake_dagster.spark.session import local_checkpoint
from assetlake_dagster.spec import SqlAssetSpec, TableUri
from assetlake_dagster.writes import strategy_for
from assetlake_dagster.writes.slices import partition_predicate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from assetlake_dagster.defs.resources import SparkDeltaResource

#: Run tag naming the group a run published and each table's version, ``<group>: s.t@3, …``.
PUBLISHED_TAG_PREFIX = "assetlake/published."


@dataclass(frozen=True)
class GroupMember:
    """One file of the group as its run needs it: the file, its Dagster asset, the name of
    its output and the keys of its upstreams."""

    spec: SqlAssetSpec
    asset_spec: dg.AssetSpec
    output_name: str
    upstream_keys: Mapping[TableUri, dg.AssetKey]

    @property
    def key(self) -> dg.AssetKey:
        return self.asset_spec.key


def run_publish_group(
    context: dg.AssetExecutionContext,
    group: str,
    members: Sequence[GroupMember],
    resource: "SparkDeltaResource",
    views: Mapping[TableUri, SqlAssetSpec] = {},
) -> Iterator[Any]:
    """The body of a publish group's compute: ``members`` in dependency order."""
    decisions = {m.key: decide(context, m.spec, resource.lake, {}, m.key) for m in members}
    if all(isinstance(d, Skip) for d in decisions.values()):
        # Nothing any member reads changed: nothing is staged, nothing commits.
        for member in members:
            yield from skipped_run_events(context, member.spec, member.key, member.output_name, decisions[member.key])
        return
    inputs = {key: d.inputs for key, d in decisions.items()}
    sessions: list[SparkSession] = []
    staged_views: dict[TableUri, str] = {}
    read_by_others = {u.uri for m in members for u in m.spec.upstreams} & {m.spec.uri for m in members}
    run_id = context.run.run_id
    try:
        staged: list[tuple[GroupMember, PreparedRun, StagedRows]] = []
        for member in members:
            spark = resource.new_session()
            sessions.append(spark)
            args = in_session_zone(spark, {})
            reads = {u.uri: staged_views[u.uri] for u in member.spec.upstreams if u.uri in staged_views}
            prepared = prepare_run(context, spark, resource, member.spec, member.upstream_keys, views, staged=reads)
            tests = selected_tests(context, member.spec, member.key)
            # Read in full (a member's change feed would be read before its upstream's commit), and
            # fixed: a member's rows must not be read again after another member commits.
            rows = stage_rows(
                context, spark, resource.lake, prepared, tests, args, inputs[member.key], None, member.key, fixed=True
            )
            staged.append((member, prepared, rows))
            if member.spec.uri in read_by_others:
                staged_views[member.spec.uri] = _stage_view(spark, rows, run_id)
        failed = [(m, rows) for m, _, rows in staged if rows.failure is not None]
        if failed:
            for member, _, rows in staged:
                yield from check_events(context, member.key, rows.outcomes)
            refuse_run_retries(context.instance, run_id)
            raise group_audit_failure(group, [m.spec.uri for m, _ in failed], [rows.failure for _, rows in failed])
        with publishing(run_id, group) as commits:
            for spark, (member, prepared, rows) in zip(sessions, staged):
                committed = {str(c.uri): c.version for c in commits if c.version is not None}
                yield from publish_rows(
                    context, spark, resource, prepared, rows, member.key, member.output_name,
                    _read_committed(inputs[member.key], committed), member.upstream_keys,
                    upstream_versions={**prepared.upstream_versions, **_staged_reads(prepared, committed)},
                )
            versions = {c.uri: c.version if c.version is not None else c.prior for c in commits}
        number = record_publish(sessions[0], resource.lake, group, run_id, versions)
        shown = ", ".join(f"{uri.sql_name}@{version}" for uri, version in versions.items())
        context.instance.add_run_tags(run_id, {PUBLISHED_TAG_PREFIX + group: f"publish {number}: {shown}"})
        context.log.info(f"publish group '{group}': publish {number}, {shown}")
    finally:
        if sessions:
            _drop_views(sessions[0], staged_views.values())
        for spark in sessions:
            resource.release_session(spark)


def _drop_views(spark: "SparkSession", names: Iterable[str]) -> None:
    """Drop the group's staged views (global: they would outlive the run's sessions)."""
    for name in names:
        with suppress(Exception):  # a lost engine took them with it
            spark.catalog.dropGlobalTempView(name.rsplit(".", 1)[-1])


def _stage_view(spark: "SparkSession", rows: StagedRows, run_id: str) -> str:
    """A global temporary view of the member's table as its write will leave it, for the
    members that read it (each in a session of its own); its SQL name."""
    after = table_after_write(spark, rows)
    if after is not rows.rows:  # it reads the committed table, which the group's commits change
        after = local_checkpoint(after)
    name = f"_assetlake_staged_{run_id.replace('-', '')[:12]}_{uuid.uuid4().hex[:8]}"
    after.createOrReplaceGlobalTempView(name)
    database = spark.conf.get("spark.sql.globalTempDatabase", "global_temp")
    return f"{database}.{name}"


def table_after_write(spark: "SparkSession", rows: StagedRows) -> "DataFrame":
    """The whole table once ``rows`` are written: the strategy's staged scope (the rows the
    write leaves in its scope), plus, for a partitioned write, the committed partitions
    outside the slice."""
    target = rows.target
    scope, _ = strategy_for(target.strategy).staged_scope(spark, rows.rows, target)
    if not target.partitioned or not is_delta_table(spark, target.path):
        return scope
    others = read(spark, target.path).where(f"NOT ({partition_predicate(target.partitions)})")
    return others.unionByName(scope, allowMissingColumns=True)


def _staged_reads(prepared: PreparedRun, committed: Mapping[str, int]) -> dict[str, Optional[int]]:
    """The versions a member read of the members it read staged: those they committed."""
    return {str(uri): committed.get(str(uri)) for uri in prepared.staged}


def _read_committed(inputs: Optional[RunInputs], committed: Mapping[str, int]) -> Optional[RunInputs]:
    """``inputs`` with the members read staged at the versions they committed, so the next
    run's decision compares against what this run's rows came from."""
    if inputs is None:
        return None
    tables = {table: committed.get(table, version) for table, version in inputs.tables.items()}
    return dataclasses.replace(inputs, tables=tables)


def group_audit_failure(group: str, failed: Sequence[TableUri], failures: Sequence[dg.Failure]) -> PublishError:
    """The failure of a group whose audit failed: no member was committed."""
    names = ", ".join(str(uri) for uri in failed)
    details = " ".join(f.description or "" for f in failures)
    return PublishError(
        (
            f"publish group '{group}': {names} failed a blocking data test, so no table of the group was "
            f"committed; each stays at its version. {details}"
        ),
        metadata={"failed_tables": dg.MetadataValue.json([str(uri) for uri in failed])},
        allow_retries=False,
    )


# --- the commits, as the IO manager makes them -----------------------------------------


@dataclass
class GroupCommit:
    """One member's commit in a group's publish.

    Attributes:
        uri: the table.
        path: its location.
        prior: its version before the publish (``None``: this publish creates it).
        version: the version the write committed (``None``: it changed nothing).
    """

    uri: TableUri
    path: str
    prior: Optional[int]
    version: Optional[int] = None


#: The publishes in flight in this process, by (run, group): the commits made so far. The
#: group's compute and the IO manager's writes of its outputs run in the same process, one
#: after the other.
_IN_FLIGHT: dict[tuple[str, str], list[GroupCommit]] = {}
_LOCK = threading.Lock()


@contextmanager
def publishing(run_id: str, group: str) -> Iterator[list[GroupCommit]]:
    """While the group's outputs are written: the commits made so far, in order."""
    commits: list[GroupCommit] = []
    with _LOCK:
        _IN_FLIGHT[(run_id, group)] = commits
    try:
        yield commits
    finally:
        with _LOCK:
            _IN_FLIGHT.pop((run_id, group), None)


@contextmanager
def member_commit(
    spark: "SparkSession", run_id: str, group: str, uri: TableUri, path: str
) -> Iterator[GroupCommit]:
    """Around the IO manager's write of one member: record its commit, or, when the write
    fails, restore the members this publish committed (this one too, if it committed) and
    fail the run saying so. Set ``version`` on the yielded commit once the write committed."""
    with _LOCK:
        commits = _IN_FLIGHT.get((run_id, group))
    commit = GroupCommit(uri, path, prior=current_version(spark, path))
    try:
        yield commit
    except Exception as exc:
        if commit.version is None:
            latest = current_version(spark, path)
            commit.version = latest if latest != commit.prior else None
        earlier = list(commits) if commits is not None else []
        undone = roll_back(spark, [*earlier, commit])
        raise PublishError(
            f"publish group '{group}': the commit of {uri} failed ({type(exc).__name__}: {exc}). "
            + (" ".join(undone) if undone else "No table of the group had been committed."),
            allow_retries=False,
        ) from exc
    if commits is not None:
        commits.append(commit)


def roll_back(spark: "SparkSession", commits: Sequence[GroupCommit]) -> list[str]:
    """Undo ``commits``, newest first: ``RESTORE`` to the prior version, or delete the rows
    of a table the publish created. A table another writer committed to since is left as
    it is. One sentence per table."""
    said = []
    for commit in reversed(commits):
        if commit.version is None:
            continue
        table = path_identifier(commit.path)
        try:
            latest = current_version(spark, commit.path)
            if latest != commit.version:
                said.append(
                    f"{commit.uri} was not restored: another writer committed version {latest} after this run's "
                    f"{commit.version}; restore it yourself (RESTORE TABLE {table} TO VERSION AS OF {commit.prior})."
                )
            elif commit.prior is None:
                spark.sql(f"DELETE FROM {table}").collect()
                said.append(f"{commit.uri} was created by this run: its rows were deleted (version {current_version(spark, commit.path)}).")
            else:
                spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF {int(commit.prior)}").collect()
                said.append(f"{commit.uri} was restored to version {commit.prior} (as version {current_version(spark, commit.path)}).")
        except Exception as exc:  # noqa: BLE001 - say it and go on restoring the others
            said.append(
                f"{commit.uri} could not be restored ({type(exc).__name__}: {exc}); restore it yourself "
                f"(RESTORE TABLE {table} TO VERSION AS OF {commit.prior})."
            )
    return said
