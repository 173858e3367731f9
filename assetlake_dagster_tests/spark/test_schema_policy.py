"""Layer 4: the schema policy per strategy. Replace may reshape an unpartitioned table;
merge, append and partition replace accept added columns only: a dropped or retyped column
is refused before writing, with the diff, and the table stays at its version (a merge used to
cast a retyped column silently to the table's type)."""

import pytest
from delta.tables import DeltaTable

from assetlake_dagster.errors import WriteError
from assetlake_dagster.spec import TableUri, WriteStrategy
from assetlake_dagster.writes import CommitStamp, WriteTarget, strategy_for

BEFORE = "id INT, name STRING, score DOUBLE"


def _target(lake_root, strategy, run, partitions=()):
    return WriteTarget(
        uri=TableUri("s", "t"),
        path=f"{lake_root}/s/t",
        strategy=strategy,
        stamp=CommitStamp(run_id=run, asset="s/t"),
        key=("id",) if strategy is WriteStrategy.MERGE else (),
        partitions=tuple(partitions),
    )


def _write(spark, lake_root, strategy, run, rows, schema, partitioned):
    partitions = ("p1",) if partitioned else ()
    df = spark.createDataFrame(rows, schema)
    if partitioned:
        df = df.selectExpr("*", "'p1' AS _partition")
    return strategy_for(strategy).write(spark, df, _target(lake_root, strategy, run, partitions))


def _versions(spark, lake_root):
    return [r.version for r in DeltaTable.forPath(spark, f"{lake_root}/s/t").history().select("version").collect()]


CASES = [
    (WriteStrategy.MERGE, False),
    (WriteStrategy.MERGE, True),
    (WriteStrategy.APPEND, False),
    (WriteStrategy.APPEND, True),
    (WriteStrategy.REPLACE, True),
]


@pytest.mark.parametrize("strategy, partitioned", CASES, ids=lambda v: getattr(v, "value", str(v)))
def test_a_retyped_column_is_refused_with_the_diff_and_an_added_one_accepted(spark, lake_root, strategy, partitioned):
    _write(spark, lake_root, strategy, "r1", [(1, "ann", 1.5)], BEFORE, partitioned)
    before = _versions(spark, lake_root)
    with pytest.raises(WriteError) as err:
        _write(spark, lake_root, strategy, "r2", [(2, "bob", 7)], "id INT, name STRING, score INT", partitioned)
    message = str(err.value.description)
    assert "column score changes type double -> int" in message, message
    assert _versions(spark, lake_root) == before
    assert [r.score for r in spark.read.format("delta").load(f"{lake_root}/s/t").collect()] == [1.5]
    # An added column is additive: accepted, with the old columns' types kept.
    result = _write(spark, lake_root, strategy, "r3", [(2, "bob", 2.5, "x")], BEFORE + ", extra STRING", partitioned)
    assert result.committed
    assert "extra" in spark.read.format("delta").load(f"{lake_root}/s/t").columns


def test_an_unpartitioned_replace_may_retype_a_column(spark, lake_root):
    _write(spark, lake_root, WriteStrategy.REPLACE, "r1", [(1, "ann", 1.5)], BEFORE, False)
    _write(spark, lake_root, WriteStrategy.REPLACE, "r2", [(1, "ann", 2)], "id INT, name STRING, score INT", False)
    assert dict(spark.read.format("delta").load(f"{lake_root}/s/t").dtypes)["score"] == "int"
