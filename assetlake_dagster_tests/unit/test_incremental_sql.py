"""Layer 1: which SELECTs a merge can feed with only its upstream's changes (sqlglot, no Spark).

The reading itself, against real change data feeds, is `dagster/test_change_feed.py`.
"""

import pytest

from assetlake_dagster.sql.incremental import GROUPED, ROW_LOCAL, IncrementalShape, incremental_shape
from assetlake_dagster.run.decision import RunInputs
from assetlake_dagster.spec import TableUri
from assetlake_dagster_tests.helpers import spec_of

ORDERS = TableUri("raw", "orders")


def keyed(body: str, header: str = "-- materialize delta://s/t key=id"):
    return spec_of(body, header)


@pytest.mark.parametrize(
    "body",
    [
        "SELECT id, upper(name) AS name FROM raw.orders",
        "SELECT o.id, o.amount * 2 AS a FROM raw.orders AS o WHERE o.amount > 0 AND o.day = '2024-01-01'",
        "SELECT * FROM raw.orders WHERE status <> 'void' ORDER BY id",
        "SELECT id, CASE WHEN a IS NULL THEN 0 ELSE a END AS a, coalesce(b, 'x') AS b FROM `raw`.`orders`",
    ],
)
def test_projections_and_filters_over_one_table_are_row_local(body):
    assert incremental_shape(keyed(body)) == IncrementalShape(ROW_LOCAL, ORDERS)


@pytest.mark.parametrize(
    "body, header, group, keys",
    [
        ("SELECT id, sum(amount) AS total FROM raw.orders GROUP BY id", None, ("id",), (("id", "id"),)),
        (
            "SELECT customer AS id, count(*) AS n FROM raw.orders o WHERE o.x > 1 GROUP BY customer",
            None,
            ("customer",),
            (("id", "customer"),),
        ),
        (
            "SELECT c, d, max(v) AS v FROM raw.orders GROUP BY d, c HAVING count(*) > 1",
            "-- materialize delta://s/t key=c,d",
            ("d", "c"),
            (("c", "c"), ("d", "d")),
        ),
    ],
)
def test_a_group_by_of_the_key_columns_is_grouped(body, header, group, keys):
    spec = keyed(body, header) if header else keyed(body)
    assert incremental_shape(spec) == IncrementalShape(GROUPED, ORDERS, group, keys)


@pytest.mark.parametrize(
    "body, header, reason",
    [
        ("SELECT id FROM raw.orders", "-- materialize delta://s/t", "a replace write is not a key= merge"),
        ("SELECT id FROM raw.orders", "-- materialize delta://s/t append", "a plain append reads its inputs in full ('append new_rows' appends only what its upstream gained)"),
        ("SELECT a.id FROM raw.orders a JOIN raw.c c ON a.c = c.c", None, "its SELECT has a join"),
        ("SELECT DISTINCT id FROM raw.orders", None, "its SELECT has DISTINCT"),
        ("SELECT id, row_number() OVER (ORDER BY x) AS n FROM raw.orders", None, "its SELECT has a window function"),
        ("SELECT id FROM raw.orders LIMIT 5", None, "its SELECT has LIMIT"),
        ("SELECT id, explode(xs) AS x FROM raw.orders", None, "its SELECT has a generator"),
        ("SELECT id FROM raw.orders WHERE id IN (SELECT id FROM raw.b)", None, "its SELECT has a subquery"),
        ("SELECT id FROM raw.orders UNION ALL SELECT id FROM raw.b", None, "its query is not one plain SELECT"),
        ("WITH x AS (SELECT id FROM raw.orders) SELECT id FROM x", None, "its SELECT has a WITH clause"),
        ("SELECT count(*) AS id FROM raw.orders", None, "its SELECT aggregates without GROUP BY"),
        ("SELECT id, try_sum(x) AS n FROM raw.orders", None, "its SELECT calls try_sum(), an aggregate"),
        ("SELECT id, any(x) AS n FROM raw.orders", None, "its SELECT calls any(), an aggregate"),
        ("SELECT c AS id, sum(v) AS v FROM raw.orders GROUP BY c, d", None, "its GROUP BY columns are not the table's key= columns"),
        ("SELECT upper(c) AS id, sum(v) AS v FROM raw.orders GROUP BY upper(c)", None, "it groups by UPPER(c), not a plain column"),
        ("SET x = 1;\nSELECT id FROM raw.orders", None, "the file has setup statements"),
        ("SELECT id FROM range(10)", None, "its SELECT reads something other than a lake table"),
        (
            "SELECT id FROM raw.orders",
            "-- materialize delta://s/t key=id\n-- partitioned daily start=2024-01-01",
            "the table is partitioned",
        ),
        ("SELECT id FROM raw.orders", '-- materialize delta://s/t key=id within="id > 0"', "its merge has within="),
    ],
)
def test_other_shapes_read_in_full_and_say_why(body, header, reason):
    spec = keyed(body, header) if header else keyed(body)
    shape = incremental_shape(spec)
    assert isinstance(shape, str) and shape.startswith(reason), shape


def test_only_moved_versions_let_a_run_read_changes_since_the_last_one():
    before = RunInputs("c1", {"delta://raw/orders": 3, "delta://raw/b": 1}, {"day": "x"}, "t")
    assert before.same_but_versions(RunInputs("c1", {"delta://raw/orders": 5, "delta://raw/b": 1}, {"day": "x"}, "t"))
    assert not before.same_but_versions(RunInputs("c2", {"delta://raw/orders": 5, "delta://raw/b": 1}, {"day": "x"}, "t"))
    assert not before.same_but_versions(RunInputs("c1", {"delta://raw/orders": 5, "delta://raw/b": 1}, {"day": "y"}, "t"))
    assert not before.same_but_versions(RunInputs("c1", {"delta://raw/orders": 5}, {"day": "x"}, "t"))
    assert not before.same_but_versions(RunInputs("c1", {"delta://raw/orders": 2, "delta://raw/b": 1}, {"day": "x"}, "t"))
    assert not before.same_but_versions(RunInputs("c1", {"delta://raw/orders": 5, "delta://raw/b": 1}, {"day": "x"}, "u"))


def test_an_append_new_rows_is_row_local_and_says_so_when_it_loads():
    spec = spec_of("SELECT id, current_timestamp() AS at FROM raw.orders WHERE id > 0", "-- materialize delta://s/t append new_rows")
    assert spec.materialize.new_rows and incremental_shape(spec) == IncrementalShape(ROW_LOCAL, ORDERS)
    assert spec.materialize.to_metadata()["assetlake/write"]["new_rows"] is True


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "-- materialize delta://s/t append new_rows\nSELECT a.id FROM raw.orders a JOIN raw.c c ON a.c = c.c\n",
            "/p/f.sql:1:16: 'append new_rows' cannot read only the new rows: its SELECT has a join. It needs one "
            "row-local SELECT over one lake table (projections, filters, deterministic functions), unpartitioned; "
            "remove 'new_rows' to append the whole SELECT on each run.",
        ),
        (
            "-- materialize delta://s/t append new_rows\nSELECT c, count(*) AS n FROM raw.orders GROUP BY c\n",
            "/p/f.sql:1:16: 'append new_rows' cannot read only the new rows: its SELECT has GROUP BY. It needs one",
        ),
        (
            "-- materialize delta://s/t key=id new_rows\nSELECT id FROM raw.orders\n",
            "/p/f.sql:1:35: 'new_rows' applies to append, not to merge. It appends the SELECT over the rows the upstream gained since "
            "the last run: write 'append new_rows'.",
        ),
    ],
)
def test_new_rows_misuse_is_a_located_error(text, expected):
    from assetlake_dagster.project.load import parse_file

    _, problems = parse_file("/p/f.sql", text)
    assert [p.render().splitlines()[0][: len(expected)] for p in problems] == [expected]
