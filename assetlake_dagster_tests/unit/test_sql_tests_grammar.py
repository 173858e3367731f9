"""SQL unit tests' files (``<name>.tests.yml``): read and checked without Spark, located errors,
the SQL's table names pointed at the given rows, and the readable diff of a failure."""

import os
import textwrap

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assetlake_dagster.cli.main import main
from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster.project.load import load_project
from assetlake_dagster.spec import TableUri
from assetlake_dagster.sql.rewrite import rename_tables
from assetlake_dagster.cli.sql_test_run import _compare, load_sql_tests, project_tests
from assetlake_dagster.project.sql_tests import SqlTestCase, parse_test_file
from assetlake_dagster.defs.partitions import has_partition_key

REVENUE_SQL = """\
-- materialize delta://analytics/revenue
-- $min_amount (float) = 0

SELECT c.customer_id, sum(o.amount) AS revenue
FROM analytics.customers c JOIN staging.orders o ON o.customer_id = c.customer_id
WHERE o.amount >= :min_amount
GROUP BY c.customer_id
"""
CUSTOMERS_SQL = """\
-- materialize delta://analytics/customers

SELECT customer_id, name FROM raw.customers
"""
DAILY_SQL = """\
-- materialize delta://staging/daily
-- partitioned daily start=2024-01-01

SELECT id FROM raw.events WHERE at >= {partition_start} AND at < {partition_end}
"""
GOOD_CASE = """\
  - name: sums
    given:
      analytics.customers: [{customer_id: 1, name: Ann}]
      staging.orders: [{customer_id: 1, amount: 2.5}]
    expect: [{customer_id: 1, revenue: 2.5}]
"""


def project(tmp_path, tests: str, name: str = "revenue"):
    (tmp_path / "customers.sql").write_text(CUSTOMERS_SQL)
    (tmp_path / "revenue.sql").write_text(REVENUE_SQL)
    (tmp_path / "daily.sql").write_text(DAILY_SQL)
    (tmp_path / f"{name}.tests.yml").write_text(tests)
    return project_tests(str(tmp_path), load_project(str(tmp_path), load_python_files=False).assets)


def problems_of(tmp_path, tests: str, name: str = "revenue") -> list[str]:
    cwd = os.getcwd()
    os.chdir(tmp_path)  # messages name files relative to the working directory
    try:
        _, problems = project(tmp_path, tests, name)
    finally:
        os.chdir(cwd)
    return [p.render().splitlines()[0] for p in problems]


def test_the_demo_tests_load_without_problems():
    cases, problems = project_tests(DEMO_PROJECT_DIR, load_project(DEMO_PROJECT_DIR, load_python_files=False).assets)
    assert problems == []
    assert sorted(c.name for c in cases) == [
        "a_negative_top_n_returns_nothing",
        "one_day_without_small_amounts",
        "ranks_by_revenue_and_keeps_top_n",
        "sums_paid_orders_only",
    ]
    orders = next(c for c in cases if c.name == "one_day_without_small_amounts")
    assert (orders.partition, orders.args) == ("2024-01-02", {"min_amount": 1.0})


def test_a_good_test_reads_as_written(tmp_path):
    cases, problems = project(tmp_path, "tests:\n" + GOOD_CASE)
    assert problems == []
    (case,) = cases
    assert case.name == "sums" and case.sql_path == str(tmp_path / "revenue.sql")
    assert [(t.uri, t.rows) for t in case.given] == [
        (TableUri("analytics", "customers"), ({"customer_id": 1, "name": "Ann"},)),
        (TableUri("staging", "orders"), ({"customer_id": 1, "amount": 2.5},)),
    ]
    assert case.expect == ({"customer_id": 1, "revenue": 2.5},) and case.expect_columns == ("customer_id", "revenue")


ERRORS = [
    pytest.param(
        GOOD_CASE.replace("staging.orders:", "staging.order:"),
        [
            "revenue.tests.yml:5:7: revenue.sql does not read 'staging.order'. Did you mean 'staging.orders'?",
            "revenue.tests.yml:4:7: the test gives no rows for staging.orders. "
            "Give each table the SQL reads, e.g. 'schema.table: []' with columns for an empty one.",
        ],
        id="unknown-and-missing-upstream",
    ),
    pytest.param(
        GOOD_CASE.replace("name: Ann", "nmae: Ann"),
        ["revenue.tests.yml:4:46: column 'nmae' is not among analytics.customers's columns. Did you mean 'name'?"],
        id="given-column-of-a-project-table",
    ),
    pytest.param(
        GOOD_CASE.replace("revenue: 2.5}]", "revnue: 2.5}]"),
        ["revenue.tests.yml:6:31: column 'revnue' is not among the SELECT's columns. Did you mean 'revenue'?"],
        id="expected-column",
    ),
    pytest.param(
        GOOD_CASE + "    args: {min_amont: 1}\n",
        ["revenue.tests.yml:7:12: revenue.sql has no argument 'min_amont'. Did you mean 'min_amount'?"],
        id="unknown-argument",
    ),
    pytest.param(
        GOOD_CASE + "    args: {min_amount: lots}\n",
        ["revenue.tests.yml:7:24: argument 'min_amount' is a float, not 'lots'. Give a number, e.g. 0.5."],
        id="argument-type",
    ),
    pytest.param(
        GOOD_CASE + '    partition: "2024-01-01"\n',
        ["revenue.tests.yml:7:16: revenue.sql is not partitioned. Remove 'partition:'."],
        id="partition-of-a-whole-table",
    ),
    pytest.param(
        GOOD_CASE + "    expect_error: boom\n",
        ["revenue.tests.yml:6:13: a test has either 'expect' (rows) or 'expect_error' (text of the error). Keep one of them."],
        id="expect-and-expect-error",
    ),
    pytest.param(
        GOOD_CASE.replace("    expect:", "    expected:"),
        [
            "revenue.tests.yml:6:5: unknown test key 'expected'. Did you mean 'expect'?",
            "revenue.tests.yml:2:5: a test has either 'expect' (rows) or 'expect_error' (text of the error). Keep one of them.",
        ],
        id="unknown-key",
    ),
    pytest.param(
        GOOD_CASE + GOOD_CASE,
        ["revenue.tests.yml:7:11: test 'sums' is defined twice. The first is on line 2; rename one."],
        id="duplicate-name",
    ),
    pytest.param(
        GOOD_CASE.replace("staging.orders: [{customer_id: 1, amount: 2.5}]", "staging.orders: []"),
        ["revenue.tests.yml:5:23: staging.orders has no rows, so its columns' types are unknown. "
         "Write it as 'columns: <Spark DDL>' and 'rows: []'."],
        id="empty-table-without-types",
    ),
    pytest.param(
        "tests:\n  - name: [unclosed\n",
        ["revenue.tests.yml:3:1: not valid YAML: expected ',' or ']', but got '<stream end>'. Fix the YAML syntax."],
        id="yaml-syntax",
    ),
    pytest.param(
        "tests:\n  - name: a\x1f\n",
        ["revenue.tests.yml:2:12: not valid YAML: unacceptable character #x001f: special characters are not allowed. "
         "Fix the YAML syntax."],
        id="yaml-control-character",
    ),
    pytest.param(
        "- name: x\n",
        ["revenue.tests.yml:1:1: a tests file holds one key, 'tests', with a list of tests. "
         "Write 'tests:' then '- name: ...', 'given: {schema.table: [rows]}', 'expect: [rows]'."],
        id="not-a-tests-mapping",
    ),
]


@pytest.mark.parametrize("body, expected", ERRORS)
def test_mistakes_are_located(tmp_path, body, expected):
    text = body if body.startswith(("tests:", "- ")) else "tests:\n" + body
    assert problems_of(tmp_path, text) == expected


def test_partitions_are_checked(tmp_path):
    base = "tests:\n  - name: d\n    given:\n      raw.events: [{id: 1, at: 2024-01-01 01:00:00}]\n    expect: [{id: 1}]\n"
    assert problems_of(tmp_path, base, "daily") == [
        "daily.tests.yml:2:5: daily.sql is partitioned: a test names its partition. Add e.g. 'partition: \"2024-01-01\"'."
    ]
    assert problems_of(tmp_path, base + "    partition: 2023-12-31\n", "daily") == [
        "daily.tests.yml:6:16: '2023-12-31' is not a daily partition of daily.sql. Quote a key such as \"2024-01-01\"."
    ]
    assert problems_of(tmp_path, base + '    partition: "2024-01-05"\n', "daily") == []


def test_a_tests_file_needs_its_sql_file(tmp_path):
    assert problems_of(tmp_path, "tests: []\n", "revenu") == [
        "revenu.tests.yml:1:1: there is no revenu.sql beside this tests file. "
        "Name it after the SQL file it tests: <name>.sql -> <name>.tests.yml."
    ]


def test_validate_reports_the_tests_files_too(tmp_path, capsys):
    project(tmp_path, "tests:\n" + GOOD_CASE.replace("staging.orders:", "staging.order:"))
    assert main(["validate", str(tmp_path)]) == 1
    assert "does not read 'staging.order'" in capsys.readouterr().err
    (tmp_path / "revenue.tests.yml").write_text("tests:\n" + GOOD_CASE)
    assert main(["validate", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"ok: 3 assets, 3 external tables, 1 SQL test in {tmp_path}\n"


def test_a_sql_file_or_its_tests_file_can_be_named(tmp_path):
    project(tmp_path, "tests:\n" + GOOD_CASE)
    for path in ("revenue.sql", "revenue.tests.yml"):
        assert [c.name for c in load_sql_tests([str(tmp_path / path)])] == ["sums"]


def test_table_names_are_pointed_at_the_given_rows_and_nothing_else():
    names = {TableUri("raw", "orders"): "v1", TableUri("analytics", "customers"): "v2"}
    sql = (
        "WITH orders AS (SELECT * FROM `raw`.`orders` WHERE note <> 'raw.orders')\n"
        "SELECT c.id, orders.n FROM Analytics.Customers c JOIN orders ON orders.id = c.id "
        "JOIN raw.payments p ON p.id = c.id WHERE c.at >= :since"
    )
    assert rename_tables(sql, names) == (
        "WITH orders AS (SELECT * FROM v1 WHERE note <> 'raw.orders')\n"
        "SELECT c.id, orders.n FROM v2 c JOIN orders ON orders.id = c.id "
        "JOIN raw.payments p ON p.id = c.id WHERE c.at >= :since"
    )


def test_a_failure_shows_the_rows_that_differ():
    case = SqlTestCase(
        "sums",
        "revenue.sql",
        expect=({"customer_id": 1, "revenue": 2.5}, {"customer_id": 2, "revenue": 1}),
    )
    passed = _compare(case, ["customer_id", "revenue", "name"], [
        {"customer_id": 2, "revenue": __import__("decimal").Decimal("1.00"), "name": "Bob"},
        {"customer_id": 1, "revenue": 2.5000000001, "name": "Ann"},
    ])
    assert passed.passed  # compared on the expected columns; 1 == 1.00, floats to nine decimals
    failed = _compare(case, ["customer_id", "revenue"], [{"customer_id": 1, "revenue": 3.0}])
    assert not failed.passed
    assert failed.detail == textwrap.dedent(
        """\
        expected 2 row(s), got 1; compared on customer_id, revenue
        - 2 expected, not returned:
        -   customer_id=1, revenue=2.5
        -   customer_id=2, revenue=1
        + 1 returned, not expected:
        +   customer_id=1, revenue=3"""
    )
    missing = _compare(case, ["id"], [])
    assert missing.detail == "the SELECT returns no column customer_id, revenue (it returns: id)"


DEMO_SPECS = load_project(DEMO_PROJECT_DIR, load_python_files=False).assets
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
_KEYS = st.sampled_from(["tests", "name", "given", "expect", "expect_error", "args", "partition", "columns",
                         "rows", "analytics.customers", "staging.orders", "customer_id", "min_amount", "x"])
_YAML_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=60), _YAML_VALUES.map(lambda v: yaml.safe_dump({"tests": v}))))
def test_any_tests_file_gives_cases_or_located_problems_never_a_traceback(tmp_path, text):
    revenue = next(s for s in DEMO_SPECS if s.uri.table == "customer_revenue")
    cases, problems = parse_test_file("t.tests.yml", text, revenue, {}, has_partition_key=has_partition_key)
    assert all(p.location.line >= 1 and p.message for p in problems)
    assert cases or problems or text.strip() in ("", "tests: []", "tests:") or yaml.safe_load(text) in (None, {"tests": []})
