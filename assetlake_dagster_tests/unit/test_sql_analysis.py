"""The SQL body: statements and lines, setup vs trailing query, tables, columns, markers."""

import pytest

from assetlake_dagster.errors import SourceLocation, SourceText
from assetlake_dagster.spec import SqlStatement, TableUri
from assetlake_dagster.sql.analysis import analyze_sql

HEADER = "-- materialize delta://a/t\n// group g\n\n"  # the body starts on line 4


def analyze(body, manual=False):
    return analyze_sql(SourceText.of("f.sql", HEADER + body), 4, manual=manual)


def first_lines(body, manual=False):
    _, diagnostics = analyze(body, manual)
    return [d.render().splitlines()[0] for d in diagnostics]


@pytest.mark.parametrize(
    "body, setup, select",
    [
        pytest.param("SELECT 1 AS x", (), SqlStatement("SELECT 1 AS x", 4), id="select-only"),
        pytest.param("SELECT 1 AS x;\n\n", (), SqlStatement("SELECT 1 AS x", 4), id="trailing-semicolon"),
        pytest.param(
            "SET spark.sql.ansi.enabled = true;\n-- a comment\nSELECT a,\n  b -- inline\nFROM s.t;",
            (SqlStatement("SET spark.sql.ansi.enabled = true", 4),),
            SqlStatement("SELECT a,\n  b -- inline\nFROM s.t", 6),
            id="text-sliced-as-written",
        ),
        pytest.param(
            "SELECT 'a;b' AS x, `c;d` FROM s.t",
            (),
            SqlStatement("SELECT 'a;b' AS x, `c;d` FROM s.t", 4),
            id="semicolons-in-literals",
        ),
        pytest.param(
            "SET spark.sql.session.timeZone = America/New_York;\nRESET;\nRESET spark.sql.ansi.enabled;\n"
            "CREATE OR REPLACE TEMP VIEW v AS SELECT * FROM s.t;\nCREATE TEMPORARY VIEW w AS SELECT 1;\n"
            "CACHE TABLE c AS SELECT * FROM v;\nCACHE LAZY TABLE w;\nUNCACHE TABLE IF EXISTS c;\nSELECT * FROM v",
            (
                SqlStatement("SET spark.sql.session.timeZone = America/New_York", 4),
                SqlStatement("RESET", 5),
                SqlStatement("RESET spark.sql.ansi.enabled", 6),
                SqlStatement("CREATE OR REPLACE TEMP VIEW v AS SELECT * FROM s.t", 7),
                SqlStatement("CREATE TEMPORARY VIEW w AS SELECT 1", 8),
                SqlStatement("CACHE TABLE c AS SELECT * FROM v", 9),
                SqlStatement("CACHE LAZY TABLE w", 10),
                SqlStatement("UNCACHE TABLE IF EXISTS c", 11),
            ),
            SqlStatement("SELECT * FROM v", 12),
            id="every-setup-kind",
        ),
        pytest.param(
            "WITH x AS (SELECT 1 AS a) SELECT a FROM x", (), SqlStatement("WITH x AS (SELECT 1 AS a) SELECT a FROM x", 4), id="cte"
        ),
        pytest.param(
            "SELECT a FROM s.t UNION ALL SELECT a FROM s.u",
            (),
            SqlStatement("SELECT a FROM s.t UNION ALL SELECT a FROM s.u", 4),
            id="union",
        ),
        pytest.param(
            "SELECT a FROM s.t INTERSECT SELECT a FROM s.u", (), SqlStatement("SELECT a FROM s.t INTERSECT SELECT a FROM s.u", 4), id="intersect"
        ),
        pytest.param(
            "SELECT a FROM s.t EXCEPT SELECT a FROM s.u", (), SqlStatement("SELECT a FROM s.t EXCEPT SELECT a FROM s.u", 4), id="except"
        ),
        pytest.param("VALUES (1, 'a'), (2, 'b')", (), SqlStatement("VALUES (1, 'a'), (2, 'b')", 4), id="values"),
        pytest.param("(SELECT 1 AS x)", (), SqlStatement("(SELECT 1 AS x)", 4), id="parenthesized"),
        pytest.param("FROM s.t SELECT a", (), SqlStatement("FROM s.t SELECT a", 4), id="from-first"),
    ],
)
def test_statements(body, setup, select):
    analysis, diagnostics = analyze(body)
    assert diagnostics == []
    assert (analysis.setup, analysis.select) == (setup, select)


STRUCTURE_ERRORS = [
    pytest.param(
        "INSERT INTO a.t SELECT 1;\nSELECT 1 AS x",
        "f.sql:4:1: INSERT is not allowed in a managed file; the managed write creates and writes the table. "
        "Before the SELECT only SET, RESET, CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
        "use '-- materialize manual' to write tables yourself.",
        id="insert",
    ),
    pytest.param(
        "SET x = 1;\nDROP TABLE IF EXISTS a.t;\nSELECT 1 AS x",
        "f.sql:5:1: DROP TABLE is not allowed in a managed file; the managed write creates and writes the table. "
        "Before the SELECT only SET, RESET, CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
        "use '-- materialize manual' to write tables yourself.",
        id="drop-table",
    ),
    pytest.param(
        "CREATE OR REPLACE TABLE a.t AS SELECT 1;\nSELECT 1 AS x",
        "f.sql:4:1: CREATE OR REPLACE TABLE is not allowed in a managed file; "
        "the managed write creates and writes the table. "
        "Before the SELECT only SET, RESET, CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
        "use '-- materialize manual' to write tables yourself.",
        id="create-table",
    ),
    pytest.param(
        "CREATE VIEW a.v AS SELECT 1;\nSELECT 1 AS x",
        "f.sql:4:1: CREATE VIEW is not allowed in a managed file; the managed write creates and writes the table. "
        "Before the SELECT only SET, RESET, CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
        "use '-- materialize manual' to write tables yourself.",
        id="permanent-view",
    ),
    pytest.param(
        "CREATE GLOBAL TEMPORARY VIEW v AS SELECT 1;\nSELECT 1 AS x",
        "f.sql:4:1: CREATE GLOBAL TEMPORARY VIEW is not allowed in a managed file; "
        "the managed write creates and writes the table. "
        "Before the SELECT only SET, RESET, CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
        "use '-- materialize manual' to write tables yourself.",
        id="global-temp-view",
    ),
    pytest.param(
        "DELETE FROM a.t WHERE x = 1;\nSELECT 1 AS x",
        "f.sql:4:1: DELETE is not allowed in a managed file; the managed write creates and writes the table. "
        "Before the SELECT only SET, RESET, CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
        "use '-- materialize manual' to write tables yourself.",
        id="delete",
    ),
    pytest.param(
        "MERGE INTO a.t USING s.u ON a.t.id = s.u.id WHEN MATCHED THEN DELETE;\nSELECT 1 AS x",
        "f.sql:4:1: MERGE is not allowed in a managed file; the managed write creates and writes the table. "
        "Before the SELECT only SET, RESET, CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
        "use '-- materialize manual' to write tables yourself.",
        id="merge",
    ),
    pytest.param(
        "USE analytics;\nSELECT 1 AS x",
        "f.sql:4:1: USE is not allowed in a managed file; the managed write creates and writes the table. "
        "Before the SELECT only SET, RESET, CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
        "use '-- materialize manual' to write tables yourself.",
        id="use",
    ),
    pytest.param(
        "SELECT 1 AS x;\nSELECT 2 AS y",
        "f.sql:4:1: only the last statement may be a query. Make this one 'CREATE TEMP VIEW <name> AS ...' or remove it.",
        id="two-selects",
    ),
    pytest.param(
        "SELECT 1 AS x;\nINSERT INTO a.audit VALUES (1)",
        "f.sql:5:1: the file must end with one SELECT. 'INSERT' comes after the SELECT on line 4; "
        "the managed write does the writing, so end the file with the SELECT.",
        id="insert-after-select",
    ),
    pytest.param(
        "SELECT 1 AS x;\n\nSET spark.sql.ansi.enabled = false;",
        "f.sql:6:1: the file must end with one SELECT. 'SET' comes after the SELECT on line 4; "
        "the managed write does the writing, so end the file with the SELECT.",
        id="set-after-select",
    ),
    pytest.param(
        "CREATE TEMP VIEW v AS SELECT 1 AS x",
        "f.sql:4:1: the file must end with one SELECT. "
        "Add the SELECT whose rows become the table; 'CREATE TEMP VIEW' cannot end a managed file.",
        id="no-select",
    ),
    pytest.param(
        "",
        "f.sql:2:1: the file must end with one SELECT. "
        "The file has no SQL statements; add the SELECT whose rows become the table.",
        id="empty-body",
    ),
    pytest.param(
        "-- only a comment\n;\n",
        "f.sql:5:1: the file must end with one SELECT. "
        "The file has no SQL statements; add the SELECT whose rows become the table.",
        id="comments-only",
    ),
]


@pytest.mark.parametrize("body, expected", STRUCTURE_ERRORS)
def test_structure_errors(body, expected):
    assert first_lines(body) == [expected]


SYNTAX_ERRORS = [
    pytest.param(
        "SET x = 1;\nSELECT id,\n       amount\nFROM s.t src extra",
        "f.sql:7:14: SQL syntax error near 'extra': Invalid expression / Unexpected token. "
        "This must be valid Spark SQL.",
        id="rebased-to-file-line",
    ),
    pytest.param(
        "SELECT id FROM",
        "f.sql:4:11: SQL syntax error near 'FROM': Expected table name but got the end of the statement. "
        "This must be valid Spark SQL.",
        id="unexpected-end",
    ),
    pytest.param(
        "SELECT 1 AS x;\n  SELECT 'open FROM s.t",
        "f.sql:5:10: missing closing '. The ' opened here runs to the end of the file; close it.",
        id="unterminated-string",
    ),
]


@pytest.mark.parametrize("body, expected", SYNTAX_ERRORS)
def test_syntax_errors(body, expected):
    assert first_lines(body) == [expected]


def test_syntax_error_carets_point_at_the_token():
    _, diagnostics = analyze("SELECT id,\n  amount\nFROM s.t src extra")
    assert diagnostics[0].render().splitlines()[1:] == ["  FROM s.t src extra", "               ^^^^^"]


@pytest.mark.parametrize(
    "body, expected",
    [
        pytest.param(
            "SELECT o.id FROM raw.orders o JOIN raw.customers c ON o.cid = c.id",
            ["delta://raw/orders", "delta://raw/customers"],
            id="join",
        ),
        pytest.param(
            "WITH recent AS (SELECT * FROM raw.orders), big AS (SELECT * FROM recent)\nSELECT id FROM big",
            ["delta://raw/orders"],
            id="cte-names-excluded",
        ),
        pytest.param(
            "CREATE TEMP VIEW recent AS SELECT * FROM raw.orders;\nSELECT id FROM recent JOIN stg.x USING (id)",
            ["delta://raw/orders", "delta://stg/x"],
            id="temp-view-excluded",
        ),
        pytest.param(
            "SELECT id FROM (SELECT id FROM raw.a) sub WHERE id IN (SELECT id FROM raw.b)\n"
            "AND EXISTS (SELECT 1 FROM raw.c)",
            ["delta://raw/a", "delta://raw/b", "delta://raw/c"],
            id="subqueries",
        ),
        pytest.param(
            "SELECT id FROM raw.a UNION SELECT id FROM `raw`.`b` UNION SELECT id FROM raw.a",
            ["delta://raw/a", "delta://raw/b"],
            id="union-backticks-deduped",
        ),
        pytest.param(
            "SELECT id FROM range(10) JOIN global_temp.v USING (id) JOIN plain USING (id)",
            [],
            id="functions-global-temp-unqualified-ignored",
        ),
        pytest.param(
            "SELECT * FROM raw.orders VERSION AS OF 3", ["delta://raw/orders"], id="time-travel"
        ),
    ],
)
def test_tables(body, expected):
    analysis, diagnostics = analyze(body)
    assert diagnostics == []
    assert [str(t.uri) for t in analysis.tables] == expected


def test_table_location_is_the_reference():
    analysis, _ = analyze("SELECT id\nFROM   `raw`.orders")
    assert analysis.tables[0].location == SourceLocation("f.sql", 5, 8)
    assert analysis.tables[0].span == len("`raw`.orders")


@pytest.mark.parametrize(
    "body, expected",
    [
        pytest.param(
            "SELECT id FROM `c-at`.raw.orders",
            "f.sql:4:16: 'c-at' in '`c-at`.raw.orders' is not an allowed identifier. "
            "Use letters, digits and underscores, not starting with a digit.",
            id="three-part-bad-identifier",
        ),
        pytest.param(
            "SELECT id FROM delta.`/data/orders`",
            "f.sql:4:16: path-based table reference 'delta.`/data/orders`'. Refer to managed tables as "
            "'schema.table' and declare external ones with '-- on delta://<schema>/<table>'.",
            id="path-delta",
        ),
        pytest.param(
            "SELECT id FROM parquet.`s3://bucket/orders`",
            "f.sql:4:16: path-based table reference 'parquet.`s3://bucket/orders`'. Refer to managed tables as "
            "'schema.table' and declare external ones with '-- on delta://<schema>/<table>'.",
            id="path-parquet",
        ),
        pytest.param(
            "SELECT id FROM raw.`my-orders`",
            "f.sql:4:20: 'my-orders' in 'raw.`my-orders`' is not an allowed identifier. "
            "Use letters, digits and underscores, not starting with a digit.",
            id="bad-identifier",
        ),
    ],
)
def test_bad_table_references(body, expected):
    assert first_lines(body) == [expected]


def test_a_three_part_name_is_another_catalogs_table_and_spark_catalog_is_the_lakes():
    # Whether the session has catalog 'cat' is checked when the definitions load (project/load.py).
    analysis, diagnostics = analyze("SELECT id FROM cat.raw.orders JOIN spark_catalog.raw.people USING (id)")
    assert diagnostics == []
    assert [(t.name, t.location, t.span) for t in analysis.foreign_tables] == [
        ("cat.raw.orders", SourceLocation("f.sql", 4, 16), len("cat.raw.orders"))
    ]
    assert [t.uri for t in analysis.tables] == [TableUri("raw", "people")]


def test_parquet_schema_with_a_plain_table_is_a_table():
    analysis, diagnostics = analyze("SELECT id FROM parquet.events")
    assert diagnostics == [] and [t.uri for t in analysis.tables] == [TableUri("parquet", "events")]


@pytest.mark.parametrize(
    "body, expected",
    [
        pytest.param("SELECT id, o.amount, 1 AS one, upper(n) name FROM s.t o", ("id", "amount", "one", "name"), id="named"),
        pytest.param("SELECT `Order Id` FROM s.t", ("Order Id",), id="quoted"),
        pytest.param("SELECT * FROM s.t", None, id="star"),
        pytest.param("SELECT t.*, id FROM s.t", None, id="qualified-star"),
        pytest.param("SELECT id, count(*) FROM s.t GROUP BY id", None, id="unaliased-expression"),
        pytest.param("SELECT 1", None, id="unaliased-literal"),
        pytest.param("SELECT a AS x FROM s.t UNION SELECT b AS y FROM s.u", ("x",), id="union-first-branch"),
        pytest.param("(SELECT a FROM s.t)", ("a",), id="parenthesized"),
        pytest.param("VALUES (1, 2)", None, id="values"),
        pytest.param("WITH c AS (SELECT 1 AS z) SELECT z, z AS w FROM c", ("z", "w"), id="cte"),
    ],
)
def test_output_columns(body, expected):
    analysis, diagnostics = analyze(body)
    assert diagnostics == []
    names = None if analysis.output_columns is None else tuple(c.name for c in analysis.output_columns)
    assert names == expected


def test_output_column_positions():
    analysis, _ = analyze("SELECT id,\n  amount * 2 AS doubled\nFROM s.t")
    assert [(c.location.line, c.location.col, c.span) for c in analysis.output_columns] == [(4, 8, 2), (5, 17, 7)]


def test_parameters_in_order_with_positions():
    body = "CREATE TEMP VIEW v AS SELECT * FROM s.t WHERE a > :low;\nSELECT a FROM v\nWHERE d = :day::date AND a < :high"
    analysis, diagnostics = analyze(body)
    assert diagnostics == []
    assert [(p.name, p.location.line, p.location.col, p.span) for p in analysis.parameters] == [
        ("low", 4, 51, 4),
        ("day", 6, 11, 4),
        ("high", 6, 30, 5),
    ]


def test_positional_parameter_is_refused():
    assert first_lines("SELECT a FROM s.t WHERE a = ?") == [
        "f.sql:4:29: positional parameter '?' is not supported. "
        "Use a named marker ':name' and declare it with '-- $name (<type>)'."
    ]


def test_colon_in_a_struct_type_is_not_a_parameter():
    analysis, diagnostics = analyze("SELECT CAST(NULL AS STRUCT<a:INT>) AS s FROM s.t")
    assert diagnostics == [] and analysis.parameters == ()


def test_manual_allows_any_statements():
    body = (
        "CREATE TABLE IF NOT EXISTS a.t (id INT);\nDELETE FROM a.t WHERE id < 0;\n"
        "INSERT INTO a.t SELECT id FROM raw.src JOIN raw.other USING (id)"
    )
    analysis, diagnostics = analyze(body, manual=True)
    assert diagnostics == []
    assert [s.line for s in analysis.setup] == [4, 5]
    assert analysis.select == SqlStatement("INSERT INTO a.t SELECT id FROM raw.src JOIN raw.other USING (id)", 6)
    assert [str(t.uri) for t in analysis.tables] == ["delta://raw/src", "delta://raw/other"]  # written tables left out
    assert analysis.output_columns is None


def test_manual_without_statements():
    assert first_lines("", manual=True) == [
        "f.sql:2:1: the file has no SQL statements. A manual file runs its own SQL; add the statements."
    ]


def test_every_problem_of_a_body_is_reported():
    body = "DROP TABLE a.x;\nSELECT id FROM `c-at`.a.b;\nSELECT id FROM delta.`/p` WHERE q = ?"
    assert [line.split(": ", 1)[0] for line in first_lines(body)] == [
        "f.sql:4:1",
        "f.sql:5:1",
        "f.sql:5:16",
        "f.sql:6:16",
        "f.sql:6:37",
    ]
