"""``assetlake plan``: what a file would run and write, without Spark or any write."""

import textwrap
from typing import Optional

from assetlake_dagster.defs.dagster_internals import time_window_of
from assetlake_dagster.errors import ConfigError, display_path
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.defs.partitions import partitions_definition
from assetlake_dagster.spec import PartitionKind, SqlAssetSpec, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for


def render_plan(spec: SqlAssetSpec, lake: Lake, partition: Optional[str] = None) -> str:
    """A readable plan of one file's materialization.

    Example:
        >>> print(render_plan(spec, Lake("/lake")))  # doctest: +SKIP
        asset       analytics/customers (delta://analytics/customers)
        ...
    """
    uri = spec.uri
    path = lake.table_path(uri)
    strategy = spec.materialize.strategy
    # `manual` and `view` have no write class: a manual file's statements write the table
    # themselves; a view is made in the catalog and writes nothing.
    write = None if strategy in (WriteStrategy.MANUAL, WriteStrategy.VIEW) else strategy_for(strategy)
    lines = [
        f"asset       {uri.schema}/{uri.table} ({uri})",
        f"file        {display_path(spec.path)}",
        f"table path  {path}",
        f"strategy    {write.describe(spec.materialize) if write else strategy.value}",
        "upstreams   " + (", ".join(str(u.uri) for u in spec.upstreams) or "none"),
    ]
    if spec.publish_with is not None:
        lines.append(
            f"publish     with group '{spec.publish_with.name}': staged and audited with the group's other tables, "
            "committed only if every one passes, in dependency order (a failed commit restores the earlier ones)"
        )
    if spec.partitions is not None:
        lines.append(f"partitions  {_describe_partitions(spec)}")
        if partition is None:
            partition = _example_partition(spec)
        lines.append(f"partition   {partition!r} (bound as :partition; pass --partition to choose)")
        window = _partition_window(spec, partition)
        if window:
            lines.append(f"window      {window}")
    elif partition is not None:
        raise ConfigError(f"{display_path(spec.path)} is not partitioned; drop --partition.")
    if spec.arguments:
        lines.append("arguments   " + ", ".join(
            f":{a.name} ({a.type.value})" + (f" = {a.default!r}" if a.has_default else ", required")
            for a in spec.arguments
        ))
    for stmt in spec.setup:
        lines += ["", f"setup (line {stmt.line}):", textwrap.indent(stmt.sql, "  ")]
    if spec.select is not None:
        title = "last statement" if strategy is WriteStrategy.MANUAL else "query"
        lines += ["", f"{title} (line {spec.select.line}), parameters bound as markers, never spliced:",
                  textwrap.indent(spec.select.sql, "  ")]
    lines.append("")
    if strategy is WriteStrategy.VIEW:
        lines.append(
            f"Catalog: CREATE OR REPLACE VIEW {uri.sql_name} AS the query, when the view is missing or was made "
            "from other content of this file; no data is written."
        )
    elif write is None:
        lines.append("Delta operation: none managed; the statements write the table themselves.")
    else:
        target = WriteTarget.from_spec(
            spec.materialize,
            path,
            CommitStamp(run_id="<run id>", asset=f"{uri.schema}/{uri.table}"),
            partitions=(partition,) if partition is not None else (),
        )
        plan = write.plan(target, spec.output_columns)
        lines += [f"Delta operation: {plan.operation}", textwrap.indent(plan.statement, "  ")]
        if plan.predicate:
            lines.append(f"predicate: {plan.predicate}")
    if spec.data_tests:
        partitioned = spec.partitions is not None
        scope = write.test_scope(partitioned) if write else ("the slice" if partitioned else "the table")
        lines += ["", f"data tests (asset checks, run on {scope} as staged, before the commit):"]
        lines += [f"  {t.name}: {t.description}" + ("" if t.blocking else " [warn]") for t in spec.data_tests]
    lines.append("(plan only: nothing was run or written)")
    return "\n".join(lines)


def _describe_partitions(spec: SqlAssetSpec) -> str:
    p = spec.partitions
    if p.kind is PartitionKind.STATIC:
        text = "static " + ", ".join(repr(v) for v in p.values)
    elif p.kind is PartitionKind.DYNAMIC:
        text = f"dynamic {p.name}"
    else:
        # Dagster's end date is exclusive: `end=2024-01-11` makes 2024-01-10 the last day.
        text = f"{p.kind.value} from {p.start}" + (f" to {p.end} (exclusive)" if p.end else "") + f" ({p.timezone or 'UTC'})"
    return f"{text}; backfills write {p.batch_size} partitions per run and commit"


def _partition_window(spec: SqlAssetSpec, partition: str) -> Optional[str]:
    """A time partition's bound window, its end marked exclusive (``None`` for other kinds).

    Example:
        >>> _partition_window(daily_spec, "2024-01-01")  # doctest: +SKIP
        'partition_start = 2024-01-01 00:00:00+00:00, partition_end = 2024-01-02 00:00:00+00:00 (exclusive)'
    """
    if spec.partitions.kind in (PartitionKind.STATIC, PartitionKind.DYNAMIC):
        return None
    try:
        window = time_window_of(partitions_definition(spec.partitions), partition)
    except Exception:  # not a key of this definition: the plan still shows the rest
        return None
    return f"partition_start = {window.start}, partition_end = {window.end} (exclusive)"


def _example_partition(spec: SqlAssetSpec) -> str:
    p = spec.partitions
    if p.kind is PartitionKind.STATIC:
        return p.values[0]
    if p.kind is PartitionKind.DYNAMIC:
        return "<partition key>"
    return partitions_definition(p).get_first_partition_key() or p.start

