"""`-- cluster_by`, `-- properties` and `-- maintain`: valid lines, and the exact located
error of each mistake, in the header and against the SQL."""

import pytest

from assetlake_dagster.project.load import parse_file
from assetlake_dagster.spec import ClusterColumn, LayoutSpec, MaintainSpec
from assetlake_dagster_tests.helpers import header_errors, parsed_header

PROPERTIES_FORM = "'-- properties <key>=<value> [<key>=\"<value with spaces>\"] …'"


def test_valid_layout_lines():
    header = parsed_header(
        "-- cluster_by customer_id, order_date\n"
        '-- properties delta.enableChangeDataFeed=true delta.logRetentionDuration="interval 60 days"\n'
        "-- properties team.owner=data-eng"
    )
    assert LayoutSpec(header.fields["layout.cluster_by"], header.fields["layout.properties"]) == LayoutSpec(
        (ClusterColumn("customer_id"), ClusterColumn("order_date")),
        (
            ("delta.enableChangeDataFeed", "true"),
            ("delta.logRetentionDuration", "interval 60 days"),
            ("team.owner", "data-eng"),
        ),
    )
    column = header.fields["layout.cluster_by"][1]
    assert (column.location.line, column.location.col) == (2, 28)


@pytest.mark.parametrize(
    "lines, expected",
    [
        ("-- cluster_by a,,b", "f.sql:2:17: empty column in the list. Write '-- cluster_by <column>[,<column>…]'."),
        ("-- cluster_by a,A", "f.sql:2:17: column 'A' is listed twice. Remove the repeated column."),
        ("-- cluster_by a,b,c,d,e", "f.sql:2:23: Delta clusters by at most 4 columns, got 5. Keep the columns that most queries filter on."),
        ("-- cluster_by 1x", "f.sql:2:15: '1x' is not an allowed column name. Use letters, digits and underscores, not starting with a digit."),
        ("-- cluster_by a\n-- cluster_by b", "f.sql:3:4: cluster_by is already set on line 2. A table has one set of clustering columns; keep one '-- cluster_by' line."),
        ("-- cluster_by", "f.sql:2:4: '-- cluster_by' needs a value. Write '-- cluster_by <column>[,<column>…]'."),
        ("-- properties delta.enableChangeDataFeeed=true", "f.sql:2:15: unknown Delta table property 'delta.enableChangeDataFeeed'. Did you mean 'delta.enableChangeDataFeed'?"),
        ("-- properties delta.enablechangedatafeed=true", "f.sql:2:15: Delta spells this property 'delta.enableChangeDataFeed'. Write 'delta.enableChangeDataFeed=true'."),
        ("-- properties delta.checkpointInterval=0", "f.sql:2:40: '0' is not a value of delta.checkpointInterval. Write a whole number above 0."),
        ("-- properties delta.appendOnly=yes", "f.sql:2:32: 'yes' is not a value of delta.appendOnly. Write 'true' or 'false'."),
        ('-- properties delta.logRetentionDuration="60 days"', "f.sql:2:42: '60 days' is not a value of delta.logRetentionDuration. Write an interval such as \"interval 30 days\"."),
        ('-- properties note="open', "f.sql:2:20: the value has no closing '\"'. Write a value with spaces in double quotes: \"interval 30 days\"."),
        ("-- properties foo", f"f.sql:2:15: 'foo' is not a <key>=<value> property. Write {PROPERTIES_FORM}."),
        ("-- properties a=1\n-- properties a=2", "f.sql:3:15: property 'a' is already set on line 2. Keep one value per property."),
        ("-- properties", f"f.sql:2:4: '-- properties' needs a value. Write {PROPERTIES_FORM}."),
    ],
)
def test_layout_line_errors(lines, expected):
    assert header_errors(lines) == [expected]


def errors_against_sql(text):
    _, problems = parse_file("/p/f.sql", text)
    return [p.render().splitlines()[0] for p in problems]


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "-- materialize delta://a/t key=id\n-- cluster_by id, nme\nSELECT 1 AS id, 'x' AS name\n",
            "/p/f.sql:2:19: cluster_by column 'nme' is not among the SELECT's columns. Did you mean 'name'?",
        ),
        (
            "-- materialize delta://a/t\n-- partitioned daily start=2024-01-01\n-- cluster_by id\nSELECT 1 AS id\n",
            "/p/f.sql:3:4: '-- cluster_by' does not combine with '-- partitioned' (line 2): Delta cannot both "
            "partition and cluster a table. Remove one of the two lines: a partitioned table is laid out by its partitions.",
        ),
        (
            "-- materialize delta://a/t key=id\n-- properties delta.appendOnly=true\nSELECT 1 AS id\n",
            "/p/f.sql:2:4: delta.appendOnly=true forbids the updates and deletes a merge write makes. "
            "Drop the property, or write with 'append'.",
        ),
        (
            "-- materialize manual delta://a/t\n-- cluster_by id\nCREATE TABLE x AS SELECT 1\n",
            "/p/f.sql:2:4: a manual file cannot declare '-- cluster_by'. assetlake does not write a manual table, "
            "so it cannot lay it out; use a managed strategy.",
        ),
    ],
)
def test_layout_errors_against_the_sql(text, expected):
    assert errors_against_sql(text) == [expected]


def test_an_append_only_table_may_be_appended_to():
    assert errors_against_sql("-- materialize delta://a/t append\n-- properties delta.appendOnly=true\nSELECT 1 AS id\n") == []


@pytest.mark.parametrize(
    "line, expected",
    [
        ("-- maintain 0 3 * * 0 vacuum=30d", MaintainSpec("0 3 * * 0", None, vacuum=True, retain_hours=720)),
        ("-- maintain @daily tz=Europe/Berlin vacuum=window", MaintainSpec("@daily", "Europe/Berlin", vacuum=True)),
        ("-- maintain @weekly", MaintainSpec("@weekly")),
        ("-- maintain 0 1 * * * vacuum=36h", MaintainSpec("0 1 * * *", vacuum=True, retain_hours=36)),
    ],
)
def test_maintain_line(line, expected):
    assert parsed_header(line).fields["maintain"] == expected


VACUUM_HINT = (
    "Write 'vacuum=<n>h' or 'vacuum=<n>d' (hours or days to keep), or 'vacuum=window' for the table's restore window."
)


@pytest.mark.parametrize(
    "lines, expected",
    [
        (
            "-- maintain",
            "f.sql:2:4: '-- maintain' needs a cron schedule. Write '-- maintain <cron> [tz=<zone>] "
            "[vacuum=<duration>|vacuum=window]', e.g. '0 2 * * *' for 02:00 every day.",
        ),
        ("-- maintain @daily vacuum=3x", f"f.sql:2:27: '3x' is not a retention. {VACUUM_HINT}"),
        ("-- maintain @daily vacuum=", f"f.sql:2:20: 'vacuum=' needs a retention. {VACUUM_HINT}"),
        ("-- maintain @daily vacuum=0h", f"f.sql:2:27: 'vacuum=0h' keeps nothing. {VACUUM_HINT}"),
        ("-- maintain @daily vacuum=1d vacuum=2d", "f.sql:2:30: option 'vacuum=' is given twice. Keep one 'vacuum='."),
        (
            "-- maintain @daily\n-- maintain @weekly",
            "f.sql:3:4: maintenance is already set on line 2. A table has one maintenance schedule; keep one '-- maintain' line.",
        ),
    ],
)
def test_maintain_line_errors(lines, expected):
    assert header_errors(lines) == [expected]
