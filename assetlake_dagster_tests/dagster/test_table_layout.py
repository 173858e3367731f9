"""Layer 5: a table's layout lines (`-- cluster_by`, `-- properties`) on real Delta tables.

The first run creates the table with its Delta properties in the data commit and clusters
it right after; a run with the same header changes nothing; an edited line is applied
and recorded on the materialization; every property the grammar knows, Delta accepts.
"""

import dagster as dg
import pytest

from assetlake_dagster.annotations.table_layout import DELTA_PROPERTIES
from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.lake.delta_sql import path_identifier

KEY = dg.AssetKey(["s", "t"])
SELECT = "SELECT 1 AS id, 'ann' AS name UNION ALL SELECT 2, 'bob'"


def materialize(project, lake_root, instance, header: str):
    (project / "t.sql").write_text(f"-- materialize delta://s/t key=id\n{header}\n\n{SELECT}\n")
    defs = build_definitions(str(project), lake_root=lake_root)
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance).success
    return instance.get_latest_materialization_event(KEY).asset_materialization.metadata


def detail(spark, path):
    return spark.sql(f"DESCRIBE DETAIL {path_identifier(path)}").collect()[0].asDict()


def operations(spark, path):
    rows = spark.sql(f"DESCRIBE HISTORY {path_identifier(path)}").select("version", "operation").collect()
    return [(r.version, r.operation) for r in sorted(rows)]


def test_layout_is_applied_on_the_first_run_kept_and_changed_with_the_header(spark, lake_root, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    instance = dg.DagsterInstance.ephemeral()
    path = f"{lake_root}/s/t"
    header = "-- cluster_by id\n-- properties delta.enableChangeDataFeed=true team.note=\"nightly load\""

    first = materialize(project, lake_root, instance, header)
    table = detail(spark, path)
    assert table["clusteringColumns"] == ["id"]
    assert table["properties"]["delta.enableChangeDataFeed"] == "true"
    assert table["properties"]["team.note"] == "nightly load"
    # The Delta property is in the data commit itself: the change feed starts at version 0.
    feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(path)
    assert sorted(r.id for r in feed.collect()) == [1, 2]
    # The whole layout is in the first run's one commit.
    assert operations(spark, path) == [(0, "CREATE TABLE AS SELECT")]
    assert first["assetlake/layout"].value == {
        "cluster_by": ["id"], "properties": {"delta.enableChangeDataFeed": "true", "team.note": "nightly load"},
    }
    assert "assetlake/layout_changes" not in first

    again = materialize(project, lake_root, instance, header)
    assert "assetlake/layout_changes" not in again
    assert len(operations(spark, path)) == 1  # MERGE of no change, layout as declared: no commit

    changed = materialize(project, lake_root, instance, "-- cluster_by name, id\n-- properties delta.checkpointInterval=5")
    assert detail(spark, path)["clusteringColumns"] == ["name", "id"]
    assert detail(spark, path)["properties"]["delta.checkpointInterval"] == "5"
    assert [(c["change"], c["from"], c["to"]) for c in changed["assetlake/layout_changes"].value] == [
        ("cluster_by", ["id"], ["name", "id"]),
        ("properties", {"delta.checkpointInterval": None}, {"delta.checkpointInterval": "5"}),
    ]
    # A property no longer declared stays as it is (undone by hand, as documented).
    assert detail(spark, path)["properties"]["team.note"] == "nightly load"


#: A value of each property the grammar knows (a new property adds its own here).
SAMPLE_VALUES = {
    "delta.enableChangeDataFeed": "true",
    "delta.enableDeletionVectors": "true",
    "delta.enableRowTracking": "true",
    "delta.appendOnly": "false",
    "delta.autoOptimize.optimizeWrite": "true",
    "delta.autoOptimize.autoCompact": "true",
    "delta.checkpointInterval": "20",
    "delta.checkpointPolicy": "classic",
    "delta.logRetentionDuration": "interval 60 days",
    "delta.deletedFileRetentionDuration": "interval 14 days",
    "delta.setTransactionRetentionDuration": "interval 30 days",
    "delta.dataSkippingNumIndexedCols": "8",
    "delta.dataSkippingStatsColumns": "id,name",
    "delta.isolationLevel": "Serializable",
}


def test_every_property_the_grammar_knows_delta_accepts(spark, lake_root):
    assert set(SAMPLE_VALUES) == set(DELTA_PROPERTIES)
    path = f"{lake_root}/s/props"
    spark.createDataFrame([(1, "a")], "id INT, name STRING").write.format("delta").save(path)
    for name, value in SAMPLE_VALUES.items():
        accepts, _ = DELTA_PROPERTIES[name]
        assert accepts(value), name
        spark.sql(f"ALTER TABLE {path_identifier(path)} SET TBLPROPERTIES ('{name}' = '{value}')")
    properties = detail(spark, path)["properties"]
    assert {name: properties.get(name) for name in SAMPLE_VALUES} == SAMPLE_VALUES


def test_delta_refuses_a_property_it_does_not_know(spark, lake_root):
    """Why the grammar checks `delta.` keys at load: Delta would refuse them at the write."""
    path = f"{lake_root}/s/typo"
    spark.createDataFrame([(1,)], "id INT").write.format("delta").save(path)
    with pytest.raises(Exception, match="DELTA_UNKNOWN_CONFIGURATION"):
        spark.sql(f"ALTER TABLE {path_identifier(path)} SET TBLPROPERTIES ('delta.enableChangeDataFeeed' = 'true')")


def test_a_python_asset_takes_the_same_layout(spark, lake_root):
    from assetlake_dagster.defs.io_manager import DeltaIOManager
    from assetlake_dagster.defs.write_contract import managed_write
    from assetlake_dagster.defs.resources import SparkDeltaResource

    layout = managed_write("append", cluster_by=["day"], properties={"delta.appendOnly": "true"})

    @dg.asset(key=["py", "events"], metadata=layout)
    def events(spark: SparkDeltaResource):
        return spark.get_session().createDataFrame([(1, "2024-01-01")], "id INT, day STRING")

    resource = SparkDeltaResource(lake_root=lake_root)
    result = dg.materialize([events], resources={"spark": resource, "io_manager": DeltaIOManager(spark=resource)})
    table = detail(spark, f"{lake_root}/py/events")
    assert (table["clusteringColumns"], table["properties"]["delta.appendOnly"]) == (["day"], "true")
    metadata = result.get_asset_materialization_events()[0].step_materialization_data.materialization.metadata
    assert "assetlake/layout_changes" not in metadata  # all in the first commit
    assert operations(spark, f"{lake_root}/py/events") == [(0, "CREATE TABLE AS SELECT")]
