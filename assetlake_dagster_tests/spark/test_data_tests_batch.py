"""Layer 4: a batch's data tests, evaluated for all its partitions at once, judge each
partition exactly as testing it on its own would (counts, samples, rows, scope text)."""

from dataclasses import replace

import pytest

from assetlake_dagster.run.data_tests import evaluate, evaluate_run
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.defs.partitions import PartitionSlice
from assetlake_dagster.spec import DataTestKind, DataTestSpec, TableUri
from assetlake_dagster.spec.model import SqlStatement

SCHEMA = "id INT, customer_id INT, status STRING, amount DOUBLE, _partition STRING"
ROWS = [
    # d1: two duplicated ids (1 x2, 2 x3), one NULL customer, one unknown status
    (1, 10, "paid", 1.0, "d1"), (1, 10, "paid", 1.0, "d1"),
    (2, None, "paid", 1.0, "d1"), (2, 11, "lost", 1.0, "d1"), (2, 11, "paid", 1.0, "d1"),
    # d2: clean but for a negative amount
    (3, 10, "paid", -5.0, "d2"), (4, 12, "pending", 2.0, "d2"),
    # d3: no rows at all (a day without data)
    # d4: six unknown statuses (more than the samples shown) and an id that d1 also has
    (1, 10, "a", 1.0, "d4"), (5, 10, "b", 1.0, "d4"), (6, 10, "c", 1.0, "d4"),
    (7, 10, "d", 1.0, "d4"), (8, 10, "e", 1.0, "d4"), (9, 10, "f", 1.0, "d4"),
]
TESTS = [
    DataTestSpec(DataTestKind.UNIQUE, ("id",)),
    DataTestSpec(DataTestKind.NOT_NULL, ("customer_id",)),
    DataTestSpec(DataTestKind.ACCEPTED_VALUES, ("status",), values=("paid", "pending")),
    DataTestSpec(DataTestKind.RELATIONSHIPS, ("customer_id",), ref_uri=TableUri("s", "none"), ref_column="id"),
    DataTestSpec(
        DataTestKind.CUSTOM,
        path="/p/tests/no_negative_amounts.sql",
        query=SqlStatement("SELECT id, amount FROM __this WHERE amount < 0 AND _partition = :partition", 1, ("partition",)),
    ),
    DataTestSpec(DataTestKind.UNIQUE, ("id", "status"), blocking=False),
]
KEYS = ["d1", "d2", "d3", "d4"]


@pytest.fixture()
def batch(spark):
    return spark.createDataFrame(ROWS, SCHEMA)


def test_a_batch_is_judged_partition_by_partition_as_separate_runs_would_be(spark, lake_root, batch):
    lake = Lake(lake_root)
    slices = [PartitionSlice(k) for k in KEYS]
    together = evaluate_run(spark, lake, TESTS, batch, "staged slice d1...d4", {"top": 1}, slices)

    alone = []
    for piece in slices:
        part = batch.where(batch["_partition"] == piece.key)
        for outcome in evaluate(spark, lake, TESTS, part, f"staged slice {piece.key}", {"top": 1, **piece.bindings()}):
            alone.append(replace(outcome, partition=piece.key))
    assert together == alone
    assert [(o.partition, o.test.name) for o in together[:2]] == [("d1", TESTS[0].name), ("d1", TESTS[1].name)]


def test_a_batchs_outcomes_count_and_sample_each_partitions_failures(spark, lake_root, batch):
    outcomes = evaluate_run(spark, Lake(lake_root), TESTS, batch, "staged slice d1...d4", {}, [PartitionSlice(k) for k in KEYS])
    got = {(o.partition, o.test.kind.value if o.test.kind is not DataTestKind.UNIQUE else o.test.name): o for o in outcomes}
    unique_id = TESTS[0].name
    assert (got["d1", unique_id].failing, got["d1", unique_id].samples) == (2, ("1 x2", "2 x3"))
    assert got["d4", unique_id].passed  # id 1 is duplicated across partitions, not within one
    assert (got["d1", "not_null"].failing, got["d1", "not_null"].samples) == (1, ("{id: 2, customer_id: None, status: 'paid', amount: 1.0}",))
    assert got["d4", "accepted_values"].failing == 6
    assert got["d4", "accepted_values"].samples == ("'a'", "'b'", "'c'", "'d'", "'e'")
    assert got["d1", "relationships"].samples[0] == "10 (delta://s/none has no table yet)"
    assert (got["d2", "custom"].failing, got["d2", "custom"].samples) == (1, ("{id: 3, amount: -5.0}",))
    assert got["d1", "custom"].passed and got["d4", "custom"].passed
    assert [(o.rows, o.scope) for o in outcomes if o.test is TESTS[0]] == [
        (5, "staged slice d1"), (2, "staged slice d2"), (0, "staged slice d3"), (6, "staged slice d4"),
    ]
    assert all(o.passed for o in outcomes if o.partition == "d3")


def test_an_unpartitioned_scope_has_one_outcome_per_test(spark, lake_root, batch):
    outcomes = evaluate_run(spark, Lake(lake_root), TESTS[:3], batch, "staged table", {}, [])
    assert [(o.partition, o.failing, o.rows, o.scope) for o in outcomes] == [
        (None, 2, 13, "staged table"), (None, 1, 13, "staged table"), (None, 7, 13, "staged table"),
    ]
