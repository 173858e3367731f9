"""The project as a graph of tables: every cross-file check, in one place.

``load_project`` calls :func:`check_project` once the files are parsed, and both
``assetlake validate`` and the loader (``build_definitions``) go through ``load_project``,
so they report the same problems, each once. Tables are compared by name (Spark resolves
them case-insensitively), never by Dagster asset key: a translator may rename keys.
"""

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from typing import Optional

from assetlake_dagster.errors import Diagnostic, SourceLocation, SourceText, did_you_mean
from assetlake_dagster.project.python_assets import PythonTable
from assetlake_dagster.spec import (
    DEFAULT_BACKFILL_BATCH,
    HISTORY_COLUMNS,
    PARTITION_COLUMN,
    RESERVED_TABLE_SUFFIX,
    SqlAssetSpec,
    TableUri,
    UpstreamSpec,
    WriteStrategy,
)

#: A table as Spark resolves it: schema and table name, lower case.
TableKey = tuple[str, str]


def check_project(
    specs: Sequence[SqlAssetSpec],
    sources: dict[str, SourceText],
    python: Sequence[PythonTable] = (),
    python_reads: Sequence[TableUri] = (),
) -> tuple[list[SqlAssetSpec], tuple[TableUri, ...], list[Diagnostic]]:
    """Check the SQL files against each other and against the Python assets' tables.

    One producer per table (a SQL file or a Python asset), ``window=`` upstreams
    partitioned alike, ``relationships`` tests naming a known table, no dependency cycles.

    Args:
        specs: one spec per SQL file (also those with per-file problems, so that every
            problem is reported in one round).
        sources: each spec's file by ``spec.path``, to quote lines in the problems.
        python: the tables the folder's Python assets write.
        python_reads: the tables the Python assets declare as upstreams.

    Returns:
        The specs with every upstream spelled as its producer spells it, the external
        tables (read by SQL or Python, produced by nothing in the project) sorted, and
        the problems.

    Example:
        >>> from assetlake_dagster.project.load import parse_file
        >>> spec, _ = parse_file("a.sql", "-- materialize delta://m/a\\n\\nSELECT id FROM Raw.X")
        >>> checked, external, problems = check_project([spec], {spec.path: SourceText.of("a.sql", "")})
        >>> [str(uri) for uri in external], problems
        (['delta://Raw/X'], [])
    """
    producers: dict[TableKey, list[SqlAssetSpec]] = defaultdict(list)
    for spec in specs:
        producers[table_key(spec.uri)].append(spec)
    diagnostics = _duplicate_targets(producers, sources) + _python_conflicts(producers, python, sources)
    canonical = _canonical_spellings(specs, producers, python)
    specs = [_canonical_upstreams(spec, canonical) for spec in specs]
    diagnostics.extend(_windows(specs, sources, {k: g[0] for k, g in producers.items()}))
    diagnostics.extend(_time_zones(specs, sources, {k: g[0] for k, g in producers.items()}))
    diagnostics.extend(_cycles(specs, sources))
    diagnostics.extend(_publish_groups(specs, sources))
    produced = set(producers) | {table_key(table.uri) for table in python}
    read = {table_key(u.uri) for spec in specs for u in spec.upstreams}
    diagnostics.extend(_test_references(specs, sources, produced | read))
    diagnostics.extend(_column_sources(specs, sources, {k: g[0] for k, g in producers.items()}))
    external = {u.uri for spec in specs for u in spec.upstreams if table_key(u.uri) not in produced}
    # A table only Python reads is external too; one the SQL reads keeps the SQL's spelling.
    known = produced | {table_key(uri) for uri in external}
    only_python = {table_key(uri): uri for uri in reversed(python_reads) if table_key(uri) not in known}
    external |= set(only_python.values())
    return specs, tuple(sorted(external, key=uri_order)), diagnostics


def _duplicate_targets(
    producers: dict[TableKey, list[SqlAssetSpec]], sources: dict[str, SourceText]
) -> list[Diagnostic]:
    diagnostics = []
    for group in producers.values():
        for spec in group if len(group) > 1 else ():
            others = ", ".join(_where(o.materialize.location) for o in group if o is not spec)
            diagnostics.append(
                _at_target(
                    spec,
                    sources,
                    f"{spec.uri} is also materialized by {others}.",
                    "A table has exactly one producing file; retarget or remove one '-- materialize' line.",
                )
            )
    return diagnostics


def _python_conflicts(
    producers: dict[TableKey, list[SqlAssetSpec]], python: Sequence[PythonTable], sources: dict[str, SourceText]
) -> list[Diagnostic]:
    """A table written by a SQL file and by a Python asset: each run would overwrite the other."""
    return [
        _at_target(
            spec,
            sources,
            f"{spec.uri} is also produced by {table.describe()}.",
            "A table has exactly one producer; retarget the '-- materialize' line or the Python asset's table.",
        )
        for table in python
        for spec in producers.get(table_key(table.uri), ())
    ]


def _at_target(spec: SqlAssetSpec, sources: dict[str, SourceText], message: str, hint: str) -> Diagnostic:
    location = spec.materialize.location
    return sources[spec.path].diagnostic(location.line, location.col, message, hint, span=len(str(spec.uri)))


def _canonical_spellings(
    specs: Sequence[SqlAssetSpec], producers: dict[TableKey, list[SqlAssetSpec]], python: Sequence[PythonTable]
) -> dict[TableKey, TableUri]:
    # Spark resolves table names case-insensitively: `FROM Analytics.Orders` reads the table
    # that delta://analytics/orders produces, so every reference takes one spelling: the
    # producer's, else the first seen (files in path order). Asset keys then match.
    canonical = {key: group[0].uri for key, group in producers.items()}
    # `schema.<table>_current` is the companion view of a history table: reading it
    # depends on the table's asset, not on an external table of that name.
    for key, group in producers.items():
        if group[0].materialize.strategy is WriteStrategy.HISTORY:
            canonical[(key[0], key[1] + RESERVED_TABLE_SUFFIX)] = group[0].uri
    for table in python:
        canonical.setdefault(table_key(table.uri), table.uri)
    for spec in sorted(specs, key=lambda s: s.path):
        for upstream in spec.upstreams:
            canonical.setdefault(table_key(upstream.uri), upstream.uri)
    return canonical


def _test_references(
    specs: Sequence[SqlAssetSpec], sources: dict[str, SourceText], known: set[TableKey]
) -> list[Diagnostic]:
    """``relationships … -> delta://s/t.c`` must name a table produced or read in the project."""
    diagnostics = []
    for spec in specs:
        for test in spec.data_tests:
            if test.ref_uri is None or table_key(test.ref_uri) in known:
                continue
            where = test.location
            diagnostics.append(
                sources[spec.path].diagnostic(
                    where.line,
                    where.col,
                    f"data test references {test.ref_uri}, which is no asset of this project.",
                    "Point it at a table a SQL file or Python asset produces, or one the SQL reads.",
                    span=len(test.columns[0]),
                )
            )
    return diagnostics


def _windows(
    specs: list[SqlAssetSpec], sources: dict[str, SourceText], producers: dict[TableKey, SqlAssetSpec]
) -> list[Diagnostic]:
    """``window=`` needs this file and the upstream partitioned by the window's unit."""
    diagnostics = []
    for spec in specs:
        for upstream in spec.upstreams:
            if upstream.window is None:
                continue
            kind = upstream.window.kind.value
            ours = spec.partitions.kind if spec.partitions else None
            producer = producers.get(table_key(upstream.uri))
            theirs = producer.partitions.kind if producer and producer.partitions else None
            problem = None
            if ours is not upstream.window.kind:
                problem = (
                    f"window={upstream.window.text} needs this file partitioned {kind}.",
                    f"Add '-- partitioned {kind} start=…', or use a window in this file's unit.",
                )
            elif producer is not None and theirs is not upstream.window.kind:
                problem = (
                    f"window={upstream.window.text} needs {upstream.uri} partitioned {kind}.",
                    f"{_where(producer.materialize.location)} is "
                    + (f"partitioned {theirs.value}" if theirs else "not partitioned")
                    + "; drop window= to read all of it.",
                )
            if problem:
                location = upstream.location
                diagnostics.append(
                    sources[spec.path].diagnostic(location.line, location.col, *problem, span=len(str(upstream.uri)))
                )
    return diagnostics


def publish_groups(specs: Sequence[SqlAssetSpec]) -> dict[str, list[SqlAssetSpec]]:
    """The ``-- publish_with`` groups by name, each member after the members it reads (the
    order a run stages and commits them in), else in file order.

    Example:
        >>> from assetlake_dagster.project.load import parse_file
        >>> a, _ = parse_file("a.sql", "-- materialize delta://m/a\\n-- publish_with g\\n\\nSELECT 1 AS id")
        >>> b, _ = parse_file("b.sql", "-- materialize delta://m/b\\n-- publish_with g\\n\\nSELECT id FROM m.a")
        >>> [str(s.uri) for s in publish_groups([b, a])["g"]]
        ['delta://m/a', 'delta://m/b']
    """
    groups: dict[str, list[SqlAssetSpec]] = defaultdict(list)
    for spec in specs:
        if spec.publish_with is not None:
            groups[spec.publish_with.name].append(spec)
    return {name: _dependency_order(members) for name, members in groups.items()}


def _dependency_order(members: list[SqlAssetSpec]) -> list[SqlAssetSpec]:
    by_key = {table_key(m.uri): m for m in members}
    ordered: list[SqlAssetSpec] = []
    placed: set[TableKey] = set()

    def place(member: SqlAssetSpec, path: tuple[TableKey, ...] = ()) -> None:
        key = table_key(member.uri)
        if key in placed or key in path:  # a cycle is reported by _cycles
            return
        for upstream in member.upstreams:
            producer = by_key.get(table_key(upstream.uri))
            if producer is not None:
                place(producer, (*path, key))
        placed.add(key)
        ordered.append(member)

    for member in members:
        place(member)
    return ordered


def _publish_groups(specs: list[SqlAssetSpec], sources: dict[str, SourceText]) -> list[Diagnostic]:
    """A publish group has two or more members, partitioned alike; a member that reads
    another reads its staged rows, which a history table or an ``append new_rows`` reader
    cannot be given."""
    diagnostics = []

    def error(spec: SqlAssetSpec, message: str, hint: str) -> None:
        location = spec.publish_with.location
        line, col = (location.line, location.col) if location else (1, 1)
        diagnostics.append(sources[spec.path].diagnostic(line, col, message, hint, span=len("publish_with")))

    for name, members in publish_groups(specs).items():
        if len(members) == 1:
            error(
                members[0],
                f"publish group '{name}' has no other member.",
                f"Add '-- publish_with {name}' to the files to publish with this one, or remove the line.",
            )
            continue
        for member in members:
            for argument in member.arguments:
                location = argument.location
                diagnostics.append(sources[member.path].diagnostic(
                    location.line, location.col,
                    f"'${argument.name}' cannot be given to a member of publish group '{name}': the group runs as "
                    "one step, which takes no file's run config.",
                    "Write the value into the SQL, or publish this file outside the group.",
                    span=len(argument.name) + 1,
                ))
        first = members[0]
        for member in members[1:]:
            if _slicing(member) != _slicing(first):
                error(
                    member,
                    f"publish group '{name}' mixes partitions: {member.uri} is "
                    f"{_describe_slicing(member)}, {first.uri} ({_where(first.materialize.location)}) is "
                    f"{_describe_slicing(first)}.",
                    "A group's tables commit in one run, slice by slice: give them the same '-- partitioned' line.",
                )
        by_key = {table_key(m.uri): m for m in members}
        for member in members:
            for upstream in member.upstreams:
                read = by_key.get(table_key(upstream.uri))
                if read is None:
                    continue
                if read.materialize.strategy is WriteStrategy.HISTORY:
                    error(
                        member,
                        f"{member.uri} reads {read.uri}, a history table of its own publish group '{name}'.",
                        "A member reads the others' rows as staged, which a history table's versions are not; "
                        "publish one of them outside the group.",
                    )
                elif member.materialize.new_rows:
                    error(
                        member,
                        f"'append new_rows' reads {read.uri}'s new commits, which its publish group '{name}' "
                        "has not made yet.",
                        "Remove 'new_rows' (the member then reads the staged table), or publish it outside the group.",
                    )
    return diagnostics


def _slicing(spec: SqlAssetSpec) -> Optional[tuple]:
    p = spec.partitions
    return None if p is None else (p.kind, p.start, p.end, p.timezone, p.values, p.name, p.batch_size)


def _describe_slicing(spec: SqlAssetSpec) -> str:
    p = spec.partitions
    if p is None:
        return "not partitioned"
    return f"partitioned {p.kind.value}" + (f" from {p.start}" if p.start else "") + (f" batch={p.batch_size}" if p.batch_size != DEFAULT_BACKFILL_BATCH else "")


def _time_zones(
    specs: list[SqlAssetSpec], sources: dict[str, SourceText], producers: dict[TableKey, SqlAssetSpec]
) -> list[Diagnostic]:
    """Time windows read time windows of the same zone: Dagster maps them only within one
    (``Timezones UTC and Pacific/Kiritimati don't match`` when a run or backfill maps them)."""
    diagnostics = []
    for spec in specs:
        if spec.partitions is None or not spec.partitions.kind.is_time_window:
            continue
        ours = spec.partitions.timezone or "UTC"
        for upstream in spec.upstreams:
            producer = producers.get(table_key(upstream.uri))
            if producer is None or producer.partitions is None or not producer.partitions.kind.is_time_window:
                continue
            theirs = producer.partitions.timezone or "UTC"
            if theirs != ours:
                location = upstream.location
                diagnostics.append(
                    sources[spec.path].diagnostic(
                        location.line,
                        location.col,
                        f"this file's partitions are in {ours}, those of {upstream.uri} in {theirs} "
                        f"({_where(producer.materialize.location)}).",
                        "Dagster maps time windows only within one time zone; give both '-- partitioned' "
                        "lines the same tz= (none means UTC).",
                        span=len(str(upstream.uri)),
                    )
                )
    return diagnostics


def _canonical_upstreams(spec: SqlAssetSpec, canonical: dict[TableKey, TableUri]) -> SqlAssetSpec:
    renamed: dict[TableKey, UpstreamSpec] = {}
    for upstream in spec.upstreams:  # two spellings may meet: the declared one wins
        uri = canonical[table_key(upstream.uri)]
        if table_key(uri) == table_key(spec.uri):
            continue  # a history file may read its own `_current` view
        if table_key(uri) not in renamed or (upstream.declared and not renamed[table_key(uri)].declared):
            renamed[table_key(uri)] = dataclasses.replace(upstream, uri=uri)
    upstreams = tuple(sorted(renamed.values(), key=lambda u: uri_order(u.uri)))
    columns = tuple(
        dataclasses.replace(
            column,
            sources=tuple(
                dataclasses.replace(source, uri=canonical.get(table_key(source.uri), source.uri))
                for source in column.sources
            ),
        )
        for column in spec.columns
    )
    if upstreams == spec.upstreams and columns == spec.columns:
        return spec
    return dataclasses.replace(spec, upstreams=upstreams, columns=columns)


def _column_sources(
    specs: Sequence[SqlAssetSpec], sources: dict[str, SourceText], producer: dict[TableKey, SqlAssetSpec]
) -> list[Diagnostic]:
    """``-- column <out> <- <table>.<c>`` names a column the table has, where the producing
    file's SELECT states its columns (tables of ``SELECT *`` and external tables are not
    checked at load)."""
    diagnostics = []
    for spec in specs:
        for column in spec.columns:
            for source in column.sources:
                upstream = producer.get(table_key(source.uri))
                known = _table_columns(upstream) if upstream is not None else None
                if known is None or source.column.lower() in {c.lower() for c in known}:
                    continue
                where = source.location
                diagnostics.append(
                    sources[spec.path].diagnostic(
                        where.line,
                        where.col + len(str(source.uri)) + 1,
                        f"{source.uri} has no column '{source.column}'.",
                        (did_you_mean(source.column, known).strip() or f"Its columns: {', '.join(known)}."),
                        span=len(source.column),
                    )
                )
    return diagnostics


def _table_columns(spec: SqlAssetSpec) -> Optional[list[str]]:
    """The columns of the table ``spec`` writes, when its SELECT states them."""
    if spec.output_columns is None or spec.materialize.strategy is WriteStrategy.MANUAL:
        return None
    managed = [PARTITION_COLUMN] if spec.partitions else []
    if spec.materialize.strategy is WriteStrategy.HISTORY:
        managed += list(HISTORY_COLUMNS)
    return [*spec.output_columns, *managed]


def _cycles(specs: list[SqlAssetSpec], sources: dict[str, SourceText]) -> list[Diagnostic]:
    """One diagnostic per dependency cycle among produced tables."""
    producer: dict[TableKey, SqlAssetSpec] = {}
    for spec in specs:
        producer.setdefault(table_key(spec.uri), spec)  # a duplicate target is reported already
    reads: dict[TableKey, list[TableKey]] = {
        key: [table_key(u.uri) for u in spec.upstreams if table_key(u.uri) in producer]
        for key, spec in producer.items()
    }
    diagnostics = []
    for component in _strongly_connected(reads):
        if len(component) < 2:
            continue  # self-reads were dropped when upstreams merged
        start = min(component, key=lambda k: producer[k].path)
        cycle = _path_back(start, reads, component)
        names = [str(producer[k].uri) for k in cycle + [start]]
        chain = f"{names[0]} reads " + ", which reads ".join(names[1:])
        first = producer[start]
        upstream = next(u for u in first.upstreams if table_key(u.uri) == cycle[1])
        span = len(str(upstream.uri)) if upstream.declared else len(upstream.uri.sql_name)
        location = upstream.location or first.materialize.location
        diagnostics.append(
            sources[first.path].diagnostic(
                location.line,
                location.col,
                f"dependency cycle: {chain}.",
                "Assets must form a DAG; remove one of these reads.",
                span=span,
            )
        )
    return diagnostics


def _strongly_connected(graph: dict[TableKey, list[TableKey]]) -> list[list[TableKey]]:
    """Tarjan's algorithm, iterative: projects of 1000+ files would exceed Python's recursion."""
    index: dict[TableKey, int] = {}
    low: dict[TableKey, int] = {}
    stack: list[TableKey] = []
    on_stack: set[TableKey] = set()
    components = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(graph[successor])))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def _path_back(
    start: TableKey, graph: dict[TableKey, list[TableKey]], within: list[TableKey]
) -> list[TableKey]:
    """The shortest path start → … → start inside one component (breadth first)."""
    allowed = set(within)
    previous: dict[TableKey, TableKey] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in graph[node]:
                if successor not in allowed or successor in previous:
                    continue
                previous[successor] = node
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return path[::-1]
                following.append(successor)
        frontier = following
    return [start]  # unreachable for a component of two or more


def _where(location: SourceLocation) -> str:
    return f"{location.path}:{location.line}"


def table_key(uri: TableUri) -> TableKey:
    """The table as Spark resolves it.

    Example:
        >>> table_key(TableUri("Analytics", "Orders"))
        ('analytics', 'orders')
    """
    return uri.schema.lower(), uri.table.lower()


def uri_order(uri: TableUri) -> tuple[str, str]:
    """Sort key of tables in listings: schema, then table, as spelled."""
    return uri.schema, uri.table
