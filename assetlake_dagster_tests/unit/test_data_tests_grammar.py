"""Layer 1-2: `-- data_test` lines, their load errors, custom test files and references."""

import os

import pytest

from assetlake_dagster.annotations import parse_header
from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.errors import ProjectError, SourceText
from assetlake_dagster.project.load import load_project
from assetlake_dagster.spec import DataTestKind, DataTestSpec, TableUri
from assetlake_dagster_tests.helpers import PROJECTS

M = "-- materialize delta://a/t\n"
AUDITED = os.path.join(PROJECTS, "audited")


def _tests(line):
    header, problems = parse_header(SourceText.of("f.sql", M + line + "\n"))
    assert [p.render() for p in problems] == []
    return header.data_tests


def _errors(text):
    _, problems = parse_header(SourceText.of("f.sql", text))
    return [p.render().splitlines()[0] for p in problems]


@pytest.mark.parametrize(
    "line, expected",
    [
        pytest.param("-- data_test unique id", DataTestSpec(DataTestKind.UNIQUE, ("id",)), id="unique"),
        pytest.param("-- data_test unique id,day", DataTestSpec(DataTestKind.UNIQUE, ("id", "day")), id="unique-composite"),
        pytest.param(
            "-- data_test not_null email warn", DataTestSpec(DataTestKind.NOT_NULL, ("email",), blocking=False), id="warn"
        ),
        pytest.param(
            "-- data_test accepted_values status = paid, 'pending' ,refunded",
            DataTestSpec(DataTestKind.ACCEPTED_VALUES, ("status",), values=("paid", "pending", "refunded")),
            id="accepted-values",
        ),
        pytest.param(
            "-- data_test relationships customer_id -> delta://analytics/customers.id",
            DataTestSpec(DataTestKind.RELATIONSHIPS, ("customer_id",), ref_uri=TableUri("analytics", "customers"), ref_column="id"),
            id="relationships",
        ),
        pytest.param(
            "-- data_test tests/no_negative.sql warn",
            DataTestSpec(DataTestKind.CUSTOM, path="tests/no_negative.sql", blocking=False),
            id="custom",
        ),
    ],
)
def test_valid_data_test_lines(line, expected):
    assert _tests(line) == (expected,)


def test_several_lines_accumulate_with_distinct_check_names():
    tests = _tests("-- data_test unique id\n-- data_test not_null id\n-- data_test tests/x.sql")
    assert [t.name for t in tests] == ["unique_id", "not_null_id", "custom_x"]


@pytest.mark.parametrize(
    "line, expected",
    [
        pytest.param("-- data_test", "f.sql:2:4: '-- data_test' needs a test.", id="empty"),
        pytest.param("-- data_test uniqe id", "f.sql:2:14: unknown data test 'uniqe'. Did you mean 'unique'?", id="typo"),
        pytest.param("-- data_test not_null", "f.sql:2:14: 'not_null' needs a column.", id="no-column"),
        pytest.param("-- data_test not_null a b", "f.sql:2:25: unexpected 'b'.", id="extra-word"),
        pytest.param("-- data_test unique 1x", "f.sql:2:21: column '1x' is not an allowed identifier.", id="bad-column"),
        pytest.param(
            "-- data_test accepted_values status", "f.sql:2:30: accepted_values needs '= a,b,c'.", id="no-values"
        ),
        pytest.param(
            "-- data_test accepted_values status = a,,b", "f.sql:2:41: empty value in the list.", id="empty-value"
        ),
        pytest.param(
            "-- data_test relationships c -> delta://a/b",
            "f.sql:2:30: relationships needs '-> delta://<schema>/<table>.<column>'.",
            id="no-ref-column",
        ),
        pytest.param(
            "-- data_test relationships c delta://a/b.c",
            "f.sql:2:30: relationships needs '-> delta://<schema>/<table>.<column>'.",
            id="no-arrow",
        ),
        pytest.param("-- data_test tests/x.sql now", "f.sql:2:26: unexpected 'now' after the test file.", id="custom-extra"),
    ],
)
def test_malformed_data_test_lines_are_load_errors(line, expected):
    errors = _errors(M + line + "\n")
    assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_a_repeated_test_is_an_error():
    assert _errors(M + "-- data_test unique id\n-- data_test unique id warn\n") == [
        "f.sql:3:14: data test 'unique_id' is declared twice. Remove the repeated line."
    ]


def _project(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(tmp_path)


def _load_errors(root):
    with pytest.raises(ProjectError) as caught:
        load_project(root)
    return [d.render().splitlines()[0].replace(root + os.sep, "") for d in caught.value.diagnostics]


def test_unknown_columns_missing_files_and_manual_tests_are_load_errors(tmp_path):
    root = _project(
        tmp_path,
        {
            "a.sql": M + "-- data_test not_null emial\n-- data_test tests/missing.sql\n\nSELECT id, email FROM raw.x\n",
            "b.sql": "-- materialize delta://a/b\n-- data_test ../outside.sql\n\nSELECT id FROM raw.x\n",
            "c.sql": "-- materialize manual delta://a/c\n-- data_test unique id\n\nSELECT 1 AS id\n",
            "d.sql": "-- materialize delta://a/d\n-- data_test tests/two.sql\n\nSELECT id FROM raw.x\n",
            "tests/two.sql": "SET x = 1;\nSELECT * FROM {this}\n",
        },
    )
    assert _load_errors(root) == [
        "a.sql:2:23: data test column 'emial' is not among the SELECT's columns. Did you mean 'email'?",
        "a.sql:3:14: test file 'tests/missing.sql' does not exist. "
        "Create tests/missing.sql with a SELECT returning the failing rows.",
        "b.sql:2:14: test file '../outside.sql' is outside the project folder. "
        "Keep custom tests inside the project, e.g. 'tests/<name>.sql'.",
        "c.sql:2:21: a manual file cannot have data tests. assetlake does not write a manual table, so it cannot "
        "audit it; use a managed strategy.",
        "tests/two.sql:1:1: a custom test is exactly one SELECT returning the failing rows. "
        "Write e.g. 'SELECT * FROM {this} WHERE amount < 0'.",
    ]


def test_custom_test_files_are_tests_not_assets():
    project = load_project(AUDITED)
    assert sorted(str(s.uri) for s in project.assets) == [
        "delta://mart/daily_orders",
        "delta://mart/dim_customer",
        "delta://mart/order_totals",
        "delta://mart/orders",
    ]
    (custom,) = [t for s in project.assets for t in s.data_tests if t.name == "custom_no_negative_amounts"]
    assert custom.query.sql.startswith("SELECT order_id, amount FROM __this") and custom.query.parameters == ()
    (day,) = [t for s in project.assets for t in s.data_tests if t.name == "custom_day_matches"]
    assert day.query.parameters == ("partition",)


def test_relationships_must_name_an_asset(tmp_path):
    root = _project(
        tmp_path, {"a.sql": M + "-- data_test relationships id -> delta://m/nope.id\n\nSELECT id FROM raw.x\n"}
    )
    with pytest.raises(ProjectError, match="data test references delta://m/nope, which is no asset of this project"):
        build_definitions(root, lake_root=str(tmp_path / "lake"))


@pytest.mark.parametrize(
    "values, expected",
    [
        pytest.param("it's, a\\' OR 1=1 --", ("it's", "a\\' OR 1=1 --"), id="quote-inside-a-bare-value"),
        pytest.param("\"it's\", 'say \"hi\"'", ("it's", 'say "hi"'), id="other-quote-inside-quotes"),
        pytest.param("two words, ' padded '", ("two words", " padded "), id="spaces"),
        pytest.param("a, 'warn'", ("a", "warn"), id="the-value-warn-quoted"),
    ],
)
def test_accepted_values_keep_quotes_and_spaces_as_written(values, expected):
    """Values are split on commas; a bare value keeps its inner quotes and spaces, and one
    value in matching quotes ('...' or "...") loses them (and keeps its outer spaces)."""
    assert _tests(f"-- data_test accepted_values status = {values}")[0].values == expected


def test_a_quoted_accepted_value_may_contain_a_comma_and_its_own_quote_doubled():
    assert _tests("-- data_test accepted_values status = 'a,b', c")[0].values == ("a,b", "c")
    assert _tests("-- data_test accepted_values status = 'it''s', \"say \"\"hi\"\"\"")[0].values == ("it's", 'say "hi"')


@pytest.mark.parametrize(
    "values, expected",
    [
        pytest.param("'a,b", "f.sql:2:39: unterminated quote in the value list. Close it with ', or double it inside the value ('').", id="unterminated"),
        pytest.param("'a' b, c", "f.sql:2:43: unexpected text after a quoted value. Separate values with commas.", id="text-after-quote"),
        pytest.param("a,", "f.sql:2:41: empty value in the list. Write '-- data_test accepted_values <column> = a,b,c'.", id="trailing-comma"),
        pytest.param("a, '', b", "f.sql:2:42: empty value in the list. Write '-- data_test accepted_values <column> = a,b,c'.", id="empty-quoted"),
    ],
)
def test_a_malformed_value_list_is_located(values, expected):
    assert _errors(M + f"-- data_test accepted_values status = {values}\n") == [expected]
