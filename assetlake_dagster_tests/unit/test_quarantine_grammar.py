"""``-- data_test … on_fail=quarantine``: which tests may quarantine, and the located errors.
The runs are dagster/test_quarantine.py's."""

import pytest

from assetlake_dagster.run.quarantine import quarantine_uri
from assetlake_dagster.spec import TableUri
from assetlake_dagster_tests.helpers import header_errors, spec_of


def test_a_row_level_test_quarantines_and_does_not_block():
    spec = spec_of(
        "SELECT id, email, tier, country FROM raw.customers",
        "-- materialize delta://mart/customers key=id\n"
        "-- data_test not_null email on_fail=quarantine\n"
        "-- data_test accepted_values tier = gold,silver on_fail=quarantine\n"
        "-- data_test relationships country -> delta://ref/countries.code on_fail=quarantine\n"
        "-- data_test not_null id on_fail=warn\n"
        "-- data_test unique id on_fail=fail",
    )
    assert [(t.name, t.quarantine, t.blocking) for t in spec.data_tests] == [
        ("not_null_email", True, False),
        ("accepted_values_tier", True, False),
        ("relationships_country", True, False),
        ("not_null_id", False, False),
        ("unique_id", False, True),
    ]
    assert spec.data_tests[1].values == ("gold", "silver")


@pytest.mark.parametrize(
    "line, expected",
    [
        pytest.param("-- data_test unique id on_fail=quarantine",
                     "f.sql:2:24: a unique test cannot quarantine rows. Its failures are not rows of the table one can "
                     "set aside; quarantine works with not_null, accepted_values, relationships: use 'warn', or let it block.",
                     id="unique"),
        pytest.param("-- data_test tests/no_negatives.sql on_fail=quarantine",
                     "f.sql:2:37: a custom test cannot quarantine rows. Its failures are not rows of the table one can "
                     "set aside; quarantine works with not_null, accepted_values, relationships: use 'warn', or let it block.",
                     id="custom"),
        pytest.param("-- data_test not_null email on_fail=drop",
                     "f.sql:2:29: unknown on_fail= value 'drop'. Write 'on_fail=quarantine' (send the failing rows aside, "
                     "publish the rest), 'on_fail=warn' or 'on_fail=fail' (the default).",
                     id="unknown-value"),
    ],
)
def test_what_cannot_quarantine_is_a_located_error(line, expected):
    assert header_errors(line) == [expected]


def test_the_quarantine_table_sits_beside_its_table():
    assert quarantine_uri(TableUri("sales", "orders")) == TableUri("sales", "orders__quarantine")
