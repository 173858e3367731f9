"""Running SQL unit tests (:mod:`assetlake_dagster.project.sql_tests`) on a Spark session, without a lake.

Each test's given rows become temporary views of the test's own, the SQL's table names are
pointed at them (only the names of the tables the test gives are rewritten, by their
positions in the parsed SQL; the rest of the text runs as written), and the file's setup
statements and SELECT run with the test's arguments and partition bound as in a real run.
The result is compared with the expected rows as a multiset on the expected columns.
A timestamp without an offset, given, bound or expected, is a wall time in the session's
zone (``spark.sql.session.timeZone``), whatever the zone of this Python process
(:mod:`assetlake_dagster.spark.python_values`). Nothing is written anywhere: temporary views
live in the session and are dropped after each test.

Example:
    >>> from assetlake_dagster.cli.sql_test_run import assert_sql_tests_pass
    >>> assert_sql_tests_pass("pipelines", spark)  # doctest: +SKIP
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.errors import AssetlakeError, Diagnostic, ProjectError, display_path
from assetlake_dagster.spec import SqlAssetSpec, TableUri
from assetlake_dagster.sql.rewrite import with_tables_replaced
from assetlake_dagster.project.sql_tests import SqlTestCase, discover_test_files, parse_test_file, sql_path_of, tests_path
from assetlake_dagster.defs.partitions import has_partition_key

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: How many differing rows a failure shows of each kind.
SHOWN_ROWS = 10


@dataclass(frozen=True)
class SqlTestResult:
    """What one test did.

    Attributes:
        case: the test.
        passed: whether the SQL returned the expected rows (or failed as expected).
        detail: what differed, readable, when it did not pass.
    """

    case: SqlTestCase
    passed: bool
    detail: str = ""

    def render(self) -> str:
        """``PASS``/``FAIL`` with the test's location and name, then the detail indented."""
        head = f"{'PASS' if self.passed else 'FAIL'} {self.case.location}: {self.case.name}"
        if self.passed or not self.detail:
            return head
        return head + "\n" + "\n".join(f"    {line}" for line in self.detail.splitlines())


def load_sql_tests(paths: Sequence[str]) -> list[SqlTestCase]:
    """The tests of ``paths`` (project folders, SQL files or ``*.tests.yml`` files).

    A folder's project is loaded as the definitions loader does (its SQL must load), and the
    columns of its tables check the tests' given rows.

    Raises:
        ProjectError: every problem in the SQL or the tests files, located.
    """
    from assetlake_dagster.project.load import load_project, parse_file

    cases: list[SqlTestCase] = []
    problems: list[Diagnostic] = []
    for path in paths:
        if os.path.isdir(path):
            found_cases, found = project_tests(path, load_project(path, load_python_files=False).assets)
        else:
            test_file = path if path.endswith(".tests.yml") else tests_path(path)
            sql = sql_path_of(test_file)
            try:
                with open(sql, encoding="utf-8") as f:
                    spec, found = parse_file(sql, f.read())
            except OSError as err:
                raise AssetlakeError(f"{display_path(test_file)}: cannot read its SQL file {display_path(sql)}: {err}") from err
            if spec is not None and not os.path.exists(test_file):
                raise AssetlakeError(f"{display_path(sql)} has no tests: write them in {display_path(test_file)}.")
            if spec is not None:
                found_cases, more = _read_tests(test_file, {os.path.realpath(sql): spec}, {})
                found = [*found, *more]
            else:
                found_cases = []
        cases.extend(found_cases)
        problems.extend(found)
    if problems:
        raise ProjectError(problems)
    return cases


def project_tests(root: str, specs: Sequence[SqlAssetSpec]) -> tuple[list[SqlTestCase], list[Diagnostic]]:
    """Every test under ``root`` of the project's SQL files ``specs``, and every problem.

    Reads files only (no Spark): ``assetlake validate`` reports the problems too.
    """
    by_path = {os.path.realpath(s.path): s for s in specs}
    known = {s.uri: s.output_columns for s in specs if s.output_columns is not None}
    cases: list[SqlTestCase] = []
    problems: list[Diagnostic] = []
    for test_file in discover_test_files(root):
        found_cases, found = _read_tests(test_file, by_path, known)
        cases.extend(found_cases)
        problems.extend(found)
    return cases, problems


def _read_tests(test_file: str, specs: Mapping[str, SqlAssetSpec], known: Mapping[TableUri, Sequence[str]]):
    from assetlake_dagster.errors import SourceText

    spec = specs.get(os.path.realpath(sql_path_of(test_file)))
    with open(test_file, encoding="utf-8") as f:
        text = f.read()
    if spec is None:
        src = SourceText.of(test_file, text)
        sql = os.path.basename(sql_path_of(test_file))
        return [], [src.diagnostic(1, 1, f"there is no {sql} beside this tests file.", "Name it after the SQL file it tests: <name>.sql -> <name>.tests.yml.")]
    return parse_test_file(test_file, text, spec, known, has_partition_key=has_partition_key)


def run_sql_test(spark: "SparkSession", spec: SqlAssetSpec, case: SqlTestCase) -> SqlTestResult:
    """Run one test on a session of its own of ``spark`` (a classic session's ``newSession``,
    so the file's ``SET``s stay in it): its given rows as temporary views, its SQL over them."""
    from pyspark.errors import PySparkException

    from assetlake_dagster.defs.run_config import bind_arguments
    from assetlake_dagster.spark.python_values import in_session_zone, session_time_zone
    from assetlake_dagster.spark.session import is_connect_session
    from assetlake_dagster.run.sql_runner import run_sql_file

    # A Spark Connect session has no newSession(): there the file's SETs stay in ``spark``.
    spark = spark if is_connect_session(spark) else spark.newSession()
    suffix = uuid.uuid4().hex[:8]
    views = {table.uri: f"__assetlake_test_{table.uri.schema}__{table.uri.table}_{suffix}" for table in case.given}
    try:
        for table in case.given:
            _given_view(spark, table, views[table.uri], case)
        tested = with_tables_replaced(spec, views)
        args = {**bind_arguments(spec.arguments, {}), **case.args, **_partition_bindings(spec, case.partition)}
        zone = session_time_zone(spark)
        args = in_session_zone(spark, args)
        try:
            rows = run_sql_file(spark, tested, args)
            actual = _collected(rows, zone) if rows is not None else []
            columns = list(rows.columns) if rows is not None else []
        except (AssetlakeError, PySparkException) as err:
            message = str(err)
            if case.expect_error is not None and case.expect_error.lower() in message.lower():
                return SqlTestResult(case, True)
            wanted = "expected rows, but the SQL failed" if case.expect_error is None else f"expected an error containing {case.expect_error!r}, got another"
            return SqlTestResult(case, False, f"{wanted}:\n{message.splitlines()[0] if message else type(err).__name__}")
        if case.expect_error is not None:
            return SqlTestResult(case, False, f"expected an error containing {case.expect_error!r}, but the SQL returned {len(actual)} row(s)")
        return _compare(case, columns, actual, zone)
    finally:
        for view in views.values():
            spark.catalog.dropTempView(view)


def run_sql_tests(spark: "SparkSession", cases: Iterable[SqlTestCase]) -> list[SqlTestResult]:
    """Run ``cases`` in order on ``spark`` (each SQL file parsed once)."""
    from assetlake_dagster.project.load import parse_file

    specs: dict[str, SqlAssetSpec] = {}
    results = []
    for case in cases:
        if case.sql_path not in specs:
            with open(case.sql_path, encoding="utf-8") as f:
                spec, problems = parse_file(case.sql_path, f.read())
            if spec is None:
                raise ProjectError(problems)
            specs[case.sql_path] = spec
        results.append(run_sql_test(spark, specs[case.sql_path], case))
    return results


def assert_sql_tests_pass(path: str, spark: "SparkSession") -> list[SqlTestResult]:
    """Run the SQL unit tests of ``path`` (a folder, a SQL file or a tests file) in pytest.

    Raises:
        AssertionError: listing every failing test with its diff.
        ProjectError: a test or SQL file has mistakes.

    Example:
        >>> def test_sql(spark):  # doctest: +SKIP
        ...     assert_sql_tests_pass("pipelines", spark)
    """
    results = run_sql_tests(spark, load_sql_tests([path]))
    failed = [r for r in results if not r.passed]
    if failed:
        raise AssertionError(f"{len(failed)} of {len(results)} SQL tests failed:\n" + "\n".join(r.render() for r in failed))
    return results


def _given_view(spark: "SparkSession", table, view: str, case: SqlTestCase) -> None:
    """Register ``table``'s rows as ``view``: with ``columns:`` each value is written as text
    and cast to its column's type, as Spark's CAST reads it (``10.50`` to a DECIMAL,
    ``2024-01-02 09:30:00`` to a TIMESTAMP); without, the types are inferred from the values."""
    from pyspark.errors import PySparkException

    from assetlake_dagster.spark.python_values import rows_in_session_zone

    try:
        if table.columns is not None:
            fields = spark.createDataFrame([], table.columns).schema.fields
            texts = [tuple(_as_text(_value_of(row, f.name)) for f in fields) for row in table.rows]
            as_text = ", ".join(f"`{f.name}` STRING" for f in fields)
            cast = [f"CAST(`{f.name}` AS {f.dataType.simpleString()}) AS `{f.name}`" for f in fields]
            df = spark.createDataFrame(texts, as_text).selectExpr(*cast)
        else:
            df = spark.createDataFrame(rows_in_session_zone(spark, [dict(r) for r in table.rows]))
        df.createOrReplaceTempView(view)
    except (PySparkException, TypeError, ValueError) as err:
        hint = "" if table.columns else " Give its types: 'columns: <Spark DDL>' and 'rows:'."
        problem = str(err).splitlines()[0].rstrip(".")
        raise AssetlakeError(
            f"{table.location}: the rows of {table.uri.sql_name} in test '{case.name}' cannot be made a table: "
            f"{problem}.{hint}"
        ) from err


def _value_of(row: Mapping[str, Any], column: str) -> Any:
    return next((value for name, value in row.items() if name.lower() == column.lower()), None)


def _as_text(value: Any) -> Optional[str]:
    """A YAML value as the text Spark's CAST reads (``None`` stays NULL)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _partition_bindings(spec: SqlAssetSpec, partition: Optional[str]) -> dict[str, Any]:
    """The values a run of ``partition`` binds (its window's bounds for a time partition)."""
    if partition is None or spec.partitions is None:
        return {}
    from assetlake_dagster.defs.dagster_internals import time_window_of
    from assetlake_dagster.defs.partitions import PartitionSlice, partitions_definition
    from assetlake_dagster.spec import PartitionKind

    if spec.partitions.kind in (PartitionKind.STATIC, PartitionKind.DYNAMIC):
        return PartitionSlice(partition).bindings()
    window = time_window_of(partitions_definition(spec.partitions), partition)
    return PartitionSlice(partition, window.start, window.end).bindings()


def _collected(rows: Any, zone: dt.tzinfo) -> list[dict[str, Any]]:
    """The result's rows as mappings, its ``TIMESTAMP`` values as aware times in ``zone``
    (``collect()`` gives them in this process's local zone)."""
    from assetlake_dagster.spark.python_values import collected_in_zone

    types = {f.name: f.dataType for f in rows.schema.fields}
    return [
        {name: collected_in_zone(value, types[name], zone) if name in types else value for name, value in row.items()}
        for row in (r.asDict(recursive=True) for r in rows.collect())
    ]


def _compare(
    case: SqlTestCase, columns: Sequence[str], actual: Sequence[Mapping[str, Any]], zone: dt.tzinfo = dt.timezone.utc
) -> SqlTestResult:
    expected = case.expect or ()
    spelled = {c.lower(): c for c in columns}
    wanted = case.expect_columns or tuple(columns)
    missing_columns = [c for c in wanted if c.lower() not in spelled]
    if missing_columns:
        return SqlTestResult(case, False, f"the SELECT returns no column {', '.join(missing_columns)} (it returns: {', '.join(columns)})")
    # Compared on the expected columns only, as dbt's unit tests do.
    got = Counter(tuple(_comparable(row[spelled[c.lower()]], zone) for c in wanted) for row in actual)
    want = Counter(tuple(_comparable(_value_of(row, c), zone) for c in wanted) for row in expected)
    if got == want:
        return SqlTestResult(case, True)
    lines = [f"expected {sum(want.values())} row(s), got {sum(got.values())}; compared on {', '.join(wanted)}"]
    for sign, label, rows in (("-", "expected, not returned", want - got), ("+", "returned, not expected", got - want)):
        listed = list(rows.elements())
        if listed:
            lines.append(f"{sign} {len(listed)} {label}:")
            lines.extend(f"{sign}   " + ", ".join(f"{c}={_shown(v)}" for c, v in zip(wanted, row)) for row in listed[:SHOWN_ROWS])
            if len(listed) > SHOWN_ROWS:
                lines.append(f"{sign}   … and {len(listed) - SHOWN_ROWS} more")
    return SqlTestResult(case, False, "\n".join(lines))


def _comparable(value: Any, zone: dt.tzinfo = dt.timezone.utc) -> Any:
    """A value both sides can be compared by: numbers as decimals (10.5 == 10.50, floats to
    nine decimals), aware times as naive wall times in the session's ``zone`` (as naive
    expected times are read), lists and mappings as tuples."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        return Decimal(repr(round(value, 9))).normalize()
    if isinstance(value, (int, Decimal)):
        return Decimal(value).normalize()
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(zone).replace(tzinfo=None)
    if isinstance(value, (list, tuple)):
        return tuple(_comparable(v, zone) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _comparable(v, zone)) for k, v in value.items()))
    return value


def _shown(value: Any) -> str:
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    return repr(value) if isinstance(value, str) else str(value)
