"""SQL unit tests run on real Spark, without a lake: the demo's pass, a broken one shows its
diff (through ``assetlake test`` and the pytest helper), an expected error, and nothing is
left in the session."""

import shutil

import pytest

from assetlake_dagster.cli.main import main
from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster.cli.sql_test_run import assert_sql_tests_pass

BROKEN = """\
tests:
  - name: counts_refunds_too
    given:
      analytics.customers:
        - {customer_id: 1, name: Ann, tier: gold}
      staging.orders:
        columns: customer_id BIGINT, amount DECIMAL(10,2), status STRING
        rows:
          - {customer_id: 1, amount: 10.50, status: paid}
          - {customer_id: 1, amount: 99.00, status: refunded}
    expect:
      - {customer_id: 1, paid_orders: 2, revenue: 109.50}
"""


def test_the_demo_sql_tests_pass(spark):
    results = assert_sql_tests_pass(DEMO_PROJECT_DIR, spark)
    assert len(results) == 4 and all(r.passed for r in results)
    leftovers = [t.name for t in spark.catalog.listTables() if t.name.startswith("__assetlake_test_")]
    assert leftovers == []


def test_a_broken_test_fails_with_a_readable_diff(spark, tmp_path, capsys, monkeypatch):
    shutil.copy(f"{DEMO_PROJECT_DIR}/customer_revenue.sql", tmp_path / "customer_revenue.sql")
    (tmp_path / "customer_revenue.tests.yml").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)

    assert main(["test", "customer_revenue.sql"]) == 1
    out = capsys.readouterr().out
    assert (
        "FAIL customer_revenue.tests.yml:2:5: counts_refunds_too\n"
        "    expected 1 row(s), got 1; compared on customer_id, paid_orders, revenue\n"
        "    - 1 expected, not returned:\n"
        "    -   customer_id=1, paid_orders=2, revenue=109.5\n"
        "    + 1 returned, not expected:\n"
        "    +   customer_id=1, paid_orders=1, revenue=10.5\n"
    ) in out
    assert "0 passed, 1 failed in " in out

    with pytest.raises(AssertionError, match=r"1 of 1 SQL tests failed:\nFAIL .*counts_refunds_too"):
        assert_sql_tests_pass(str(tmp_path), spark)


def test_an_expected_error_and_a_setup_statement_of_its_own(spark, tmp_path):
    (tmp_path / "checked.sql").write_text(
        "-- materialize delta://mart/checked\n\n"
        "SET assetlake.test.marker = on;\n\n"
        "SELECT id, CASE WHEN amount < 0 THEN raise_error('negative amount') ELSE amount END AS amount\n"
        "FROM raw.payments\n"
    )
    (tmp_path / "checked.tests.yml").write_text(
        "tests:\n"
        "  - name: refuses_negative_amounts\n"
        "    given:\n"
        "      raw.payments: [{id: 1, amount: -5}]\n"
        "    expect_error: negative amount\n"
        "  - name: passes_the_others\n"
        "    given:\n"
        "      raw.payments: [{id: 1, amount: 5}]\n"
        "    expect: [{id: 1, amount: 5}]\n"
        "  - name: an_error_where_rows_were_expected\n"
        "    given:\n"
        "      raw.payments: [{id: 1, amount: -1}]\n"
        "    expect: [{id: 1, amount: -1}]\n"
    )
    with pytest.raises(AssertionError) as failed:
        assert_sql_tests_pass(str(tmp_path), spark)
    message = str(failed.value)
    assert message.startswith("1 of 3 SQL tests failed:\nFAIL ")
    assert "an_error_where_rows_were_expected\n    expected rows, but the SQL failed:\n" in message
    assert "negative amount" in message
    # The file's SET ran in a session of the test's own, not in the caller's.
    assert spark.conf.get("assetlake.test.marker", None) is None
