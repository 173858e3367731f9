"""Layer 4/5: a fixture project materialized through real Dagster runs on Spark + Delta."""

import json
import os

import dagster as dg
import pytest
from delta.tables import DeltaTable

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.defs.write_contract import managed_write
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster_tests.helpers import PROJECTS

PROJECT = os.path.join(PROJECTS, "pipeline")
ALL = ["src/people", "mart/people_clean", "mart/scores", "mart/score_log", "mart/manual_copy"]


@pytest.fixture
def project(spark, lake_root):
    """Definitions over a fresh lake, with the external table ext.weights created."""
    spark.createDataFrame([(1, 0.5), (2, 1.0), (3, 2.0)], "id BIGINT, weight DOUBLE").write.format(
        "delta"
    ).save(os.path.join(lake_root, "ext", "weights"))
    defs = build_definitions(PROJECT, lake_root=lake_root)
    return defs, lake_root


def run(defs, selection, instance, run_config=None, tags=None):
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        instance=instance,
        asset_selection=[dg.AssetKey(s.split("/")) for s in selection],
        run_config=run_config,
        tags=tags,
    )
    assert result.success
    return {
        e.asset_key.to_user_string(): e.step_materialization_data.materialization.metadata
        for e in result.get_asset_materialization_events()
    }


def delta_versions(spark, lake_root, table):
    return [r.version for r in DeltaTable.forPath(spark, os.path.join(lake_root, *table.split("/"))).history().collect()]


def test_definitions_shape(project):
    defs, _ = project
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == set(ALL) | {"ext/weights"}
    clean = defs.resolve_assets_def(dg.AssetKey(["mart", "people_clean"]))
    spec = next(iter(clean.specs))
    assert spec.group_name == "mart"
    assert spec.owners == ["alice@example.com"]
    assert spec.tags["tier"] == "gold"
    assert spec.kinds == {"spark", "delta", "sql", "silver"}
    assert spec.description.startswith("People with a display name.")
    assert spec.code_version and len(spec.code_version) >= 16
    assert {d.asset_key for d in spec.deps} == {dg.AssetKey(["src", "people"])}
    refs = spec.metadata["dagster/code_references"].code_references
    assert refs[0].file_path.endswith("people_clean.sql")
    scores = next(iter(defs.resolve_assets_def(dg.AssetKey(["mart", "scores"])).specs))
    assert {d.asset_key for d in scores.deps} == {
        dg.AssetKey(["mart", "people_clean"]),
        dg.AssetKey(["ext", "weights"]),
    }
    external = graph.get(dg.AssetKey(["ext", "weights"]))
    assert not external.is_materializable


def test_materialize_all_twice(spark, project):
    defs, lake_root = project
    instance = dg.DagsterInstance.ephemeral()
    first = run(defs, ALL, instance)
    assert set(first) == set(ALL)

    clean = first["mart/people_clean"]
    assert clean["delta/version"].value == 0
    assert clean["dagster/row_count"].value == 3
    assert clean["dagster/table_name"].value == "spark_catalog.mart.people_clean"
    assert clean["dagster/uri"].value == os.path.join(os.path.realpath(lake_root), "mart", "people_clean")
    assert [c.name for c in clean["dagster/column_schema"].schema.columns] == [
        "id", "display_name", "score", "active", "born", "seen_at"
    ]
    assert clean["assetlake/upstream_versions"].value == {"delta://src/people": 0}
    assert "| id | display_name |" in clean["assetlake/preview"].value
    # people_clean's description is its table comment from its one first commit.
    assert clean["delta/operation"].value == "CREATE TABLE AS SELECT"

    scores = first["mart/scores"]
    assert scores["assetlake/upstream_versions"].value == {
        "delta://ext/weights": 0,
        "delta://mart/people_clean": 0,
    }
    label = spark.read.format("delta").load(os.path.join(lake_root, "mart", "scores")).select("label").distinct().collect()
    assert [r.label for r in label] == ["scored"]

    # Second run: nothing the SQL files read changed, so they are skipped (the Python asset
    # src/people runs, and its merge finds nothing to change); the manual file runs.
    second = run(defs, ALL, instance)
    assert second["src/people"]["delta/committed"].value is False
    for table in ("mart/people_clean", "mart/scores", "mart/score_log"):
        assert second[table]["delta/committed"].value is False
        assert "inputs unchanged since version 0" in second[table]["assetlake/skipped"].value
    assert delta_versions(spark, lake_root, "mart/people_clean") == [0]
    assert delta_versions(spark, lake_root, "mart/scores") == [0]
    assert second["mart/score_log"]["dagster/row_count"].value == 1

    # Forced: merges find nothing to change (no version), replace rewrites, append appends.
    forced = run(defs, ALL[1:4], instance, tags={"assetlake/force": "true"})
    assert forced["mart/people_clean"]["delta/committed"].value is False
    assert forced["mart/people_clean"]["delta/version"].value == 0
    assert delta_versions(spark, lake_root, "mart/people_clean") == [0]
    assert delta_versions(spark, lake_root, "mart/scores") == [1, 0]
    assert forced["mart/score_log"]["dagster/row_count"].value == 2

    # The manual file wrote its own table inside the lake; its version is recorded.
    manual = second["mart/manual_copy"]
    assert manual["delta/version"].value == 2  # CREATE, INSERT, INSERT
    assert manual["dagster/row_count"].value == 6
    assert manual["dagster/uri"].value == os.path.join(os.path.realpath(lake_root), "mart", "manual_copy")


def test_pandas_nulls_survive_both_ways(spark, project):
    defs, lake_root = project
    instance = dg.DagsterInstance.ephemeral()
    run(defs, ["src/people"], instance)
    row = spark.read.format("delta").load(os.path.join(lake_root, "src", "people")).where("id = 2").first()
    assert row.asDict() == {
        "id": 2, "name": None, "score": None, "active": None, "born": None, "seen_at": None
    }

    import pandas as pd

    seen = {}

    @dg.asset(deps=[], ins={"people": dg.AssetIn(key=["src", "people"])})
    def consumer(people: pd.DataFrame) -> None:
        seen["df"] = people
        return None

    dg.materialize(
        [consumer, *[a for a in [defs.resolve_assets_def(dg.AssetKey(["src", "people"]))]]],
        selection=[consumer],
        resources=defs.resources,
        instance=instance,
    )
    df = seen["df"].sort_values("id").reset_index(drop=True)
    assert df.loc[1, "name"] is None or pd.isna(df.loc[1, "name"])
    assert df["name"].tolist()[0] == "ann" and df["name"].tolist()[2] == "cy"
    assert df["name"].isna().tolist() == [False, True, False]
    assert df["score"].isna().tolist() == [False, True, False]
    assert df["born"].isna().tolist() == [False, True, False]
    assert "NaN" not in [str(v) for v in df["name"].tolist() if v is not None and not pd.isna(v)]


def test_sql_arguments_come_from_run_config(spark, project):
    defs, lake_root = project
    instance = dg.DagsterInstance.ephemeral()
    run(defs, ["src/people", "mart/people_clean"], instance)
    config = {"ops": {"sql__mart__scores": {"config": {"min_score": 2.0, "label": "x' OR '1'='1"}}}}
    run(defs, ["mart/scores"], instance, run_config=config)
    out = spark.read.format("delta").load(os.path.join(lake_root, "mart", "scores")).collect()
    assert sorted((r.id, r.label) for r in out) == [(3, "x' OR '1'='1")]


def test_missing_upstream_table_fails_with_a_clear_message(spark, lake_root):
    defs = build_definitions(PROJECT, lake_root=lake_root)
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        asset_selection=[dg.AssetKey(["mart", "scores"])],
        raise_on_error=False,
    )
    assert not result.success
    failure = result.get_step_failure_events()[0].event_specific_data.error
    assert "upstream table(s) delta://ext/weights, delta://mart/people_clean have no Delta table" in failure.message


def test_python_asset_merge_with_spark_dataframe(spark, lake_root):
    @dg.asset(key=["py", "things"], metadata=managed_write("merge", key=["id"]))
    def things(spark: SparkDeltaResource):
        return spark.get_session().createDataFrame([(1, "a"), (2, "b")], "id INT, v STRING")

    resource = SparkDeltaResource(lake_root=lake_root)
    from assetlake_dagster.defs.io_manager import DeltaIOManager

    resources = {"spark": resource, "io_manager": DeltaIOManager(spark=resource)}
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([things], resources=resources, instance=instance)
    meta = result.get_asset_materialization_events()[0].step_materialization_data.materialization.metadata
    assert meta["delta/version"].value == 0 and meta["assetlake/strategy"].value == "merge"
    history = DeltaTable.forPath(spark, os.path.join(lake_root, "py", "things")).history().collect()
    stamp = json.loads(history[0]["userMetadata"])["assetlake"]
    assert stamp.pop("writer").split(":")[-2] == str(os.getpid())  # the process that wrote it
    assert stamp == {
        "run_id": result.run_id, "root_run_id": result.run_id, "asset": "py/things", "partition": None
    }


def test_each_sql_asset_has_its_own_session(spark, tmp_path, lake_root):
    """A SET and a temp view in one file's setup reach no other asset of the same run."""
    project = tmp_path / "scoped"
    project.mkdir()
    (project / "a.sql").write_text(
        "-- materialize delta://s/a\n\n"
        "SET spark.sql.session.timeZone=America/New_York;\n"
        "CREATE TEMP VIEW shared_name AS SELECT 'from a' AS origin;\n"
        "SELECT current_timezone() AS tz, origin FROM shared_name\n"
    )
    (project / "b.sql").write_text(
        "-- materialize delta://s/b\n-- on delta://s/a\n\n"
        "SELECT current_timezone() AS tz,\n"
        "       (SELECT count(*) FROM s.a) AS upstream_rows\n"
    )
    defs = build_definitions(str(project), lake_root=lake_root)
    run(defs, ["s/a", "s/b"], dg.DagsterInstance.ephemeral())
    read = lambda t: spark.read.format("delta").load(os.path.join(lake_root, "s", t)).collect()  # noqa: E731
    assert [(r.tz, r.origin) for r in read("a")] == [("America/New_York", "from a")]
    assert [(r.tz, r.upstream_rows) for r in read("b")] == [("UTC", 1)]
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert "shared_name" not in [t.name for t in spark.catalog.listTables()]
