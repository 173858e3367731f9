"""``-- publish_with <group>``: what the line parses to, the located error of each misuse (in one
file and across the group's files), and the order a group's members commit in. Its runs are
dagster/test_publish_groups.py's."""

import pytest

from assetlake_dagster.errors import SourceText
from assetlake_dagster.project.dag import check_project, publish_groups
from assetlake_dagster.project.load import parse_file
from assetlake_dagster.spec import PublishGroupSpec


def problems(text: str) -> list[str]:
    _, found = parse_file("/p/a.sql", text)
    return [p.render().splitlines()[0] for p in found]


def project_problems(files: dict[str, str]) -> list[str]:
    specs, sources = [], {}
    for name, text in files.items():
        spec, found = parse_file(f"/p/{name}", text)
        assert found == [], [p.render() for p in found]
        specs.append(spec)
        sources[spec.path] = SourceText.of(spec.path, text)
    _, _, found = check_project(specs, sources)
    return [p.render().splitlines()[0] for p in found]


def test_the_line_names_the_group():
    spec, found = parse_file("/p/a.sql", "-- materialize delta://m/a\n-- publish_with daily_sales\n\nSELECT 1 AS id\n")
    assert found == []
    assert spec.publish_with == PublishGroupSpec("daily_sales")
    assert (spec.publish_with.location.line, spec.publish_with.location.col) == (2, 4)


@pytest.mark.parametrize(
    "line, expected",
    [
        pytest.param("-- publish_with\n", "/p/a.sql:2:4: '-- publish_with' needs a value. Write '-- publish_with <group>'.", id="empty"),
        pytest.param("-- publish_with daily-sales\n", "/p/a.sql:2:17: 'daily-sales' is not a publish group name. Name the "
                     "group with letters, digits and '_' (at most 63, not starting with a digit), e.g. '-- publish_with "
                     "daily_sales'.", id="name"),
        pytest.param("-- publish_with a b\n", "/p/a.sql:2:19: '-- publish_with' names one group. A table is published with "
                     "one group; keep one name.", id="two-names"),
        pytest.param("-- publish_with a\n-- publish_with b\n", "/p/a.sql:3:4: the publish group is already set on line 2. "
                     "A table is published with one group; keep one '-- publish_with' line.", id="twice"),
        pytest.param("-- publish_wth a\n", "/p/a.sql:2:4: unknown annotation 'publish_wth'. Did you mean 'publish_with'?",
                     id="typo"),
    ],
)
def test_a_bad_line_is_a_located_error(line, expected):
    assert problems("-- materialize delta://m/a\n" + line + "\nSELECT 1 AS id\n") == [expected]


def test_a_manual_file_or_a_view_cannot_join_a_group():
    assert problems("-- materialize manual delta://m/a\n-- publish_with g\n\nCREATE TABLE m.a AS SELECT 1 AS id\n") == [
        "/p/a.sql:2:4: a manual file cannot be published with a group. Its statements commit by themselves, so nothing "
        "can hold them back; use a managed strategy."
    ]
    assert problems("-- materialize view delta://m/a\n-- publish_with g\n\nSELECT id FROM raw.x\n") == [
        "/p/a.sql:2:4: a view cannot declare '-- publish_with': a view has no commit to publish. Remove it, or drop "
        "'view' to write a table."
    ]


A = "-- materialize delta://m/a\n-- publish_with g\n"
B = "-- materialize delta://m/b\n-- publish_with g\n"


def test_members_commit_after_the_members_they_read():
    files = {"c.sql": "-- materialize delta://m/c\n-- publish_with g\n\nSELECT id FROM m.b\n",
             "b.sql": B + "\nSELECT id FROM m.a\n", "a.sql": A + "\nSELECT id FROM raw.x\n"}
    assert project_problems(files) == []
    specs = [parse_file(f"/p/{n}", t)[0] for n, t in files.items()]
    assert [str(s.uri) for s in publish_groups(specs)["g"]] == ["delta://m/a", "delta://m/b", "delta://m/c"]


def test_a_group_of_one_is_an_error():
    assert project_problems({"a.sql": A + "\nSELECT 1 AS id\n"}) == [
        "/p/a.sql:2:4: publish group 'g' has no other member. Add '-- publish_with g' to the files to publish with "
        "this one, or remove the line."
    ]


def test_members_are_partitioned_alike():
    daily = "-- partitioned daily start=2024-01-01\n"
    found = project_problems({"a.sql": A + daily + "\nSELECT 1 AS id\n", "b.sql": B + "\nSELECT 2 AS id\n"})
    assert found == [
        "/p/b.sql:2:4: publish group 'g' mixes partitions: delta://m/b is not partitioned, delta://m/a (/p/a.sql:1) is "
        "partitioned daily from 2024-01-01. A group's tables commit in one run, slice by slice: give them the same "
        "'-- partitioned' line."
    ]
    assert project_problems({"a.sql": A + daily + "\nSELECT 1 AS id\n", "b.sql": B + daily + "\nSELECT 2 AS id\n"}) == []


def test_a_member_cannot_read_a_history_member_or_read_one_by_new_rows():
    history = "-- materialize delta://m/a key=id history\n-- publish_with g\n\nSELECT id, v FROM raw.x\n"
    assert project_problems({"a.sql": history, "b.sql": B + "\nSELECT id FROM m.a\n"}) == [
        "/p/b.sql:2:4: delta://m/b reads delta://m/a, a history table of its own publish group 'g'. A member reads the "
        "others' rows as staged, which a history table's versions are not; publish one of them outside the group."
    ]
    new_rows = "-- materialize delta://m/b append new_rows\n-- publish_with g\n\nSELECT id FROM m.a\n"
    assert project_problems({"a.sql": A + "\nSELECT id FROM raw.x\n", "b.sql": new_rows}) == [
        "/p/b.sql:2:4: 'append new_rows' reads delta://m/a's new commits, which its publish group 'g' has not made yet. "
        "Remove 'new_rows' (the member then reads the staged table), or publish it outside the group."
    ]


def test_a_member_takes_no_argument():
    assert project_problems({"a.sql": A + "-- $day (date) = 2024-01-01\n\nSELECT :day AS d\n", "b.sql": B + "\nSELECT 1 AS id\n"}) == [
        "/p/a.sql:3:4: '$day' cannot be given to a member of publish group 'g': the group runs as one step, which "
        "takes no file's run config. Write the value into the SQL, or publish this file outside the group."
    ]


def test_the_plan_says_the_table_is_published_with_its_group():
    from assetlake_dagster.cli.planning import render_plan
    from assetlake_dagster.lake.root import Lake

    spec, _ = parse_file("/p/a.sql", A + "\nSELECT 1 AS id\n")
    assert (
        "publish     with group 'g': staged and audited with the group's other tables, committed only if every one "
        "passes, in dependency order (a failed commit restores the earlier ones)"
    ) in render_plan(spec, Lake("/lake")).splitlines()
