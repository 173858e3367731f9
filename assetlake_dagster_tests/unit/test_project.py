"""Projects: fixture folders → specs, cross-file checks, every error raised together."""

import datetime as dt
import hashlib
import os
from pathlib import Path

import pytest

from assetlake_dagster.errors import ConfigError, ProjectError
from assetlake_dagster.project.load import discover_sql_files, load_project, parse_file
from assetlake_dagster.spec import ArgumentType, SqlStatement, TableUri, WriteStrategy
from assetlake_dagster_tests.helpers import PROJECTS as PROJECTS_DIR

PROJECTS = Path(PROJECTS_DIR)


@pytest.fixture
def in_projects(monkeypatch):
    """Run from the fixtures folder so messages show short paths like 'invalid/x.sql'."""
    monkeypatch.chdir(PROJECTS)


def _first_lines(error):
    return [d.render().splitlines()[0] for d in error.diagnostics]


# -- basic -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def basic():
    return load_project(PROJECTS / "basic")


def test_basic_assets_and_strategies(basic):
    assert basic.root == str(PROJECTS / "basic")
    assert [(os.path.relpath(a.path, basic.root), str(a.uri), a.materialize.strategy, a.materialize.key) for a in basic.assets] == [
        ("marts/customer_totals.sql", "delta://analytics/customer_totals", WriteStrategy.MERGE, ("customer_id",)),
        ("marts/order_log.sql", "delta://analytics/order_log", WriteStrategy.APPEND, ()),
        ("staging/customers.sql", "delta://analytics/customers", WriteStrategy.MERGE, ("customer_id",)),
        ("staging/orders_clean.sql", "delta://analytics/orders_clean", WriteStrategy.REPLACE, ()),
    ]


def test_basic_external_tables(basic):
    assert basic.external == (TableUri("raw", "customers"), TableUri("raw", "orders"))


def test_basic_upstreams_merge_declared_and_inferred(basic):
    by_uri = basic.by_uri()
    upstreams = {
        str(uri): [(str(u.uri), u.declared, u.location.line) for u in spec.upstreams] for uri, spec in by_uri.items()
    }
    assert upstreams == {
        # declared on line 2 and also read on line 12: declared wins, listed once
        "delta://analytics/customer_totals": [
            ("delta://analytics/customers", True, 2),
            ("delta://analytics/orders_clean", False, 7),
        ],
        "delta://analytics/order_log": [("delta://analytics/orders_clean", False, 6)],
        "delta://analytics/customers": [("delta://raw/customers", False, 5)],
        "delta://analytics/orders_clean": [("delta://raw/orders", True, 3)],
    }


def test_basic_catalog_attributes_arguments_and_sql(basic):
    spec = basic.by_uri()[TableUri("analytics", "orders_clean")]
    assert (spec.catalog.group, spec.catalog.owners, spec.catalog.tags, spec.catalog.description, spec.catalog.kinds) == (
        "sales",
        ("team:data-eng", "alice@example.com"),
        (("tier", "silver"), ("pii", "false"), ("domain", "sales")),
        "Cleaned orders: one row per order, test orders removed.",
        ("spark", "delta"),
    )
    assert [(a.name, a.type, a.default) for a in spec.arguments] == [
        ("min_amount", ArgumentType.FLOAT, 0.0),
        ("since", ArgumentType.DATE, dt.date(2024, 1, 1)),
    ]
    assert spec.setup == (
        SqlStatement("SET spark.sql.ansi.enabled = true", 16),
        SqlStatement(
            "CREATE OR REPLACE TEMP VIEW recent AS\n"
            "SELECT * FROM raw.orders WHERE amount >= :min_amount AND ordered_at >= :since",
            17,
            ("min_amount", "since"),
        ),
    )
    assert spec.select == SqlStatement("SELECT order_id, customer_id, amount, ordered_at\nFROM recent\nWHERE NOT is_test", 19)
    assert spec.output_columns == ("order_id", "customer_id", "amount", "ordered_at")


def test_code_version_is_the_sha256_of_the_file(basic):
    for spec in basic.assets:
        assert spec.code_version == hashlib.sha256(Path(spec.path).read_bytes()).hexdigest()


# -- cross-checks of one file ----------------------------------------------------------------


def _parse_errors(text):
    spec, diagnostics = parse_file("f.sql", text)
    assert spec is None
    return [d.render().splitlines()[0] for d in diagnostics]


FILE_ERRORS = [
    pytest.param(
        "-- materialize delta://a/t key=order_id\n\nSELECT ordr_id, amount FROM raw.o",
        "f.sql:1:32: key column 'order_id' is not among the SELECT's columns. Did you mean 'ordr_id'?",
        id="key-typo",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id,region\n\nSELECT id, amount FROM raw.o",
        "f.sql:1:35: key column 'region' is not among the SELECT's columns. The SELECT projects: id, amount.",
        id="key-missing",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history track=nmae\n\nSELECT id, name FROM raw.c",
        "f.sql:1:49: track column 'nmae' is not among the SELECT's columns. Did you mean 'name'?",
        id="track-typo",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history track=tier\n\nSELECT id, name FROM raw.c",
        "f.sql:1:49: track column 'tier' is not among the SELECT's columns. The SELECT projects: id, name.",
        id="track-missing",
    ),
    pytest.param(
        "-- materialize delta://a/t key=id history valid_from=updated\n\nSELECT id, name, updated_at FROM raw.c",
        "f.sql:1:54: valid_from column 'updated' is not among the SELECT's columns. Did you mean 'updated_at'?",
        id="valid-from-typo",
    ),
    pytest.param(
        "-- materialize scd2 delta://a/t key=id\n\nSELECT id, name AS Is_Current FROM raw.c",
        "f.sql:3:20: column 'Is_Current' is reserved. "
        "assetlake writes _partition, is_current, valid_from, valid_to itself; rename or drop it.",
        id="history-reserved-is-current",
    ),
    pytest.param(
        "-- materialize delta://a/t\n\nSELECT id, 'x' AS _PARTITION FROM raw.o",
        "f.sql:3:19: column '_PARTITION' is reserved. "
        "assetlake writes _partition, is_current, valid_from, valid_to itself; rename or drop it.",
        id="reserved-uppercase",
    ),
    pytest.param(
        "-- materialize delta://a/t append\n\nSELECT id, valid_from FROM raw.o",
        "f.sql:3:12: column 'valid_from' is reserved. "
        "assetlake writes _partition, is_current, valid_from, valid_to itself; rename or drop it.",
        id="reserved-valid-from",
    ),
    pytest.param(
        "-- materialize delta://a/t\n\nSELECT id,\n  o.Id\nFROM raw.o",
        "f.sql:4:5: column 'Id' is projected twice. "
        "The first is on line 3; Delta column names are case-insensitive, alias one.",
        id="duplicate-column",
    ),
    pytest.param(
        "-- materialize delta://a/t\n-- $min_amount (float)\n\nSELECT id FROM raw.o WHERE a > :min_amont",
        "f.sql:4:32: parameter ':min_amont' is not declared. Did you mean ':min_amount'?",
        id="undeclared-typo",
    ),
    pytest.param(
        "-- materialize delta://a/t\n\nSELECT id FROM raw.o WHERE d = :day",
        "f.sql:3:32: parameter ':day' is not declared. Declare it in the header: '-- $day (<type>)'.",
        id="undeclared",
    ),
    pytest.param(
        "-- materialize delta://a/t\n-- $day (date) = tomorrow\n\nSELECT id FROM raw.o WHERE d = :day",
        "f.sql:2:18: default 'tomorrow' is not a valid date. Write a date as YYYY-MM-DD, e.g. '= 2024-01-31'.",
        id="bad-default-reported-once",
    ),
]


@pytest.mark.parametrize("text, expected", FILE_ERRORS)
def test_file_errors(text, expected):
    assert _parse_errors(text) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("-- materialize delta://a/t key=ID\n\nSELECT id FROM raw.o", id="key-case-insensitive"),
        pytest.param("-- materialize delta://a/t key=id\n\nSELECT * FROM raw.o", id="key-unknown-columns"),
        pytest.param("-- materialize delta://a/t key=x append\n\nSELECT id FROM raw.o", id="append-ignores-key"),
        pytest.param(
            "-- materialize delta://a/t key=id history track=NAME\n\nSELECT id, name FROM raw.o",
            id="history-track-case-insensitive",
        ),
        pytest.param(
            "-- materialize delta://a/t key=id history track=tier\n\nSELECT * FROM raw.o",
            id="history-track-unknown-columns",
        ),
        pytest.param(
            "-- materialize manual delta://a/t\n\nCREATE TABLE IF NOT EXISTS a.t (id INT);\n"
            "INSERT INTO a.t SELECT id, id AS ID, 1 AS _partition FROM raw.o",
            id="manual-skips-column-checks",
        ),
    ],
)
def test_file_without_errors(text):
    spec, diagnostics = parse_file("f.sql", text)
    assert diagnostics == [] and spec is not None


def test_self_reference_is_dropped():
    spec, _ = parse_file("f.sql", "-- materialize delta://a/t append\n-- on delta://a/t\n\nSELECT id FROM a.t JOIN raw.o USING (id)")
    assert [str(u.uri) for u in spec.upstreams] == ["delta://raw/o"]


def test_crlf_and_byte_order_mark():
    text = "\ufeff-- materialize delta://a/t\r\n\r\nSELECT id\r\nFROM raw.o\r\n"
    spec, diagnostics = parse_file("f.sql", text)
    assert diagnostics == []
    assert spec.select == SqlStatement("SELECT id\nFROM raw.o", 3)
    assert spec.code_version == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_every_error_of_a_file_is_reported():
    text = "-- materialize delta://a/t kye=id\n-- kind x\n\nINSERT INTO a.t VALUES (1);\nSELECT 1 AS _partition FROM `c-at`.a.b"
    assert [line.split(": ", 1)[0] for line in _parse_errors(text)] == [
        "f.sql:1:28",
        "f.sql:2:4",
        "f.sql:4:1",
        "f.sql:5:29",
        "f.sql:5:13",
    ]


# -- fixture projects with errors --------------------------------------------------------------


def test_invalid_project_reports_every_file_together(in_projects):
    with pytest.raises(ProjectError) as caught:
        load_project("invalid")
    files = {os.path.join("invalid", f) for f in os.listdir("invalid")}
    by_file = {}
    for diagnostic in caught.value.diagnostics:
        by_file.setdefault(diagnostic.location.path, []).append(diagnostic)
    assert len(caught.value.diagnostics) == 20
    assert set(by_file) == files and all(len(found) == 1 for found in by_file.values())
    assert str(caught.value).endswith("\n20 errors in 20 files.")


@pytest.mark.parametrize(
    "name, expected",
    [
        pytest.param("unknown_option", "1:43: unknown option 'kye=id'. Did you mean 'key='?", id="unknown-option"),
        pytest.param(
            "unknown_annotation", "2:4: unknown annotation 'kind'. Did you mean 'kinds'?", id="unknown-annotation"
        ),
        pytest.param(
            "column_not_selected",
            "2:11: column 'idd' is not among the SELECT's columns. Did you mean 'id'?",
            id="column-not-selected",
        ),
        pytest.param(
            "bad_uri",
            "1:16: table URI 'delta://bad/uri/extra' is not 'delta://<schema>/<table>'. "
            "Use exactly two segments, the schema and the table.",
            id="bad-uri",
        ),
        pytest.param(
            "current_suffix",
            "1:28: table name 'dim_current' ends in '_current', which is reserved. "
            "The suffix names the SCD2 companion view; choose another table name.",
            id="current-suffix",
        ),
        pytest.param(
            "missing_materialize",
            "1:1: no '-- materialize' annotation. "
            "Add '-- materialize delta://<schema>/<table> [append] [key=<c1,c2>]' at the top of the file.",
            id="missing-materialize",
        ),
        pytest.param(
            "two_materialize",
            "2:4: more than one '-- materialize' annotation. The first is on line 1; a file produces exactly one table.",
            id="two-materialize",
        ),
        pytest.param(
            "manual_with_key",
            "1:51: 'key=' applies to merge and history, not to manual. "
            "A manual script writes its own table; remove it or 'manual'.",
            id="manual-with-key",
        ),
        pytest.param(
            "key_not_projected",
            "1:50: key column 'order_id' is not among the SELECT's columns. Did you mean 'ordr_id'?",
            id="key-not-projected",
        ),
        pytest.param(
            "reserved_column",
            "3:19: column '_PARTITION' is reserved. "
            "assetlake writes _partition, is_current, valid_from, valid_to itself; rename or drop it.",
            id="reserved-column",
        ),
        pytest.param(
            "duplicate_column",
            "3:18: column 'ID' is projected twice. "
            "The first is on line 3; Delta column names are case-insensitive, alias one.",
            id="duplicate-column",
        ),
        pytest.param(
            "bad_default", "2:19: default 'ten' is not a valid int. Write a whole number, e.g. '= 10'.", id="bad-default"
        ),
        pytest.param("bad_type", "2:13: unknown argument type 'flaot'. Did you mean 'float'?", id="bad-type"),
        pytest.param(
            "undeclared_parameter",
            "5:16: parameter ':min_amont' is not declared. Did you mean ':min_amount'?",
            id="undeclared-parameter",
        ),
        pytest.param(
            "setup_not_allowed",
            "3:1: DROP TABLE is not allowed in a managed file; the managed write creates and writes the table. "
            "Before the SELECT only SET, RESET, CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
            "use '-- materialize manual' to write tables yourself.",
            id="setup-not-allowed",
        ),
        pytest.param(
            "statement_after_select",
            "4:1: the file must end with one SELECT. 'INSERT' comes after the SELECT on line 3; "
            "the managed write does the writing, so end the file with the SELECT.",
            id="statement-after-select",
        ),
        pytest.param(
            "no_select",
            "3:1: the file must end with one SELECT. "
            "Add the SELECT whose rows become the table; 'SET' cannot end a managed file.",
            id="no-select",
        ),
        pytest.param(
            "syntax_error",
            "6:18: SQL syntax error near 'extra': Invalid expression / Unexpected token. This must be valid Spark SQL.",
            id="syntax-error",
        ),
        pytest.param(
            "path_table",
            "3:16: path-based table reference 'delta.`/data/raw/src`'. Refer to managed tables as 'schema.table' "
            "and declare external ones with '-- on delta://<schema>/<table>'.",
            id="path-table",
        ),
        pytest.param(
            "not_utf8", "3:8: the file is not valid UTF-8 (byte 0xff). Save it as UTF-8.", id="not-utf8"
        ),
    ],
)
def test_invalid_project_message_per_file(in_projects, name, expected):
    with pytest.raises(ProjectError) as caught:
        load_project("invalid")
    path = os.path.join("invalid", f"{name}.sql")
    assert [line for line in _first_lines(caught.value) if line.startswith(path + ":")] == [f"{path}:{expected}"]


def test_cycle(in_projects):
    with pytest.raises(ProjectError) as caught:
        load_project("cycle")
    assert [d.render() for d in caught.value.diagnostics] == [
        "cycle/a.sql:3:16: dependency cycle: delta://cyc/a reads delta://cyc/c, which reads delta://cyc/b, "
        "which reads delta://cyc/a. Assets must form a DAG; remove one of these reads.\n"
        "  SELECT id FROM cyc.c\n"
        "                 ^^^^^"
    ]


def test_duplicate_target_points_at_each_other(in_projects):
    with pytest.raises(ProjectError) as caught:
        load_project("duplicate_target")
    a, b = os.path.join("duplicate_target", "a", "orders.sql"), os.path.join("duplicate_target", "b", "orders.sql")
    hint = "A table has exactly one producing file; retarget or remove one '-- materialize' line."
    assert _first_lines(caught.value) == [
        f"{a}:1:16: delta://dup/orders is also materialized by {b}:1. {hint}",
        f"{b}:1:16: delta://dup/Orders is also materialized by {a}:1. {hint}",
    ]


# -- folders built in tmp_path -----------------------------------------------------------------


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_errors_of_all_files_in_one_raise(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(
        tmp_path,
        {
            "a.sql": "-- materialize delta://s/a apend\n\nSELECT 1 AS x",
            "sub/b.sql": "-- materialize delta://s/b\n\nDROP TABLE s.x;\nSELECT id FROM s.a",
            "sub/c.sql": "-- materialize delta://s/a\n\nSELECT id FROM s.b",
            "ok.sql": "-- materialize delta://s/ok\n\nSELECT id FROM s.b",
        },
    )
    with pytest.raises(ProjectError) as caught:
        load_project(tmp_path)
    assert [line.split(": ", 1)[0] for line in _first_lines(caught.value)] == [
        "a.sql:1:16",  # also materialized by sub/c.sql: an option typo leaves the target known
        "a.sql:1:28",  # unknown option
        os.path.join("sub", "b.sql") + ":3:1",  # DROP TABLE
        os.path.join("sub", "c.sql") + ":1:16",  # also materialized by a.sql
    ]
    assert str(caught.value).endswith("\n4 errors in 3 files.")


def test_discovery_is_recursive_sorted_and_skips_hidden(tmp_path):
    _write(
        tmp_path,
        {"b.sql": "", "a/z.sql": "", "a/b/y.sql": "", ".hidden/x.sql": "", "notes.txt": "", "c.SQL.bak": ""},
    )
    assert [os.path.relpath(p, tmp_path) for p in discover_sql_files(str(tmp_path))] == [
        os.path.join("a", "b", "y.sql"),
        os.path.join("a", "z.sql"),
        "b.sql",
    ]


def test_table_names_match_producers_case_insensitively(tmp_path):
    _write(
        tmp_path,
        {
            "orders.sql": "-- materialize delta://analytics/orders\n\nSELECT id FROM raw.src",
            "report.sql": "-- materialize delta://analytics/report\n\nSELECT id FROM Analytics.Orders JOIN raw.SRC USING (id)",
        },
    )
    project = load_project(tmp_path)
    report = project.by_uri()[TableUri("analytics", "report")]
    # the producer's spelling; for an external table, the first file's (orders.sql reads raw.src)
    assert [str(u.uri) for u in report.upstreams] == ["delta://analytics/orders", "delta://raw/src"]
    assert project.external == (TableUri("raw", "src"),)


def test_empty_folder_is_an_empty_project(tmp_path):
    project = load_project(tmp_path)
    assert (project.assets, project.external, project.by_uri()) == ((), (), {})


def test_missing_folder(tmp_path):
    with pytest.raises(ConfigError, match="does not exist or is not a folder"):
        load_project(tmp_path / "nope")


@pytest.mark.parametrize(
    "body, first_line",
    [
        pytest.param(
            "SELECT `Order Id` AS `Order Id` FROM raw.t",
            "f.sql:3:22: column name 'Order Id' is not a plain identifier. "
            "Alias it with letters, digits and '_' only, e.g. AS order_id.",
            id="non-identifier-output-column",
        ),
        pytest.param(
            "CREATE TEMPORARY VIEW v USING parquet OPTIONS (path '/etc');\nSELECT a FROM v",
            "f.sql:3:1: CREATE TEMPORARY VIEW is not allowed in a managed file; "
            "the managed write creates and writes the table. Before the SELECT only SET, RESET, "
            "CREATE TEMP VIEW, CACHE TABLE and UNCACHE TABLE may run; "
            "use '-- materialize manual' to write tables yourself.",
            id="file-backed-temp-view",
        ),
    ],
)
def test_lake_escapes_are_load_errors(body, first_line):
    spec, problems = parse_file("f.sql", f"-- materialize delta://a/b\n\n{body}\n")
    assert spec is None
    assert [p.render().splitlines()[0] for p in problems] == [first_line]


def test_statements_record_their_parameter_markers():
    text = "-- materialize delta://a/b\n-- $x (int)\n-- $y (string)\n\nSELECT :x AS a, ':y' AS b, :y AS c"
    spec, problems = parse_file("f.sql", text)
    assert problems == []
    assert spec.select.parameters == ("x", "y")


def test_a_sql_name_that_is_not_a_regular_file_is_a_load_error_not_a_hang(tmp_path, monkeypatch):
    """A named pipe called ``*.sql`` would block a plain read for ever (seen in fuzzing)."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, {"ok.sql": "-- materialize delta://s/ok\n\nSELECT 1 AS x"})
    os.mkfifo(tmp_path / "pipe.sql")
    with pytest.raises(ProjectError) as caught:
        load_project(tmp_path)
    assert _first_lines(caught.value)[:1] == [
        "pipe.sql:1:1: the file is not a regular file (a named pipe), so it cannot be read as SQL. "
        "Replace it with a regular file, or rename it so that its name does not end in .sql."
    ]


def test_the_description_shows_the_sql_as_written_with_its_placeholders():
    from assetlake_dagster.project.load import parse_file
    from assetlake_dagster.defs.translator import AssetlakeTranslator

    text = (
        "-- materialize delta://s/t\n-- partitioned daily start=2024-01-01\n\n"
        "SELECT id FROM raw.x\nWHERE d = '{partition}' AND t < {partition_end}\n"
    )
    spec, problems = parse_file("t.sql", text)
    assert spec is not None, problems
    assert ":partition" in spec.select.sql  # what Spark runs: bound markers
    description = AssetlakeTranslator().get_description(spec)
    assert description.endswith("```sql\nSELECT id FROM raw.x\nWHERE d = '{partition}' AND t < {partition_end}\n```")
