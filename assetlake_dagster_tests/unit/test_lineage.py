"""Column lineage of a SELECT: one case per SQL construct, each asserting the whole result."""


import pytest

from assetlake_dagster.sql.lineage import ColumnSource, infer_column_lineage
from assetlake_dagster.spec import TableUri

ORDERS = TableUri("sales", "orders")
CUSTOMERS = TableUri("crm", "customers")
REFUNDS = TableUri("sales", "refunds")
SCHEMAS = {
    ORDERS: ["order_id", "customer_id", "amount", "tax", "ts", "status"],
    CUSTOMERS: ["customer_id", "name", "country"],
    REFUNDS: ["order_id", "customer_id", "refund_amount", "ts"],
}


def o(column):
    return ColumnSource(ORDERS, column)


def c(column):
    return ColumnSource(CUSTOMERS, column)


def r(column):
    return ColumnSource(REFUNDS, column)


@pytest.mark.parametrize(
    "sql, expected",
    [
        pytest.param(
            "SELECT order_id, amount FROM sales.orders",
            {"order_id": (o("order_id"),), "amount": (o("amount"),)},
            id="passthrough",
        ),
        pytest.param(
            "SELECT order_id AS id, amount + tax AS order_total FROM sales.orders",
            {"id": (o("order_id"),), "order_total": (o("amount"), o("tax"))},
            id="computed",
        ),
        pytest.param(
            "SELECT CAST(amount AS DECIMAL(10, 2)) AS amount, upper(coalesce(status, 'none')) AS status, "
            "date_trunc('DAY', ts) AS day FROM sales.orders",
            {"amount": (o("amount"),), "status": (o("status"),), "day": (o("ts"),)},
            id="cast-and-functions",
        ),
        pytest.param(
            "WITH base AS (SELECT order_id, amount, tax FROM sales.orders),\n"
            "     totals AS (SELECT order_id, amount + tax AS total FROM base)\n"
            "SELECT order_id, total * 2 AS double_total FROM totals",
            {"order_id": (o("order_id"),), "double_total": (o("amount"), o("tax"))},
            id="cte-multi-level",
        ),
        pytest.param(
            "SELECT o.order_id, c.name AS customer_name, o.amount FROM sales.orders o "
            "JOIN crm.customers AS c ON o.customer_id = c.customer_id",
            {"order_id": (o("order_id"),), "customer_name": (c("name"),), "amount": (o("amount"),)},
            id="join-with-aliases",
        ),
        pytest.param(
            "SELECT name, country FROM sales.orders o JOIN crm.customers c ON o.customer_id = c.customer_id",
            {"name": (c("name"),), "country": (c("country"),)},
            id="join-unqualified-resolved-by-schema",
        ),
        pytest.param(
            "SELECT s.id, s.net FROM (SELECT order_id AS id, amount - tax AS net FROM sales.orders) AS s",
            {"id": (o("order_id"),), "net": (o("amount"), o("tax"))},
            id="subquery-in-from",
        ),
        pytest.param(
            "SELECT customer_id, sum(amount) AS total, count(*) AS n, count(DISTINCT order_id) AS orders "
            "FROM sales.orders GROUP BY customer_id",
            {
                "customer_id": (o("customer_id"),),
                "total": (o("amount"),),
                "n": (),
                "orders": (o("order_id"),),
            },
            id="aggregates",
        ),
        pytest.param(
            "SELECT order_id, row_number() OVER (PARTITION BY customer_id ORDER BY ts) AS rn, "
            "sum(amount) OVER (PARTITION BY customer_id) AS customer_total FROM sales.orders",
            {
                "order_id": (o("order_id"),),
                "rn": (o("customer_id"), o("ts")),
                "customer_total": (o("amount"), o("customer_id")),
            },
            id="window-functions",
        ),
        pytest.param(
            "SELECT CASE WHEN status = 'paid' THEN amount WHEN status = 'free' THEN 0 ELSE tax END AS due "
            "FROM sales.orders",
            {"due": (o("amount"), o("status"), o("tax"))},
            id="case-when",
        ),
        pytest.param(
            "SELECT * FROM crm.customers",
            {"customer_id": (c("customer_id"),), "name": (c("name"),), "country": (c("country"),)},
            id="select-star",
        ),
        pytest.param(
            "SELECT c.*, o.amount FROM sales.orders o JOIN crm.customers c ON o.customer_id = c.customer_id",
            {
                "customer_id": (c("customer_id"),),
                "name": (c("name"),),
                "country": (c("country"),),
                "amount": (o("amount"),),
            },
            id="table-star",
        ),
        pytest.param(
            "WITH x AS (SELECT order_id, amount FROM sales.orders) SELECT * FROM x",
            {"order_id": (o("order_id"),), "amount": (o("amount"),)},
            id="star-over-cte",
        ),
        pytest.param(
            "SELECT order_id, amount AS value FROM sales.orders\n"
            "UNION ALL\n"
            "SELECT order_id, -refund_amount FROM sales.refunds",
            {"order_id": (o("order_id"), r("order_id")), "value": (o("amount"), r("refund_amount"))},
            id="union",
        ),
        pytest.param(
            "SELECT customer_id, name FROM crm.customers_current",
            {"customer_id": (c("customer_id"),), "name": (c("name"),)},
            id="current-view-is-the-history-table",
        ),
        pytest.param(
            "SELECT * FROM crm.customers_current",
            {"customer_id": (c("customer_id"),), "name": (c("name"),), "country": (c("country"),)},
            id="current-view-star",
        ),
        pytest.param(
            "SELECT 1 AS one, 'x' AS label, current_date() AS today, NULL AS nothing",
            {"one": (), "label": (), "today": (), "nothing": ()},
            id="literal-only",
        ),
        pytest.param(
            "SELECT order_id, :partition AS day, amount * :rate AS scaled FROM sales.orders "
            "WHERE amount > :min_amount AND to_date(ts) = :partition",
            {"order_id": (o("order_id"),), "day": (), "scaled": (o("amount"),)},
            id="parameters-are-values",
        ),
        pytest.param(
            "SELECT explode(sequence(to_date(:partition_start), to_date(:partition_end), INTERVAL 1 DAY)) AS day",
            {"day": ()},
            id="explode-sequence-of-parameters",
        ),
        pytest.param(
            "SELECT order_id, d FROM sales.orders "
            "LATERAL VIEW explode(sequence(to_date(:partition_start), to_date(:partition_end))) days AS d",
            {"order_id": (o("order_id"),), "d": ()},
            id="lateral-view-explode-of-parameters",
        ),
        pytest.param(
            "SELECT x.a, x.b AS bee, y.k FROM other.unknown x JOIN sales.orders y_o ON x.id = y_o.order_id "
            "JOIN other.lookup y ON y.id = x.id",
            {
                "a": (ColumnSource(TableUri("other", "unknown"), "a"),),
                "bee": (ColumnSource(TableUri("other", "unknown"), "b"),),
                "k": (ColumnSource(TableUri("other", "lookup"), "k"),),
            },
            id="table-missing-from-schemas-qualified",
        ),
        pytest.param(
            "SELECT a, b + 1 AS b1 FROM other.unknown",
            {
                "a": (ColumnSource(TableUri("other", "unknown"), "a"),),
                "b1": (ColumnSource(TableUri("other", "unknown"), "b"),),
            },
            id="table-missing-from-schemas-sole-source",
        ),
        pytest.param(
            "SELECT x.*, o.amount FROM other.unknown x JOIN sales.orders o ON x.id = o.order_id",
            {"amount": (o("amount"),)},
            id="star-of-unknown-table-left-out",
        ),
        pytest.param(
            "SELECT amount + 1, order_id FROM sales.orders",
            {"order_id": (o("order_id"),)},
            id="unaliased-expression-left-out",
        ),
        pytest.param(
            "SELECT Order_ID AS OrderId, AMOUNT FROM Sales.Orders",
            {"OrderId": (o("order_id"),), "amount": (o("amount"),)},
            id="case-insensitive-names-keep-their-spelling",
        ),
        pytest.param(
            "SELECT order_id, (SELECT max(name) FROM crm.customers) AS top_name FROM sales.orders",
            {"order_id": (o("order_id"),), "top_name": (c("name"),)},
            id="scalar-subquery",
        ),
        pytest.param(
            "SELECT amount, amount + tax AS total, tax AS amount FROM sales.orders",
            {"amount": (o("amount"),), "total": (o("amount"), o("tax"))},
            id="duplicate-name-keeps-first",
        ),
    ],
)
def test_infer_column_lineage(sql, expected):
    result = infer_column_lineage(sql, SCHEMAS)
    assert result == expected
    assert list(result) == list(expected)  # output order


@pytest.mark.parametrize(
    "sql, schemas, expected",
    [
        pytest.param(
            "SELECT * FROM crm.customers_current",
            {TableUri("crm", "customers_current"): ["customer_id", "name"]},
            {"customer_id": (c("customer_id"),), "name": (c("name"),)},
            id="known-by-its-view-name",
        ),
        pytest.param(
            "SELECT v.name FROM crm.customers_current AS v",
            {},
            {"name": (c("name"),)},
            id="view-of-unknown-table",
        ),
        pytest.param(
            "SELECT * FROM crm.customers_current",
            {},
            {},  # '*' over an unknown view: its columns are unknown
            id="star-over-view-of-unknown-table",
        ),
    ],
)
def test_current_view_reports_the_history_table(sql, schemas, expected):
    assert infer_column_lineage(sql, schemas) == expected


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("", id="empty"),
        pytest.param("SELECT FROM WHERE", id="syntax-error"),
        pytest.param("INSERT INTO sales.orders SELECT * FROM crm.customers", id="not-a-query"),
        pytest.param("SELECT 1 AS a; SELECT 2 AS b", id="two-statements"),
        pytest.param("SELECT ambiguous FROM sales.orders JOIN sales.refunds USING (order_id)", id="ambiguous"),
        pytest.param("SELECT nope.x FROM sales.orders", id="unknown-qualifier"),
        pytest.param("SELECT `weird name`.`x y` AS z FROM `weird name`", id="backticks-no-schema"),
        pytest.param("SELECT * FROM (VALUES (1, 2)) AS v(a, b)", id="values"),
        pytest.param("SELECT " + "(" * 400 + "1" + ")" * 400 + " AS deep", id="deep-nesting"),
        pytest.param("SELECT * FROM delta.`/tmp/x`", id="path-table"),
        pytest.param(
            "SELECT k, v FROM sales.orders PIVOT (sum(amount) FOR status IN ('a' AS k, 'b' AS v))", id="pivot"
        ),
        pytest.param("SELECT transform(array(1, 2), x -> x + amount) AS t FROM sales.orders", id="lambda"),
    ],
)
def test_never_raises(sql):
    result = infer_column_lineage(sql, SCHEMAS)
    assert isinstance(result, dict)
    assert all(isinstance(sources, tuple) for sources in result.values())


def test_thirty_computed_columns_each_name_their_sources():
    columns = ", ".join(f"amount + tax + {i} AS c{i}" for i in range(30))
    sql = f"WITH b AS (SELECT * FROM sales.orders) SELECT {columns} FROM b"
    result = infer_column_lineage(sql, SCHEMAS)
    assert list(result) == [f"c{i}" for i in range(30)]
    assert set(result.values()) == {(o("amount"), o("tax"))}
