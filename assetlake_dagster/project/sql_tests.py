"""SQL unit tests: ``<name>.tests.yml`` beside ``<name>.sql`` says "given these rows, the
SELECT returns these rows".

A test gives rows for every table the file reads, the values of its arguments and (for a
partitioned file) the partition, and the rows it expects, or a piece of the error it
expects. :mod:`assetlake_dagster.cli.sql_test_run` runs them on a Spark session over temporary
views, without a lake. This module reads and checks the test files without Spark, so
``assetlake validate`` reports their mistakes too, located as the SQL's are.

Example ``customer_revenue.tests.yml``::

    tests:
      - name: paid_orders_only
        given:
          analytics.customers:
            - {customer_id: 1, name: Ann, tier: gold}
          staging.orders:
            columns: customer_id BIGINT, amount DECIMAL(10,2), status STRING
            rows:
              - {customer_id: 1, amount: 10.5, status: paid}
              - {customer_id: 1, amount: 99, status: refunded}
        expect:
          - {customer_id: 1, paid_orders: 1, revenue: 10.5}

A timestamp without an offset (``2024-01-02 09:30:00``), given or expected, is a wall time in
the Spark session's zone (``spark.sql.session.timeZone``), not in this machine's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import yaml

from assetlake_dagster.errors import Diagnostic, SourceLocation, SourceText, did_you_mean
from assetlake_dagster.project.folder import discover_files
from assetlake_dagster.spec import PartitionKind, PartitionSpec, SqlAssetSpec, TableUri, is_identifier, typed_value

#: A SQL file's tests are in the file of the same name with this suffix instead of ``.sql``.
TESTS_SUFFIX = ".tests.yml"
#: The keys a test may have.
CASE_KEYS = ("name", "description", "given", "args", "partition", "expect", "expect_error")
#: The keys of a given table written as a mapping.
GIVEN_KEYS = ("columns", "rows")


@dataclass(frozen=True)
class GivenTable:
    """The rows a test gives one upstream table.

    Attributes:
        uri: the table the SQL reads.
        rows: its rows, as column -> value mappings.
        columns: Spark DDL of its columns (``id BIGINT, name STRING``), or ``None`` to infer
            them from the values.
    """

    uri: TableUri
    rows: tuple[Mapping[str, Any], ...]
    columns: Optional[str] = None
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class SqlTestCase:
    """One test of one SQL file.

    Attributes:
        name: unique in its file.
        sql_path: the SQL file under test.
        given: rows for every table the file reads.
        args: argument values (others take their defaults).
        partition: the partition key the SQL is run for (partitioned files only).
        expect: the rows the SELECT must return, in any order, compared on their columns
            only; ``None`` when an error is expected.
        expect_error: text the error must contain, when the SQL must fail.
    """

    name: str
    sql_path: str
    given: tuple[GivenTable, ...] = ()
    args: Mapping[str, Any] = field(default_factory=dict)
    partition: Optional[str] = None
    expect: Optional[tuple[Mapping[str, Any], ...]] = None
    expect_error: Optional[str] = None
    location: Optional[SourceLocation] = field(default=None, compare=False)

    @property
    def expect_columns(self) -> tuple[str, ...]:
        return tuple(self.expect[0]) if self.expect else ()


def tests_path(sql_path: str) -> str:
    """The tests file of a SQL file.

    Example:
        >>> tests_path("/p/top_customers.sql")
        '/p/top_customers.tests.yml'
    """
    return os.path.splitext(sql_path)[0] + TESTS_SUFFIX


def discover_test_files(root: str) -> list[str]:
    """Every ``*.tests.yml`` under ``root`` (as the SQL files are found: links kept inside)."""
    return discover_files(root, TESTS_SUFFIX)


def sql_path_of(test_file: str) -> str:
    """The SQL file a tests file tests.

    Example:
        >>> sql_path_of("/p/top_customers.tests.yml")
        '/p/top_customers.sql'
    """
    return test_file[: -len(TESTS_SUFFIX)] + ".sql"


def parse_test_file(
    path: str,
    text: str,
    spec: SqlAssetSpec,
    known_columns: Mapping[TableUri, Sequence[str]] = {},
    *,
    has_partition_key: Callable[[PartitionSpec, str], bool],
) -> tuple[list[SqlTestCase], list[Diagnostic]]:
    """The tests in ``text`` (the file at ``path``) of the SQL file ``spec``, and every problem.

    Args:
        known_columns: the output columns of the project's other tables, where known: a
            given row's columns are checked against them.
        has_partition_key: whether a key is one of a partitioning's keys (the caller's,
            :func:`assetlake_dagster.defs.partitions.has_partition_key`: which keys a time
            partitioning has is Dagster's to say).

    Example:
        >>> cases, problems = parse_test_file("t.tests.yml", "tests: []\\n", spec, has_partition_key=has_partition_key)  # doctest: +SKIP
    """
    reader = _Reader(SourceText.of(path, text), spec, known_columns, has_partition_key)
    return reader.read(text), reader.diagnostics


class _Reader:
    """Walks the YAML node tree (for positions) beside its Python values."""

    def __init__(
        self,
        src: SourceText,
        spec: SqlAssetSpec,
        known_columns: Mapping[TableUri, Sequence[str]],
        has_partition_key: Callable[[PartitionSpec, str], bool],
    ):
        self.src = src
        self.spec = spec
        self.has_partition_key = has_partition_key
        self.known = {_lower(uri): list(columns) for uri, columns in known_columns.items()}
        self.diagnostics: list[Diagnostic] = []

    def error(self, node: Optional[yaml.Node], message: str, hint: str = "", span: Optional[int] = None) -> None:
        line, col = (node.start_mark.line + 1, node.start_mark.column + 1) if node is not None else (1, 1)
        if span is None:
            span = len(str(node.value)) if isinstance(node, yaml.ScalarNode) and node.value else 1
        self.diagnostics.append(self.src.diagnostic(line, col, message, hint, span=span))

    def location(self, node: yaml.Node) -> SourceLocation:
        return self.src.location(node.start_mark.line + 1, node.start_mark.column + 1)

    def value(self, node: Optional[yaml.Node]) -> Any:
        """The Python value of a node of the document being read."""
        return None if node is None else self.loader.construct_object(node, deep=True)

    def read(self, text: str) -> list[SqlTestCase]:
        try:
            self.loader = yaml.SafeLoader(text)
        except yaml.YAMLError as err:  # a character YAML refuses, found in the first chunk
            self.yaml_error(err)
            return []
        try:
            try:
                root = self.loader.get_single_node()
                self.value(root)  # every scalar's type is checked here, located
            except yaml.YAMLError as err:
                self.yaml_error(err)
                return []
            return self.cases(root)
        finally:
            self.loader.dispose()

    def yaml_error(self, err: yaml.YAMLError) -> None:
        if isinstance(err, yaml.MarkedYAMLError):
            mark = err.problem_mark or err.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            problem = err.problem or err.context
        else:  # ReaderError: a character YAML does not allow, by its position in the text
            position = getattr(err, "position", 0)
            before = self.src.lines and "\n".join(self.src.lines)[:position]
            line, col = (before.count("\n") + 1, position - before.rfind("\n")) if before else (1, 1)
            problem = str(err).splitlines()[0]
        self.diagnostics.append(self.src.diagnostic(line, col, f"not valid YAML: {problem}.", "Fix the YAML syntax."))

    def cases(self, root: Optional[yaml.Node]) -> list[SqlTestCase]:
        if not isinstance(root, yaml.MappingNode) or [k.value for k, _ in root.value] != ["tests"]:
            self.error(root, "a tests file holds one key, 'tests', with a list of tests.", _FORM_HINT)
            return []
        cases_node = _child(root, "tests")
        if not isinstance(cases_node, yaml.SequenceNode):
            self.error(cases_node, "'tests' must be a list of tests.", _FORM_HINT)
            return []
        cases, names = [], {}
        for node in cases_node.value:
            case = self.case(node)
            if case is None:
                continue
            if case.name in names:
                self.error(_child(node, "name"), f"test '{case.name}' is defined twice.", f"The first is on line {names[case.name]}; rename one.")
                continue
            names[case.name] = node.start_mark.line + 1
            cases.append(case)
        return cases

    def case(self, node: yaml.Node) -> Optional[SqlTestCase]:
        if not isinstance(node, yaml.MappingNode):
            self.error(node, "a test must be a mapping with name, given and expect.", _FORM_HINT)
            return None
        before = len(self.diagnostics)
        for key_node, _ in node.value:
            if key_node.value not in CASE_KEYS:
                hint = did_you_mean(str(key_node.value), CASE_KEYS).strip()
                self.error(key_node, f"unknown test key '{key_node.value}'.", hint or f"A test has: {', '.join(CASE_KEYS)}.")
        name = self.value(_child(node, "name"))
        if not isinstance(name, str) or not name.strip():
            self.error(_child(node, "name") or node, "a test needs a name.", "Add 'name: <what it checks>'.")
        given = self.given(node)
        args = self.args(_child(node, "args"))
        partition = self.partition(node)
        expect = self.expect(node)
        if len(self.diagnostics) > before:
            return None
        return SqlTestCase(
            name=name,
            sql_path=self.spec.path,
            given=given,
            args=args,
            partition=partition,
            expect=expect,
            expect_error=self.value(_child(node, "expect_error")),
            location=self.location(node),
        )

    def given(self, case: yaml.MappingNode) -> tuple[GivenTable, ...]:
        node = _child(case, "given")
        read = {_lower(u.uri): u.uri for u in self.spec.upstreams}
        names = [u.sql_name for u in read.values()]
        if node is None:
            if read:
                self.error(case, "the test gives no 'given' rows.", f"Give rows for: {', '.join(names)}.")
            return ()
        if not isinstance(node, yaml.MappingNode):
            self.error(node, "'given' must map each table the SQL reads to its rows.", _FORM_HINT)
            return ()
        tables, seen = [], set()
        for key_node, table_node in node.value:
            key = str(key_node.value)
            uri = _table_uri(key)
            if uri is None or uri not in read:
                hint = did_you_mean(key, names).strip()
                self.error(key_node, f"{self.spec_name} does not read '{key}'.", hint or f"It reads: {', '.join(names) or 'no table'}.")
                continue
            if uri in seen:
                self.error(key_node, f"'{key}' is given twice.", "Give each table once.")
                continue
            seen.add(uri)
            table = self.given_table(read[uri], table_node)
            if table is not None:
                tables.append(table)
        missing = [u.sql_name for lowered, u in read.items() if lowered not in seen]
        if missing:
            self.error(node, f"the test gives no rows for {', '.join(missing)}.", "Give each table the SQL reads, e.g. 'schema.table: []' with columns for an empty one.", span=len("given"))
        return tuple(tables)

    def given_table(self, uri: TableUri, node: yaml.Node) -> Optional[GivenTable]:
        columns = None
        rows_node = node
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                if key_node.value not in GIVEN_KEYS:
                    self.error(key_node, f"unknown key '{key_node.value}' of {uri.sql_name}.", "A table is a list of rows, or 'columns:' (Spark DDL) and 'rows:'.")
                    return None
            columns, rows_node = self.value(_child(node, "columns")), _child(node, "rows")
            if not isinstance(columns, str) or not columns.strip():
                self.error(_child(node, "columns") or node, f"'columns' of {uri.sql_name} must be Spark DDL.", "Write e.g. 'columns: id BIGINT, name STRING'.")
                return None
        rows = self.rows(rows_node, uri.sql_name)
        if rows is None:
            return None
        if not rows and columns is None:
            self.error(node, f"{uri.sql_name} has no rows, so its columns' types are unknown.", "Write it as 'columns: <Spark DDL>' and 'rows: []'.")
            return None
        known = self.known.get(_lower(uri))
        if known is not None and rows_node is not None:
            self.check_columns(rows_node, known, f"{uri.sql_name}'s columns")
        return GivenTable(uri, tuple(rows), columns, self.location(node))

    def rows(self, node: Optional[yaml.Node], what: str) -> Optional[list[Mapping[str, Any]]]:
        if node is None:
            return []
        value = self.value(node)
        if not isinstance(node, yaml.SequenceNode) or not all(isinstance(r, Mapping) for r in value):
            self.error(node, f"the rows of {what} must be a list of mappings.", "Write each row as {column: value, ...}.")
            return None
        return [dict(r) for r in value]

    def check_columns(self, rows_node: yaml.SequenceNode, known: Sequence[str], what: str) -> None:
        lower = {c.lower() for c in known}
        for row in rows_node.value:
            for key_node, _ in row.value:
                name = str(key_node.value)
                if name.lower() not in lower:
                    hint = did_you_mean(name, known).strip()
                    self.error(key_node, f"column '{name}' is not among {what}.", hint or f"They are: {', '.join(known)}.")
                    return

    def args(self, node: Optional[yaml.Node]) -> dict[str, Any]:
        if node is None:
            return {}
        arguments = {a.name: a for a in self.spec.arguments}
        if not isinstance(node, yaml.MappingNode):
            self.error(node, "'args' must map argument names to values.", "Write e.g. 'args: {top_n: 3}'.")
            return {}
        values = {}
        for key_node, value_node in node.value:
            name, raw = key_node.value, self.value(value_node)
            arg = arguments.get(str(name))
            if arg is None:
                hint = did_you_mean(str(name), arguments).strip()
                self.error(key_node, f"{self.spec_name} has no argument '{name}'.", hint or f"Its arguments: {', '.join(arguments) or 'none'}.")
                continue
            try:
                values[arg.name] = typed_value(arg, raw)
            except ValueError as problem:
                self.error(value_node, f"argument '{name}' is a {arg.type.value}, not {raw!r}.", str(problem))
        return values

    def partition(self, case: yaml.MappingNode) -> Optional[str]:
        node = _child(case, "partition")
        value = self.value(node)
        partitions = self.spec.partitions
        if partitions is None:
            if node is not None:
                self.error(node, f"{self.spec_name} is not partitioned.", "Remove 'partition:'.")
            return None
        if node is None:
            self.error(case, f"{self.spec_name} is partitioned: a test names its partition.", "Add e.g. 'partition: \"2024-01-01\"'.")
            return None
        key = str(value)
        if self.has_partition_key(partitions, key):
            return key
        if partitions.kind is PartitionKind.STATIC:
            self.error(node, f"'{key}' is not a partition of {self.spec_name}.", f"Its partitions: {', '.join(partitions.values)}.")
        else:
            self.error(node, f"'{key}' is not a {partitions.kind.value} partition of {self.spec_name}.", "Quote a key such as \"2024-01-01\".")
        return key

    def expect(self, case: yaml.MappingNode) -> Optional[tuple[Mapping[str, Any], ...]]:
        node, error_node = _child(case, "expect"), _child(case, "expect_error")
        if (node is None) == (error_node is None):
            self.error(node or case, "a test has either 'expect' (rows) or 'expect_error' (text of the error).", "Keep one of them.")
            return None
        if error_node is not None:
            if not isinstance(self.value(error_node), str) or not self.value(error_node):
                self.error(error_node, "'expect_error' must be text the error contains.", "Write e.g. 'expect_error: DIVIDE_BY_ZERO'.")
            return None
        rows = self.rows(node, "expect")
        if rows is None:
            return None
        if rows and any(set(r) != set(rows[0]) for r in rows):
            self.error(node, "every expected row must name the same columns.", f"The first names: {', '.join(rows[0])}.")
            return None
        if self.spec.output_columns is not None and rows:
            self.check_columns(node, self.spec.output_columns, "the SELECT's columns")
        return tuple(rows)

    @property
    def spec_name(self) -> str:
        return os.path.basename(self.spec.path)


_FORM_HINT = "Write 'tests:' then '- name: ...', 'given: {schema.table: [rows]}', 'expect: [rows]'."


def _child(node: Optional[yaml.Node], key: str) -> Optional[yaml.Node]:
    """The value node of ``key`` in a mapping node, if any."""
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((value for k, value in node.value if k.value == key), None)


def _lower(uri: TableUri) -> TableUri:
    """Spark's names are case-insensitive: tables are compared lower-cased."""
    return TableUri(uri.schema.lower(), uri.table.lower())


def _table_uri(name: str) -> Optional[TableUri]:
    """``schema.table`` as a :class:`TableUri` (``None`` if it is not two identifiers)."""
    parts = name.split(".")
    if len(parts) != 2 or not all(is_identifier(p) for p in parts):
        return None
    return TableUri(parts[0].lower(), parts[1].lower())
