"""``assetlake plan``: what a file would run and write, without Spark or any write."""

import textwrap

from assetlake_dagster.errors import display_path
from assetlake_dagster.lake import Lake
from assetlake_dagster.spec import SqlAssetSpec, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for


def render_plan(spec: SqlAssetSpec, lake: Lake) -> str:
    """A readable plan of one file's materialization.

    Example:
        >>> print(render_plan(spec, Lake("/lake")))  # doctest: +SKIP
        asset       analytics/customers (delta://analytics/customers)
        ...
    """
    uri = spec.uri
    path = lake.table_path(uri)
    strategy = spec.materialize.strategy
    lines = [
        f"asset       {uri.schema}/{uri.table} ({uri})",
        f"file        {display_path(spec.path)}",
        f"table path  {path}",
        f"strategy    {_describe_strategy(spec)}",
        "upstreams   " + (", ".join(str(u.uri) for u in spec.upstreams) or "none"),
    ]
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
    if strategy is WriteStrategy.MANUAL:
        lines.append("Delta operation: none managed; the statements write the table themselves.")
    else:
        target = WriteTarget(
            uri=uri, path=path, strategy=strategy,
            stamp=CommitStamp(run_id="<run id>", asset=f"{uri.schema}/{uri.table}"),
            key=spec.materialize.key,
            track=spec.materialize.track,
            close_deletes=spec.materialize.close_deletes,
        )
        plan = strategy_for(strategy).plan(target, spec.output_columns)
        lines += [f"Delta operation: {plan.operation}", textwrap.indent(plan.statement, "  ")]
        if plan.predicate:
            lines.append(f"predicate: {plan.predicate}")
    lines.append("(plan only: nothing was run or written)")
    return "\n".join(lines)


def _describe_strategy(spec: SqlAssetSpec) -> str:
    strategy = spec.materialize.strategy
    if strategy is WriteStrategy.MERGE:
        return f"merge on key ({', '.join(spec.materialize.key)})"
    if strategy is WriteStrategy.HISTORY:
        track = ", ".join(spec.materialize.track) or "every non-key column"
        deletes = "close" if spec.materialize.close_deletes else "soft (absent keys stay current)"
        return f"history on key ({', '.join(spec.materialize.key)}), track {track}, deletes {deletes}"
    return strategy.value
