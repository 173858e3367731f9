"""``-- materialize view``: what a view file parses to, the located error of each thing a view
cannot have, and its plan. Its runs are dagster/test_views.py's."""

import pytest

from assetlake_dagster.cli.planning import render_plan
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.project.load import parse_file
from assetlake_dagster.spec import TableUri, WriteStrategy

VIEW = "-- materialize view delta://mart/open_orders\n"


def problems(text: str) -> list[str]:
    _, found = parse_file("/p/v.sql", text)
    return [p.render().splitlines()[0] for p in found]


def test_a_view_file_is_a_view_of_its_select():
    spec, found = parse_file("/p/v.sql", VIEW + "-- description Open orders.\nSELECT id, amount FROM raw.orders WHERE status = 'open'\n")
    assert found == []
    assert spec.materialize.strategy is WriteStrategy.VIEW and spec.uri == TableUri("mart", "open_orders")
    assert [u.uri for u in spec.upstreams] == [TableUri("raw", "orders")]
    assert spec.materialize.to_metadata()["assetlake/write"]["strategy"] == "view"


@pytest.mark.parametrize(
    "lines, expected",
    [
        pytest.param("-- materialize view delta://s/v key=id\n", "/p/v.sql:1:33: 'key=' applies to merge and history, "
                     "not to view. A view writes no data; remove it, or 'view' to write a table.", id="key"),
        pytest.param("-- materialize view delta://s/v append\n", "/p/v.sql:1:33: 'view' cannot be combined with 'append'. "
                     "A view writes no data; remove 'append', or 'view' to write a table.", id="append"),
        pytest.param("-- materialize view manual delta://s/v\n", "/p/v.sql:1:21: 'view' cannot be combined with 'manual'. "
                     "Keep one of them before the table URI.", id="manual"),
        pytest.param(VIEW + "-- partitioned daily start=2024-01-01\n", "/p/v.sql:2:4: a view cannot be '-- partitioned': "
                     "no run writes its slices. Remove it, or drop 'view' to write a table.", id="partitioned"),
        pytest.param(VIEW + "-- data_test not_null id\n", "/p/v.sql:2:23: a view cannot have data tests: no write of it "
                     "is audited. Remove it, or drop 'view' to write a table.", id="data-test"),
        pytest.param(VIEW + "-- cluster_by id\n", "/p/v.sql:2:4: a view cannot declare '-- cluster_by': a view has no "
                     "files to lay out. Remove it, or drop 'view' to write a table.", id="cluster-by"),
    ],
)
def test_what_a_view_cannot_have_is_a_located_error(lines, expected):
    assert problems(lines + "SELECT id FROM raw.orders\n") == [expected]


def test_a_view_binds_no_argument_and_runs_no_setup():
    found = problems(VIEW + "-- $n (int) = 1\n\nSET spark.sql.ansi.enabled = true;\nSELECT id FROM raw.orders WHERE id > :n\n")
    assert found == [
        "/p/v.sql:2:4: a view cannot take the argument '$n': a view binds no run's values. Remove it, or drop 'view' to write a table.",
        "/p/v.sql:4:1: a view is one SELECT: a setup statement would not be part of it. Remove it, or drop 'view' to write a table.",
    ]


def test_the_plan_of_a_view_writes_nothing():
    spec, _ = parse_file("/p/v.sql", VIEW + "SELECT id FROM raw.orders\n")
    plan = render_plan(spec, Lake("/lake"))
    assert "strategy    view" in plan
    assert "Catalog: CREATE OR REPLACE VIEW mart.open_orders AS the query, when the view is missing" in plan
    assert "Delta operation" not in plan
