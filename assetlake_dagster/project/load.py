"""A folder of annotated SQL files (and Python assets) → one checked :class:`Project`.

Each ``*.sql`` file (recursively, sorted) becomes a
:class:`~assetlake_dagster.spec.SqlAssetSpec`, checked on its own here; the folder's
``*.py`` files are imported for their assets; then :func:`~assetlake_dagster.project.dag.check_project`
checks the files against each other (one producer per table, known ``relationships``
tables, no dependency cycles). Every problem of every file is collected and raised once,
as one :class:`~assetlake_dagster.errors.ProjectError`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Callable, Optional

from assetlake_dagster.annotations import Header, header_length, parse_header
from assetlake_dagster.spec.names import SESSION_CATALOG_NAME
from assetlake_dagster.annotations.fields import spec_arguments
from assetlake_dagster.project.dag import TableKey, check_project, table_key, uri_order
from assetlake_dagster.errors import (
    ConfigError,
    Diagnostic,
    ProjectError,
    SourceLocation,
    SourceText,
    did_you_mean,
    display_path,
)
from assetlake_dagster.spec import (
    PARTITION_PARAMETERS,
    THIS_MARKER,
    THIS_PLACEHOLDER,
    DataTestKind,
    DataTestSpec,
    RESERVED_COLUMNS,
    RESERVED_TABLE_SUFFIX,
    TIME_WINDOW_PARAMETERS,
    SqlAssetSpec,
    TableUri,
    WriteStrategy,
    UpstreamSpec,
    is_identifier,
)
from assetlake_dagster.project.parse_cache import ParseCache
from assetlake_dagster.project.folder import decode_utf8, discover_files, escaping_link, outside, read_bytes
from assetlake_dagster.project.python_assets import AssetLike, PythonAsset, import_python_files, python_reads, python_tables
from assetlake_dagster.project.seeds import SeedSpec, load_seeds, seed_conflicts, seed_tables

if TYPE_CHECKING:  # sqlglot loads when a file is parsed: a warm load takes every file from the cache
    from assetlake_dagster.sql.analysis import ColumnRef, SqlAnalysis


@dataclass(frozen=True)
class Project:
    """A loaded, checked project folder.

    Attributes:
        root: absolute path of the folder.
        assets: one spec per SQL file, sorted by path.
        external: tables read or declared upstream that no SQL file or Python asset
            produces, sorted.
        python_assets: the Python assets checked with the SQL files: those passed in
            code, then those of the folder's ``*.py`` files.
        seeds: the folder's ``*.csv`` files (:mod:`assetlake_dagster.project.seeds`), sorted by path.
    """

    root: str
    assets: tuple[SqlAssetSpec, ...]
    external: tuple[TableUri, ...]
    python_assets: tuple[AssetLike, ...] = ()
    seeds: tuple[SeedSpec, ...] = ()

    def by_uri(self) -> dict[TableUri, SqlAssetSpec]:
        """The assets keyed by the table they materialize."""
        return {spec.uri: spec for spec in self.assets}


def load_project(
    project_dir: "str | os.PathLike[str]",
    *,
    python_assets: Sequence[AssetLike] = (),
    load_python_files: bool = True,
    catalogs: Optional[Collection[str]] = None,
) -> Project:
    """Load every ``*.sql`` file and seed (``*.csv``) under ``project_dir`` and check them together.

    ``assetlake validate`` and ``build_definitions`` both load through here, so they
    report the same problems.

    Args:
        project_dir: the folder of SQL files.
        python_assets: Python assets defined in code, checked with the SQL files.
        load_python_files: also import the ``*.py`` files directly in ``project_dir``
            (not starting with ``_``) and check their assets.
        catalogs: the Spark catalogs the session has (lower case); a ``catalog.schema.table``
            naming another is an error. ``None``: not known here, not checked.

    Raises:
        ProjectError: with every problem of every file, sorted by file and position.
        ConfigError: when ``project_dir`` is not a folder.

    Example:
        >>> project = load_project("assetlake_dagster_tests/projects/basic")  # doctest: +SKIP
        >>> [str(spec.uri) for spec in project.assets]  # doctest: +SKIP
        ['delta://analytics/customer_totals', 'delta://analytics/order_log', ...]
    """
    root = os.path.abspath(os.fspath(project_dir))
    if not os.path.isdir(root):
        raise ConfigError(f"project folder '{display_path(root)}' does not exist or is not a folder.")
    specs: list[SqlAssetSpec] = []
    sources: dict[str, SourceText] = {}  # by spec.path, to quote lines in cross-file errors
    diagnostics: list[Diagnostic] = []
    built: dict[str, tuple[Optional[SqlAssetSpec], list[Diagnostic], Optional[SourceText]]] = {}
    # A file whose text the cache has seen is not parsed again (project/parse_cache.py).
    cache = ParseCache.open(root)
    real_root = os.path.realpath(root)
    for path in discover_sql_files(root):
        text, problem = _read(path) if not outside(path, real_root) else ("", escaping_link(path))
        if problem is not None:
            built[path] = (None, [problem], None)
            continue
        built[path] = cache.build(path, text, _build_spec)
    cache.save()
    # Custom data tests are SQL files too: the files a data_test line names are tests, not assets.
    test_files = {
        _resolve_test_path(spec, test)
        for spec, _, _ in built.values()
        if spec is not None
        for test in spec.data_tests
        if test.kind is DataTestKind.CUSTOM
    }
    for path, (spec, problems, src) in built.items():
        if path in test_files and spec is None:
            continue
        diagnostics.extend(problems)
        if spec is not None:
            spec, problems = _load_custom_tests(spec, src, root)
            diagnostics.extend(problems)
            diagnostics.extend(unknown_catalogs(spec, src, catalogs))
            diagnostics.extend(shadowed_schemas(spec, src, catalogs))
            specs.append(spec)
            sources[spec.path] = src
    python = [PythonAsset(asset) for asset in python_assets]
    if load_python_files:
        found, problems = import_python_files(root)
        python.extend(found)
        diagnostics.extend(problems)
    seeds, problems = load_seeds(root)
    diagnostics.extend(problems)
    diagnostics.extend(seed_conflicts(seeds, python_tables(python)))
    tables = [*python_tables(python), *seed_tables(seeds)]
    specs, external, problems = check_project(specs, sources, tables, python_reads(python))
    diagnostics.extend(problems)
    if diagnostics:
        raise ProjectError(diagnostics)
    return Project(
        root=root,
        assets=tuple(sorted(specs, key=lambda s: s.path)),
        external=external,
        python_assets=tuple(asset.definition for asset in python),
        seeds=tuple(seeds),
    )


def unknown_catalogs(spec: SqlAssetSpec, src: SourceText, catalogs: Optional[Collection[str]]) -> list[Diagnostic]:
    """A located error for each ``catalog.schema.table`` whose catalog the session lacks."""
    if catalogs is None:
        return []
    problems = []
    for table in spec.foreign_tables:
        if table.catalog.lower() in catalogs or table.location is None:
            continue
        others = sorted(c for c in catalogs if c != SESSION_CATALOG_NAME)
        known = f" (the session has: {', '.join(others)})" if others else ""
        problems.append(src.diagnostic(
            table.location.line, table.location.col,
            f"'{table.name}' names the catalog '{table.catalog}', which the Spark session does not have{known}.",
            f"Configure it (spark.sql.catalog.{table.catalog}=<catalog plugin class> in the resource's spark_conf), "
            "or refer to a managed table as 'schema.table'.",
            span=table.span,
        ))
    return problems


def shadowed_schemas(spec: SqlAssetSpec, src: SourceText, catalogs: Optional[Collection[str]]) -> list[Diagnostic]:
    """A located error for each lake table whose schema is also the name of a catalog plugin.

    Spark reads a two-part name ``a.t`` as the table ``t`` of the catalog ``a`` when the session
    has a catalog of that name, so the lake's schema ``a`` could no longer be read or registered
    by name. Each table is reported once, at its first mention.
    """
    if not catalogs:
        return []
    plugins = {name for name in catalogs if name != SESSION_CATALOG_NAME}
    mentions = [(spec.uri, spec.materialize.location), *((up.uri, up.location) for up in spec.upstreams)]
    problems, seen = [], set()
    for uri, location in mentions:
        if uri.schema.lower() not in plugins or location is None or uri in seen:
            continue
        seen.add(uri)
        problems.append(src.diagnostic(
            location.line, location.col,
            f"the lake's schema '{uri.schema}' ({uri.sql_name}) has the name of the catalog plugin "
            f"'{uri.schema.lower()}' (spark.sql.catalog.{uri.schema.lower()}): Spark would read "
            f"'{uri.sql_name}' as the table '{uri.table}' of that catalog.",
            f"Give the catalog plugin another name in the resource's spark_conf, or keep the lake's tables "
            f"out of the schema '{uri.schema}'.",
        ))
    return problems


def _resolve_test_path(spec: SqlAssetSpec, test: DataTestSpec) -> str:
    """A custom test's path, relative to the folder of the file that declares it."""
    return os.path.normpath(os.path.join(os.path.dirname(spec.path), test.path or ""))


def _load_custom_tests(
    spec: SqlAssetSpec, src: SourceText, root: str
) -> tuple[SqlAssetSpec, list[Diagnostic]]:
    """Read each custom test's SQL file: one SELECT returning the failing rows."""
    problems: list[Diagnostic] = []
    tests = []
    for test in spec.data_tests:
        if test.kind is not DataTestKind.CUSTOM:
            tests.append(test)
            continue
        where = test.location
        path = _resolve_test_path(spec, test)
        if os.path.commonpath([path, root]) != root or outside(path, os.path.realpath(root)):
            # Real paths: a test file that is a symlink to outside the project is outside it.
            where_to = "" if os.path.commonpath([path, root]) != root else f" (a symlink to {os.path.realpath(path)})"
            problems.append(src.diagnostic(where.line, where.col, f"test file '{test.path}' is outside the project folder{where_to}.",
                                           "Keep custom tests inside the project, e.g. 'tests/<name>.sql'.", span=len(test.path)))
            continue
        if not os.path.isfile(path):
            problems.append(src.diagnostic(where.line, where.col, f"test file '{test.path}' does not exist.",
                                           f"Create {display_path(path)} with a SELECT returning the failing rows.", span=len(test.path)))
            continue
        text, problem = _read(path)
        if problem is not None:
            problems.append(problem)
            continue
        test_src = SourceText.of(path, _normalize(text).replace(THIS_PLACEHOLDER, THIS_MARKER))
        from assetlake_dagster.sql.analysis import analyze_sql  # sqlglot: only for a custom test

        analysis, found = analyze_sql(test_src, header_length(list(test_src.lines)) + 1)
        if not found and (analysis.setup or analysis.select is None):
            found = [test_src.diagnostic(1, 1, "a custom test is exactly one SELECT returning the failing rows.",
                                         f"Write e.g. 'SELECT * FROM {THIS_PLACEHOLDER} WHERE amount < 0'.")]
        allowed = {a.name for a in spec.arguments} | (set(PARTITION_PARAMETERS) if spec.partitions else set())
        for marker in analysis.parameters:
            if marker.name not in allowed:
                found.append(test_src.diagnostic(marker.location.line, marker.location.col,
                                                 f"parameter ':{marker.name}' is not bound for this test.",
                                                 "Tests bind the asset's arguments and, if partitioned, {partition}.",
                                                 span=marker.span))
        problems.extend(found)
        if not found:
            tests.append(dataclasses.replace(test, path=path, query=analysis.select))
    return dataclasses.replace(spec, data_tests=tuple(tests)), problems


def parse_file(path: str, text: str) -> tuple[Optional[SqlAssetSpec], list[Diagnostic]]:
    """Parse and check one annotated SQL file on its own (no cross-file checks).

    Returns:
        The spec and ``[]``, or ``None`` and every problem found.

    Example:
        >>> text = "-- materialize delta://a/t key=id\\n\\nSELECT id FROM raw.src"
        >>> spec, problems = parse_file("f.sql", text)
        >>> spec.materialize.strategy.value, [str(u.uri) for u in spec.upstreams], problems
        ('merge', ['delta://raw/src'], [])
    """
    spec, diagnostics, _ = _build_spec(path, text)
    return (None if diagnostics else spec), diagnostics


def discover_sql_files(root: str) -> list[str]:
    """Every ``*.sql`` file under ``root``, recursively, sorted; hidden folders skipped.

    Example:
        >>> discover_sql_files("/nonexistent")
        []
    """
    return discover_files(root, ".sql")


def _read(path: str) -> tuple[str, Optional[Diagnostic]]:
    raw, problem = read_bytes(path, "SQL")
    return ("", problem) if raw is None else decode_utf8(path, raw)


def _build_spec(path: str, text: str) -> tuple[Optional[SqlAssetSpec], list[Diagnostic], SourceText]:
    """The spec (whenever the materialize line is valid, for cross-checks), the problems
    and the source (to quote lines in cross-file errors)."""
    from assetlake_dagster.sql.analysis import analyze_sql  # sqlglot: only on a cache miss

    code_version = hashlib.sha256(text.encode("utf-8")).hexdigest()
    path = os.path.abspath(path)
    src = SourceText.of(path, _normalize(text))
    header, diagnostics = parse_header(src)
    analysis, problems = analyze_sql(src, header.body_start, manual=header.manual)
    diagnostics.extend(problems)
    diagnostics.extend(_check_query(src, header, analysis))
    if header.view:
        diagnostics.extend(_check_view(src, header, analysis))
    if header.materialize is None:
        return None, diagnostics, src
    spec = SqlAssetSpec(
        path=path,
        materialize=header.materialize,
        upstreams=_merge_upstreams(header, analysis),
        arguments=header.arguments,
        setup=analysis.setup,
        select=analysis.select,
        output_columns=(
            tuple(c.name for c in analysis.output_columns) if analysis.output_columns is not None else None
        ),
        partitions=header.partitions,
        data_tests=header.data_tests,
        columns=header.columns,
        code_version=code_version,
        foreign_tables=analysis.foreign_tables,
        **spec_arguments(header.fields, SqlAssetSpec),  # the declared fields, each where it goes
    )
    if spec.materialize.new_rows and not diagnostics:
        diagnostics.extend(_check_new_rows(src, spec))
    return spec, diagnostics, src


def _check_new_rows(src: SourceText, spec: SqlAssetSpec) -> list[Diagnostic]:
    """An ``append new_rows`` reads its upstream's change feed: its SELECT must allow it."""
    from assetlake_dagster.sql.incremental import new_rows_problem

    problem = new_rows_problem(spec)
    if problem is None:
        return []
    where = spec.materialize.location
    return [src.diagnostic(
        where.line if where else 1, where.col if where else 1,
        f"'append new_rows' cannot read only the new rows: {problem}.",
        "It needs one row-local SELECT over one lake table (projections, filters, deterministic functions), "
        "unpartitioned; remove 'new_rows' to append the whole SELECT on each run.",
    )]


#: What a view file cannot have: the field's spec path -> why.
_NOT_FOR_VIEWS = {
    "layout.cluster_by": "a view has no files to lay out",
    "layout.properties": "a view has no Delta table to hold them",
    "maintain": "a view has no files to compact or vacuum",
    "publish_with": "a view has no commit to publish",
}


def _check_view(src: SourceText, header: Header, analysis: SqlAnalysis) -> list[Diagnostic]:
    """A view is one SELECT the catalog keeps: nothing that needs a write, a run's bindings
    or a session of its own."""
    diagnostics = []
    fix = "Remove it, or drop 'view' to write a table."

    def error(line: int, col: int, message: str, span: int = 1) -> None:
        diagnostics.append(src.diagnostic(line, col, message, fix, span=span))

    if header.partitioned_line is not None:
        error(header.partitioned_line, 4, "a view cannot be '-- partitioned': no run writes its slices.", len("partitioned"))
    for test in header.data_tests:
        location = test.location
        error(location.line, location.col, "a view cannot have data tests: no write of it is audited.")
    for argument in header.arguments:
        location = argument.location
        error(location.line, location.col, f"a view cannot take the argument '${argument.name}': a view binds no run's values.",
              len(argument.name) + 1)
    for into, why in _NOT_FOR_VIEWS.items():
        word = header.field_keywords.get(into)
        if word is not None:
            error(word.line, word.col, f"a view cannot declare '-- {word.text}': {why}.", len(word.text))
    for statement in analysis.setup:
        error(statement.line, 1, "a view is one SELECT: a setup statement would not be part of it.")
    return diagnostics


def _normalize(text: str) -> str:
    """Without a byte-order mark and with ``\\n`` line endings, as the parsers expect."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _check_query(src: SourceText, header: Header, analysis: SqlAnalysis) -> list[Diagnostic]:
    """The header against the SQL: markers declared, columns allowed, key columns projected."""
    diagnostics = []

    def error(location: SourceLocation, message: str, hint: str, span: int) -> None:
        diagnostics.append(src.diagnostic(location.line, location.col, message, hint, span=span))

    for argument in header.arguments:
        if argument.name in PARTITION_PARAMETERS:
            error(
                argument.location,
                f"argument '${argument.name}' is reserved.",
                f"assetlake binds :{argument.name} to the partition being written; choose another name.",
                len(argument.name) + 1,
            )
    for marker in analysis.parameters:
        if marker.name in PARTITION_PARAMETERS and marker.name not in header.argument_names:
            _check_partition_marker(header, marker, error)
        elif marker.name not in header.argument_names:
            hint = did_you_mean(marker.name, sorted(header.argument_names)).replace("'", "':", 1).strip()
            error(
                marker.location,
                f"parameter ':{marker.name}' is not declared.",
                hint or f"Declare it in the header: '-- ${marker.name} (<type>)'.",
                marker.span,
            )
    if header.manual:
        for test in header.data_tests:
            error(
                test.location,
                "a manual file cannot have data tests.",
                "assetlake does not write a manual table, so it cannot audit it; use a managed strategy.",
                1,
            )
        group = header.field_keywords.get("publish_with")
        if group is not None:
            error(
                src.location(group.line, group.col),
                "a manual file cannot be published with a group.",
                "Its statements commit by themselves, so nothing can hold them back; use a managed strategy.",
                len(group.text),
            )
    _check_column_lines(header, analysis, error)
    _check_layout(src, header, analysis, error)
    if header.manual or analysis.output_columns is None:
        return diagnostics
    seen: dict[str, int] = {}
    for column in analysis.output_columns:
        name = column.name.lower()  # Delta column names are case-insensitive
        if not is_identifier(column.name):
            error(
                column.location,
                f"column name '{column.name}' is not a plain identifier.",
                "Alias it with letters, digits and '_' only, e.g. AS order_id.",
                column.span,
            )
        elif name in RESERVED_COLUMNS:
            error(
                column.location,
                f"column '{column.name}' is reserved.",
                f"assetlake writes {', '.join(sorted(RESERVED_COLUMNS))} itself; rename or drop it.",
                column.span,
            )
        elif name in seen:
            error(
                column.location,
                f"column '{column.name}' is projected twice.",
                f"The first is on line {seen[name]}; Delta column names are case-insensitive, alias one.",
                column.span,
            )
        else:
            seen[name] = column.location.line
    names = [c.name for c in analysis.output_columns]
    for test in header.data_tests:
        for column in test.columns:
            if column.lower() not in seen:
                hint = did_you_mean(column, names).strip()
                error(
                    test.location,
                    f"data test column '{column}' is not among the SELECT's columns.",
                    hint or f"The SELECT projects: {', '.join(names)}.",
                    len(column),
                )
    event_time = header.partitions.event_time if header.partitions else None
    if event_time and event_time.lower() not in seen:
        hint = did_you_mean(event_time, names).strip()
        location = header.partitions.location
        offset = src.line(location.line).find("event_time=")
        error(
            src.location(location.line, offset + 1 + len("event_time=")) if offset >= 0 else location,
            f"event_time column '{event_time}' is not among the SELECT's columns.",
            hint or f"The SELECT projects: {', '.join(names)}.",
            len(event_time),
        )
    named = [("key", c) for c in header.key_columns] + [("track", c) for c in header.track_columns]
    if header.valid_from_column is not None:
        named.append(("valid_from", header.valid_from_column))
    for kind, column in named + list(header.merge_columns):
        if column.text.lower() not in seen:
            hint = did_you_mean(column.text, names).strip()
            error(
                src.location(column.line, column.col),
                f"{kind} column '{column.text}' is not among the SELECT's columns.",
                hint or f"The SELECT projects: {', '.join(names)}.",
                len(column.text),
            )
    return diagnostics


def _check_layout(src: SourceText, header: Header, analysis: SqlAnalysis, error: Callable[..., None]) -> None:
    """The layout lines against the file: clustering columns the SELECT produces, not
    beside partitions, and no property that forbids the file's own writes."""
    keywords = header.field_keywords
    for into in ("layout.cluster_by", "layout.properties"):
        if header.manual and into in keywords:
            word = keywords[into]
            error(src.location(word.line, word.col), f"a manual file cannot declare '-- {word.text}'.",
                  "assetlake does not write a manual table, so it cannot lay it out; use a managed strategy.", len(word.text))
    if header.manual:
        return
    cluster_by = header.fields.get("layout.cluster_by", ())
    if cluster_by and header.partitioned_line is not None:
        word = keywords["layout.cluster_by"]
        error(
            src.location(word.line, word.col),
            f"'-- cluster_by' does not combine with '-- partitioned' (line {header.partitioned_line}): "
            "Delta cannot both partition and cluster a table.",
            "Remove one of the two lines: a partitioned table is laid out by its partitions.",
            len(word.text),
        )
    elif cluster_by and analysis.output_columns is not None:
        names = [c.name for c in analysis.output_columns]
        produced = {n.lower() for n in names}
        for column in cluster_by:
            if column.name.lower() not in produced:
                hint = did_you_mean(column.name, names).strip()
                error(
                    column.location,
                    f"cluster_by column '{column.name}' is not among the SELECT's columns.",
                    hint or f"The SELECT projects: {', '.join(names)}.",
                    len(column.name),
                )
    properties = dict(header.fields.get("layout.properties", ()))
    strategy = header.materialize.strategy if header.materialize else None
    if properties.get("delta.appendOnly") == "true" and strategy not in (None, WriteStrategy.APPEND):
        word = keywords["layout.properties"]
        error(
            src.location(word.line, word.col),
            f"delta.appendOnly=true forbids the updates and deletes a {strategy.value} write makes.",
            "Drop the property, or write with 'append'.",
            len(word.text),
        )


def _check_column_lines(header: Header, analysis: SqlAnalysis, error: Callable[..., None]) -> None:
    """``-- column`` lines name a column the SELECT produces (when its columns are known
    statically) and source tables this file reads."""
    produced = {c.name.lower() for c in analysis.output_columns or ()}
    names = [c.name for c in analysis.output_columns or ()]
    read = {table_key(u.uri) for u in header.upstreams} | {table_key(t.uri) for t in analysis.tables}
    # Reading the view s.t_current reads the history table s.t (the suffix is reserved).
    read |= {(s, t[: -len(RESERVED_TABLE_SUFFIX)]) for s, t in read if t.endswith(RESERVED_TABLE_SUFFIX)}
    for column in header.columns:
        if analysis.output_columns is not None and not header.manual and column.name.lower() not in produced:
            hint = did_you_mean(column.name, names).strip()
            error(
                column.location,
                f"column '{column.name}' is not among the SELECT's columns.",
                hint or f"The SELECT projects: {', '.join(names)}.",
                len(column.name),
            )
        for source in column.sources:
            if table_key(source.uri) not in read:
                error(
                    source.location,
                    f"{source.uri} is not read by this file, so column '{column.name}' cannot derive from it.",
                    f"Name a table the SQL reads, or declare it with '-- on {source.uri}'.",
                    len(str(source.uri)),
                )


def _check_partition_marker(header: Header, marker: ColumnRef, error: Callable[..., None]) -> None:
    """``{partition}`` needs a ``-- partitioned`` line; start/end need time windows."""
    placeholder = "{" + marker.name + "}"
    if header.partitions is None:
        if header.partitioned_line is None:  # a bad partitioned line is reported already
            error(
                marker.location,
                f"'{placeholder}' needs a '-- partitioned' annotation.",
                "Declare the partitions, e.g. '-- partitioned daily start=2024-01-01'.",
                marker.span,
            )
    elif marker.name in TIME_WINDOW_PARAMETERS and not header.partitions.kind.is_time_window:
        error(
            marker.location,
            f"'{placeholder}' needs time-window partitions, not {header.partitions.kind.value}.",
            "Use '{partition}' (the key), or partition by hourly/daily/weekly/monthly.",
            marker.span,
        )
    elif marker.name == "partition" and header.partitions.event_time:
        error(
            marker.location,
            f"'{placeholder}' names one partition, but with event_time= a run of several partitions is one query.",
            "Filter on the range instead, e.g. 'WHERE t >= {partition_start} AND t < {partition_end}'.",
            marker.span,
        )


def _merge_upstreams(header: Header, analysis: SqlAnalysis) -> tuple[UpstreamSpec, ...]:
    """Declared and inferred upstreams, deduplicated (declared wins), without the target."""
    merged: dict[TableKey, UpstreamSpec] = {}
    for upstream in header.upstreams:
        merged.setdefault(table_key(upstream.uri), upstream)
    for ref in analysis.tables:
        merged.setdefault(table_key(ref.uri), UpstreamSpec(ref.uri, declared=False, location=ref.location))
    merged.pop(table_key(header.materialize.uri), None)  # the file may read its own target
    return tuple(sorted(merged.values(), key=lambda u: uri_order(u.uri)))
