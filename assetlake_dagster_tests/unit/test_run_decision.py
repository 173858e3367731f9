"""Layer 1: what a run compares to decide whether it can be skipped (no Spark, no Dagster run).

The decision itself, against a real instance and real tables, is `dagster/test_skip_unchanged.py`.
"""

import pytest

from assetlake_dagster.lake.root import Lake
from assetlake_dagster_tests.helpers import spec_of
from assetlake_dagster.run.decision import RunInputs, current_inputs, non_deterministic_call, reads_outside_the_lake


@pytest.mark.parametrize(
    "body, called",
    [
        ("SELECT current_timestamp() AS at FROM s.a", "current_timestamp()"),
        ("SELECT now() AS at FROM s.a", "now()"),
        ("SELECT id FROM s.a WHERE day = current_date()", "current_date()"),
        ("SELECT id, rand() AS r FROM s.a", "rand()"),
        ("SELECT id, uuid() AS u FROM s.a", "uuid()"),
        ("SELECT id, monotonically_increasing_id() AS n FROM s.a", "monotonically_increasing_id()"),
        ("SELECT unix_timestamp() AS t FROM s.a", "current_timestamp()"),  # sqlglot reads it so
        ("SELECT id, input_file_name() AS f FROM s.a", "input_file_name()"),
        ("SET x = 1;\nCREATE TEMP VIEW v AS SELECT id, random() AS r FROM s.a;\nSELECT id FROM v", "rand()"),
    ],
)
def test_sql_whose_result_differs_from_run_to_run_is_found(body, called):
    assert non_deterministic_call(spec_of(body)) == called


@pytest.mark.parametrize(
    "body",
    [
        "SELECT id, upper(name) AS name, unix_timestamp(at) AS t FROM s.a",
        "SELECT id, sum(amount) AS total FROM s.a GROUP BY id",
        "SELECT id, date_add(day, 1) AS next_day, xxhash64(id) AS h FROM s.a",
    ],
)
def test_deterministic_sql_is_not_flagged(body):
    assert non_deterministic_call(spec_of(body)) is None


def test_what_changed_is_said_first_by_the_file_then_the_tables_then_the_arguments():
    before = RunInputs("a" * 64, {"delta://s/a": 4, "delta://s/b": 1}, {"n": "3"}, "t1")
    assert before.difference(before) is None
    assert before.difference(RunInputs("b" * 64, {}, {}, "t1")).startswith("the file changed (code version aaaaaaaaaaaa -> bbbbbbbbbbbb)")
    assert before.difference(RunInputs("a" * 64, {"delta://s/a": 5, "delta://s/b": 1}, {"n": "3"}, "t1")) == (
        "delta://s/a moved from version 4 to 5"
    )
    assert before.difference(RunInputs("a" * 64, {"delta://s/a": 4}, {"n": "3"}, "t1")) == "it reads delta://s/b no more"
    assert before.difference(RunInputs("a" * 64, dict(before.tables), {"n": "4"}, "t1")) == "its arguments changed (n=3 -> n=4)"
    assert before.difference(RunInputs("a" * 64, dict(before.tables), {"n": "3"}, "t2")) == "its data tests changed"
    assert before.summary() == "s.a@4, s.b@1"


def test_recorded_inputs_round_trip_and_anything_else_reads_as_none():
    inputs = RunInputs("c", {"delta://s/a": 4}, {"day": "2024-01-01"}, "t")
    assert RunInputs.from_json(inputs.to_json()) == inputs
    for junk in (None, "x", {"code_version": "c"}, {"code_version": "c", "tables": {"a": "x"}, "arguments": {}, "tests": ""}):
        assert RunInputs.from_json(junk) is None


def test_inputs_are_read_from_the_delta_logs_and_a_missing_table_says_so(tmp_path):
    log = tmp_path / "s" / "a" / "_delta_log"
    log.mkdir(parents=True)
    for version in range(3):
        (log / f"{version:020d}.json").write_text('{"commitInfo": {"operation": "WRITE"}}\n')
    spec = spec_of("SELECT id FROM s.a")
    inputs, problem = current_inputs(spec, Lake(str(tmp_path)), {"n": 3})
    assert problem is None and inputs.tables == {"delta://s/a": 2} and inputs.arguments == {"n": "3"}
    inputs, problem = current_inputs(spec_of("SELECT id FROM s.a JOIN s.b USING (id)"), Lake(str(tmp_path)), {})
    assert inputs is None and problem == f"delta://s/b is not a Delta table of the lake {tmp_path} (yet)"


def test_reads_outside_the_lake_are_named_and_the_lake_alone_is_not():
    assert reads_outside_the_lake(spec_of("SELECT id FROM s.a JOIN s.b USING (id)")) is None
    assert reads_outside_the_lake(spec_of("SELECT id FROM range(10)")) is None
    assert reads_outside_the_lake(spec_of("SELECT * FROM read_files('/data/x.csv', format => 'csv')")) == (
        "the table function read_files(...)"
    )
    foreign = spec_of("SELECT id FROM uc.sales.orders")
    assert foreign.foreign_tables, "the parser keeps catalog.schema.table as a foreign table"
    assert reads_outside_the_lake(foreign) == "uc.sales.orders (catalog uc)"
