"""Layer 4: an external table's schema read from its ``_delta_log`` (no Spark) is the one
Spark reads, on tables Spark wrote: a column comment, nested and decimal types, a schema
evolution (``mergeSchema``), a checkpoint with the commits before it cleaned up."""

import os

import dagster as dg
from pyspark.sql.types import (
    ArrayType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from assetlake_dagster.lake.delta_log import read_metadata
from assetlake_dagster.defs.external import delta_column_schema, external_table_asset
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import TableUri
from assetlake_dagster.defs.translator import AssetlakeTranslator

URI = TableUri("landing", "orders")

ORDERS = StructType(
    [
        StructField("id", LongType(), nullable=False, metadata={"comment": "the order's key"}),
        StructField("amount", DecimalType(10, 2)),
        StructField("tags", ArrayType(StringType())),
        StructField("buyer", StructType([StructField("name", StringType()), StructField("age", IntegerType())])),
    ]
)
#: After the evolution (not ORDERS.add(...): that changes ORDERS in place).
EVOLVED = StructType([*ORDERS.fields, StructField("note", StringType())])


def shape(schema):
    """(name, Spark type string, nullable) per column: what Dagster shows."""
    return [(f.name, f.dataType.simpleString(), f.nullable) for f in schema.fields]


def columns(table_schema):
    return [(c.name, c.type, c.constraints.nullable) for c in table_schema.columns]


def write_orders_then_evolve(spark, path, **options):
    """Version 0 creates the table; version 1 appends a row with a new column."""
    writer = spark.createDataFrame([(1, None, ["a"], ("x", 30))], ORDERS).write.format("delta")
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.save(path)
    spark.createDataFrame([(2, None, [], None, "gift")], EVOLVED).write.format(
        "delta"
    ).mode("append").option("mergeSchema", "true").save(path)


def observe(asset):
    """Run the asset's observation as "Observe" in the UI does: a run selecting it."""
    defs = dg.Definitions(assets=[asset])
    (key,) = asset.keys
    job = defs.resolve_implicit_job_def_def_for_assets([key])
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), asset_selection=[key])
    assert result.success
    (observation,) = [e.asset_observation_data.asset_observation for e in result.get_asset_observation_events()]
    return observation


def test_the_schema_from_the_log_is_sparks_and_the_observation_records_it(spark, lake_root):
    lake = Lake(lake_root)
    path = lake.table_path(URI)
    write_orders_then_evolve(spark, path)
    spark_schema = spark.read.format("delta").load(path).schema

    meta = read_metadata(path)
    from_log = delta_column_schema(meta, path)

    assert meta.version == 1  # the evolution's metaData, not the creation's
    assert columns(from_log) == shape(spark_schema)
    assert columns(from_log)[-1] == ("note", "string", True)
    assert [c.description for c in from_log.columns] == ["the order's key", None, None, None, None]
    assert spark_schema["id"].metadata.get("comment") == "the order's key"  # Spark sees the same comment

    observation = observe(external_table_asset(AssetlakeTranslator(), URI, ["staging.orders"], lake))
    metadata = {k: v.value for k, v in observation.metadata.items()}
    assert metadata["delta_version"] == 1
    assert metadata["dagster/column_schema"] == from_log
    assert metadata["dagster/uri"] == metadata["path"] == path
    assert metadata["dagster/table_name"] == "spark_catalog.landing.orders"


def test_the_schema_from_a_spark_checkpoint_when_the_commits_before_it_are_gone(spark, lake_root):
    path = os.path.join(lake_root, "landing", "orders")
    # Spark writes a checkpoint at version 2 (every 2 commits); a third write changes no schema.
    write_orders_then_evolve(spark, path, **{"delta.checkpointInterval": "2"})
    spark.createDataFrame([(3, None, [], None, None)], EVOLVED).write.format("delta").mode(
        "append"
    ).save(path)
    log_dir = os.path.join(path, "_delta_log")
    assert os.path.exists(os.path.join(log_dir, f"{2:020d}.checkpoint.parquet"))
    # What log cleanup does after the checkpoint (Spark keeps the checkpoint's own commit):
    # the metaData of versions 0 and 1 is now only in the checkpoint.
    for version in (0, 1):
        os.remove(os.path.join(log_dir, f"{version:020d}.json"))

    meta = read_metadata(path)

    assert meta.file.endswith(f"{2:020d}.checkpoint.parquet")
    assert columns(delta_column_schema(meta, path)) == shape(spark.read.format("delta").load(path).schema)
