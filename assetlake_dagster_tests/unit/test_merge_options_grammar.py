"""The merge options of the materialize line (`update=`, `keep=`, `within="…"`): what they
parse to, the exact located error of each mistake, `managed_write`'s same checks, and the
MERGE the plan shows."""

import re

import pytest

from assetlake_dagster import managed_write
from assetlake_dagster.project.load import parse_file
from assetlake_dagster.spec import MaterializeSpec, MergeOptions, TableUri, WriteStrategy
from assetlake_dagster.sql.target_predicate import TargetPredicate
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

SELECT = "SELECT 1 AS id, current_date() AS order_date, 'x' AS v, 2 AS n"
MERGE_FORM = (
    '-- materialize delta://<schema>/<table> key=<c1,c2> [update=<c1,c2> | keep=<c1,c2>] [within="<predicate>"] '
    "[deletes=delete]"
)
WITHIN_HINT = 'Write one condition on the table\'s columns, e.g. within="order_date >= date_sub(current_date(), 7)".'


def parse(line, select=SELECT):
    spec, problems = parse_file("/p/f.sql", f"{line}\n{select}\n")
    return spec, [p.render().splitlines()[0].removeprefix("/p/") for p in problems]


def test_the_options_reach_the_spec():
    spec, problems = parse('-- materialize delta://s/t key=id keep=n within="order_date >= date_sub(current_date(), 7)"')
    assert problems == []
    assert spec.materialize.merge == MergeOptions(keep=("n",), within="order_date >= date_sub(current_date(), 7)")
    # The IO manager reads the contract back from the asset's metadata.
    assert MaterializeSpec.from_metadata(spec.materialize.to_metadata()) == spec.materialize
    spec, _ = parse("-- materialize delta://s/t key=id update=v,N")
    assert spec.materialize.merge == MergeOptions(update=("v", "N"))
    spec, _ = parse("-- materialize delta://s/t key=id")
    assert not spec.materialize.merge


@pytest.mark.parametrize(
    "line, expected",
    [
        ("-- materialize delta://s/t key=id update=v keep=n",
         "f.sql:1:44: 'update=' and 'keep=' cannot both be given. Name the columns a match updates (update=) or the ones it keeps (keep=), not both."),
        ("-- materialize delta://s/t key=id keep=id",
         "f.sql:1:40: keep column 'id' is a key column. A match is found by the key, which never changes; name only non-key columns."),
        ("-- materialize delta://s/t update=v",
         "f.sql:1:28: 'update=' applies to merge, not to replace. It is a merge option: give 'key=<c1,c2>' without 'append' or 'history', or remove it."),
        ("-- materialize delta://s/t append key=id keep=v",
         "f.sql:1:42: 'keep=' applies to merge, not to append. It is a merge option: give 'key=<c1,c2>' without 'append' or 'history', or remove it."),
        ("-- materialize delta://s/t key=id history update=v",
         "f.sql:1:43: 'update=' applies to merge, not to history. It is a merge option: give 'key=<c1,c2>' without 'append' or 'history', or remove it."),
        ("-- materialize manual delta://s/t keep=v",
         "f.sql:1:35: 'keep=' applies to merge, not to manual. A manual script writes its own table; remove it or 'manual'."),
        ("-- materialize delta://s/t key=id merge_exclude_columns=v",
         f"f.sql:1:35: unknown option 'merge_exclude_columns='. Write 'keep=' (the same thing here): {MERGE_FORM}."),
        ('-- materialize delta://s/t key=id incremental_predicates="n > 1"',
         f"f.sql:1:35: unknown option 'incremental_predicates='. Write 'within=' (the same thing here): {MERGE_FORM}."),
        ('-- materialize delta://s/t key=id within="n > 1',
         "f.sql:1:35: the within= predicate has no closing '\"'. Write within=\"<predicate>\", e.g. within=\"order_date >= date_sub(current_date(), 7)\"."),
        ('-- materialize delta://s/t key=id within="n > (SELECT max(n) FROM s.t)"',
         f"f.sql:1:35: within= predicate 'n > (SELECT max(n) FROM s.t)': it holds a subquery; a merge's bound reads the table's own columns only. {WITHIN_HINT}"),
        ('-- materialize delta://s/t key=id within="n > :since"',
         f"f.sql:1:35: within= predicate 'n > :since': it holds a parameter marker; write the value, or compute it with a function such as current_date(). {WITHIN_HINT}"),
        ('-- materialize delta://s/t key=id within="t.n > 1"',
         f"f.sql:1:35: within= predicate 't.n > 1': column 't.n' names a table; write the table's column name alone. {WITHIN_HINT}"),
        ('-- materialize delta://s/t key=id within="1 = 1"',
         f"f.sql:1:35: within= predicate '1 = 1': it reads no column of the table, so it bounds nothing. {WITHIN_HINT}"),
        ("-- materialize delta://s/t key=id within=n>max(n)",
         f"f.sql:1:35: within= predicate 'n>max(n)': it holds an aggregate (MAX(n)); a bound is tested row by row. {WITHIN_HINT}"),
    ],
)
def test_option_errors(line, expected):
    _, problems = parse(line)
    assert problems == [expected]


@pytest.mark.parametrize(
    "line, expected",
    [
        ("-- materialize delta://s/t key=id update=v,nme",
         "f.sql:1:44: update column 'nme' is not among the SELECT's columns. The SELECT projects: id, order_date, v, n."),
        ('-- materialize delta://s/t key=id keep=v within="ordr_date >= current_date()"',
         "f.sql:1:50: within column 'ordr_date' is not among the SELECT's columns. Did you mean 'order_date'?"),
    ],
)
def test_option_columns_are_checked_against_the_select(line, expected):
    _, problems = parse(line)
    assert problems == [expected]


def test_within_keeps_the_users_text_and_qualifies_its_columns():
    predicate = TargetPredicate.parse("order_date >= date_sub(current_date(), 7) AND `odd name` IS NOT NULL")
    assert predicate.columns == ("order_date", "odd name")
    assert predicate.qualified("t") == "(t.order_date >= date_sub(current_date(), 7) AND t.`odd name` IS NOT NULL)"
    with pytest.raises(ValueError, match="not one SQL expression"):
        TargetPredicate.parse("n > 1; DROP TABLE s.t")


def test_managed_write_takes_the_same_options_with_the_same_checks():
    meta = managed_write("merge", key=["id"], keep=["created_at"], within="day >= '2024-01-01'")
    spec = MaterializeSpec.from_metadata(meta, TableUri("s", "t"))
    assert spec.merge == MergeOptions(keep=("created_at",), within="day >= '2024-01-01'")
    assert "merge" not in managed_write("merge", key=["id"])["assetlake/write"]
    with pytest.raises(ValueError, match=re.escape("'keep=' applies to merge, not to append.")):
        managed_write("append", keep=["x"])
    with pytest.raises(ValueError, match=re.escape("'update=' and 'keep=' cannot both be given.")):
        managed_write("merge", key=["id"], update=["a"], keep=["b"])
    with pytest.raises(ValueError, match=re.escape("update column 'id' is a key column.")):
        managed_write("merge", key=["id"], update=["id"])
    with pytest.raises(ValueError, match="holds a subquery"):
        managed_write("merge", key=["id"], within="x IN (SELECT 1)")


def test_the_plan_shows_the_merge_the_options_make():
    spec = MaterializeSpec(TableUri("s", "t"), WriteStrategy.MERGE, ("id",),
                           merge=MergeOptions(keep=("created_at",), within="day >= '2024-01-01'"))
    target = WriteTarget.from_spec(spec, "/lake/s/t", CommitStamp("r", "s/t"))
    plan = strategy_for(WriteStrategy.MERGE).plan(target, ["id", "v", "created_at", "day"])
    assert plan.statement.splitlines()[2:4] == [
        "ON t.`id` = s.`id` AND (t.day >= '2024-01-01')",
        "WHEN MATCHED THEN UPDATE SET `v` = s.`v`, `day` = s.`day`",
    ]
    assert "a match keeps the table's created_at" in plan.operation
