"""``-- column`` lines: parsed into the spec, checked against the SELECT and the other files,
carried into the catalog (descriptions, storage location)."""

import pytest

from assetlake_dagster.errors import ProjectError
from assetlake_dagster.project.load import load_project
from assetlake_dagster.spec import COLUMN_DESCRIPTIONS_KEY, ColumnSourceSpec, TableUri
from assetlake_dagster.defs.translator import AssetlakeTranslator

ORDERS = "-- materialize delta://Sales/Orders\n\nSELECT 1 AS id, 2.0 AS amount, 0.5 AS tax\n"
DIM = "-- materialize delta://sales/dim history key=id\n\nSELECT 1 AS id, 'a' AS tier\n"
STAR = "-- materialize delta://sales/everything\n\nSELECT * FROM sales.orders\n"


def _load(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return load_project(tmp_path)


def _errors(tmp_path, files):
    with pytest.raises(ProjectError) as caught:
        _load(tmp_path, files)
    return [d.render().splitlines()[0].split(": ", 1)[1] for d in caught.value.diagnostics]


def test_column_lines_become_the_specs_columns_with_sources_spelled_as_their_producer(tmp_path):
    files = {
        "orders.sql": ORDERS,
        "total.sql": (
            "-- materialize delta://sales/totals\n"
            "-- column total <- delta://sales/orders.amount, delta://SALES/ORDERS.tax\n"
            '-- column total "Amount plus tax"\n'
            '-- column id "The order"\n\n'
            "SELECT id, amount + tax AS total FROM sales.orders\n"
        ),
    }
    project = _load(tmp_path, files)
    spec = next(s for s in project.assets if s.uri.table == "totals")
    total, order_id = spec.columns
    orders = TableUri("Sales", "Orders")  # the producer's spelling
    assert (total.name, total.description, total.lineage_declared) == ("total", "Amount plus tax", True)
    assert total.sources == (ColumnSourceSpec(orders, "amount"), ColumnSourceSpec(orders, "tax"))
    assert (order_id.name, order_id.description, order_id.sources, order_id.lineage_declared) == ("id", "The order", (), False)
    metadata = AssetlakeTranslator().get_metadata(spec)
    assert metadata[COLUMN_DESCRIPTIONS_KEY] == {"total": "Amount plus tax", "id": "The order"}


@pytest.mark.parametrize(
    "column_line, expected",
    [
        pytest.param(
            "-- column total <- delta://sales/orders.amount",
            "column 'total' is not among the SELECT's columns. The SELECT projects: id, amount_eur.",
            id="output-not-selected",
        ),
        pytest.param(
            "-- column id <- delta://sales/customers.id",
            "delta://sales/customers is not read by this file, so column 'id' cannot derive from it. "
            "Name a table the SQL reads, or declare it with '-- on delta://sales/customers'.",
            id="table-not-read",
        ),
        pytest.param(
            "-- column amount_eur <- delta://sales/orders.amount_usd",
            "delta://Sales/Orders has no column 'amount_usd'. Did you mean 'amount'?",  # as its producer spells it
            id="source-column-unknown",
        ),
        pytest.param(
            "-- column amount_eur <- delta://sales/dim.valid_to, delta://sales/dim_current.ids",
            "delta://sales/dim has no column 'ids'. Did you mean 'id'?",
            id="history-managed-columns-known-view-checked",
        ),
    ],
)
def test_column_lines_are_checked_against_the_select_and_the_upstreams(tmp_path, column_line, expected):
    files = {
        "orders.sql": ORDERS,
        "dim.sql": DIM,
        "f.sql": (
            "-- materialize delta://sales/f\n"
            f"{column_line}\n\n"
            "SELECT o.id, o.amount AS amount_eur FROM sales.orders o JOIN sales.dim_current d ON o.id = d.id\n"
        ),
    }
    assert _errors(tmp_path, files) == [expected]


def test_a_source_from_a_select_star_table_is_not_checked_at_load(tmp_path):
    files = {
        "orders.sql": ORDERS,
        "star.sql": STAR,
        "f.sql": "-- materialize delta://sales/f\n-- column x <- delta://sales/everything.anything\n\nSELECT id AS x FROM sales.everything\n",
    }
    spec = next(s for s in _load(tmp_path, files).assets if s.uri.table == "f")
    assert spec.columns[0].sources == (ColumnSourceSpec(TableUri("sales", "everything"), "anything"),)


def test_the_demo_describes_its_columns():
    from assetlake_dagster.demo import DEMO_PROJECT_DIR

    specs = {str(s.uri): s for s in load_project(DEMO_PROJECT_DIR, load_python_files=False).assets}
    described = {uri: {c.name for c in s.columns if c.description} for uri, s in specs.items() if s.columns}
    assert described == {
        "delta://analytics/customer_revenue": {"paid_orders", "revenue"},
        "delta://analytics/dim_customer": {"tier", "updated_at"},
        "delta://analytics/fct_orders": {"tier_at_order", "country_at_order"},
        "delta://staging/orders": {"amount", "order_date"},
    }
