"""Dev lakes that read prod (``defer_to`` / ``ASSETLAKE_DEFER_TO``), through Dagster runs.

A prod lake holds the upstream tables; a dev lake holds none. A dev run of one asset reads
its upstreams from prod, pinned to a version for the run, writes only to the dev lake, and
records what it read from where. Prod's tables are untouched.
"""

import os

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.defs.resources import SparkDeltaResource

MID = "-- materialize delta://s/mid key=id\n\nSELECT id, name FROM raw.src\n"
TOP = (
    "-- materialize delta://s/top\n\n"
    "SELECT m.id, m.name, d.tier FROM s.mid m LEFT JOIN s.dim_current d ON d.id = m.id\n"
)


def delta_versions(spark, path):
    return [r.version for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version").collect()]


def save(spark, path, rows, schema, mode="overwrite"):
    spark.createDataFrame(rows, schema).write.format("delta").mode(mode).save(path)


@pytest.fixture
def lakes(spark, tmp_path):
    """A prod lake with s.mid at versions 0 and 1 and a history table s.dim; an empty dev lake."""
    prod, dev = str(tmp_path / "prod"), str(tmp_path / "dev")
    save(spark, f"{prod}/s/mid", [(1, "old")], "id INT, name STRING")
    save(spark, f"{prod}/s/mid", [(1, "ann"), (2, "bob")], "id INT, name STRING")
    history = "id INT, tier STRING, valid_from TIMESTAMP, valid_to TIMESTAMP, is_current BOOLEAN"
    save(spark, f"{prod}/s/dim", [(1, "bronze", None, None, False), (1, "gold", None, None, True)], history)
    project = tmp_path / "project"
    project.mkdir()
    (project / "mid.sql").write_text(MID)
    (project / "top.sql").write_text(TOP)
    return prod, dev, str(project)


def run_top(project, dev, prod, instance=None, **kwargs):
    resource = SparkDeltaResource(lake_root=dev, defer_to=prod)
    defs = build_definitions(project, spark=resource)
    job = defs.resolve_implicit_global_asset_job_def()
    instance = instance or dg.DagsterInstance.ephemeral()
    return job.execute_in_process(asset_selection=[dg.AssetKey(["s", "top"])], instance=instance, **kwargs)


def test_a_dev_run_reads_missing_upstreams_from_prod_and_writes_only_dev(spark, lakes):
    prod, dev, project = lakes
    before = {t: delta_versions(spark, f"{prod}/s/{t}") for t in ("mid", "dim")}
    instance = dg.DagsterInstance.ephemeral()
    result = run_top(project, dev, prod, instance)
    assert result.success
    rows = spark.sql(f"SELECT id, name, tier FROM delta.`{dev}/s/top`").collect()
    # prod's latest s.mid (version 1) and the current rows of prod's s.dim
    assert sorted(tuple(r) for r in rows) == [(1, "ann", "gold"), (2, "bob", None)]
    (materialization,) = result.asset_materializations_for_node("sql__s__top")
    assert materialization.metadata["assetlake/deferred_inputs"].value == {
        "delta://s/mid": {"lake": prod, "version": 1},
        "delta://s/dim_current": {"lake": prod, "version": 0},
    }
    assert materialization.metadata["assetlake/upstream_versions"].value == {}  # nothing read from dev
    # The versions read are pinned on the run, for its later steps (and the UI).
    tags = instance.get_run_by_id(result.run_id).tags
    assert (tags["assetlake/deferred/s.mid"], tags["assetlake/deferred/s.dim"]) == ("1", "0")
    assert {t: delta_versions(spark, f"{prod}/s/{t}") for t in ("mid", "dim")} == before  # prod untouched
    assert not os.path.exists(f"{prod}/s/top") and not os.path.exists(f"{dev}/s/mid")


def test_the_version_recorded_for_the_run_is_the_one_read(spark, lakes):
    """A run whose first reader pinned s.mid at version 0 reads version 0, though prod moved on."""
    prod, dev, project = lakes
    result = run_top(project, dev, prod, tags={"assetlake/deferred/s.mid": "0"})
    assert result.success
    assert [tuple(r) for r in spark.sql(f"SELECT id, name FROM delta.`{dev}/s/top`").collect()] == [(1, "old")]
    (materialization,) = result.asset_materializations_for_node("sql__s__top")
    assert materialization.metadata["assetlake/deferred_inputs"].value["delta://s/mid"]["version"] == 0


def test_a_table_the_dev_lake_has_is_read_from_dev(spark, lakes):
    prod, dev, project = lakes
    save(spark, f"{dev}/s/mid", [(9, "dev")], "id INT, name STRING")
    result = run_top(project, dev, prod)
    assert result.success
    assert [tuple(r) for r in spark.sql(f"SELECT id, name FROM delta.`{dev}/s/top`").collect()] == [(9, "dev")]
    (materialization,) = result.asset_materializations_for_node("sql__s__top")
    assert set(materialization.metadata["assetlake/deferred_inputs"].value) == {"delta://s/dim_current"}


def test_deferring_to_the_lake_itself_is_refused(lakes):
    prod, _, _ = lakes
    with pytest.raises(ConfigError, match="is the lake root itself"):
        SparkDeltaResource(lake_root=prod, defer_to=prod).defer_lake


def test_plan_changed_lists_files_that_differ_from_what_prod_ran_and_their_downstream(spark, tmp_path, capsys):
    from assetlake_dagster.cli.main import main

    prod = str(tmp_path / "prod")
    save(spark, f"{prod}/raw/src", [(1, "ann")], "id INT, name STRING")
    project = tmp_path / "project"
    project.mkdir()
    (project / "mid.sql").write_text(MID)
    (project / "top.sql").write_text("-- materialize delta://s/top\n\nSELECT id, name FROM s.mid\n")
    defs = build_definitions(str(project), spark=SparkDeltaResource(lake_root=prod))
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=dg.DagsterInstance.ephemeral()).success

    def changed():
        assert main(["plan", "--changed", "--against", prod, "--project-dir", str(project)]) == 0
        return capsys.readouterr().out

    assert changed() == f"nothing changed: every file's code version is the one {prod} last ran\n"
    (project / "mid.sql").write_text(MID + "WHERE id > 0\n")
    (project / "new.sql").write_text("-- materialize delta://s/new\n\nSELECT 1 AS id\n")
    out = changed().splitlines()
    assert out[0] == f"changed against {prod} (code versions):"
    assert out[1].startswith("  delta://s/mid  mid.sql: ran ") and ", now " in out[1]
    assert out[2:] == ["  delta://s/new  new.sql: not in that lake yet", "stale downstream:", "  delta://s/top (from delta://s/mid)"]


def test_python_inputs_and_relationships_tests_read_prod_too(spark, lakes, tmp_path):
    """A Python asset's input loaded by the IO manager, and a relationships test's table."""
    from assetlake_dagster.defs.io_manager import DeltaIOManager
    from assetlake_dagster.defs.write_contract import managed_write

    prod, dev, project = lakes
    (tmp_path / "project" / "checked.sql").write_text(
        "-- materialize delta://s/checked\n-- data_test relationships id -> delta://s/mid.id\n\nSELECT 2 AS id\n"
    )
    resource = SparkDeltaResource(lake_root=dev, defer_to=prod)

    @dg.asset(key=["s", "py"], deps=[], metadata=managed_write("replace"), ins={"mid": dg.AssetIn(key=["s", "mid"])})
    def py(mid):
        return mid.selectExpr("id", "upper(name) AS name")

    mid_source = dg.AssetSpec(key=["s", "mid"], metadata=managed_write("merge", key=["id"]))
    defs = dg.Definitions(assets=[py, mid_source], resources={"spark": resource, "io_manager": DeltaIOManager(spark=resource)})
    instance = dg.DagsterInstance.ephemeral()
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, asset_selection=[dg.AssetKey(["s", "py"])])
    assert result.success
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM delta.`{dev}/s/py`").collect()) == [(1, "ANN"), (2, "BOB")]
    assert instance.get_run_by_id(result.run_id).tags["assetlake/deferred/s.mid"] == "1"

    sql_defs = build_definitions(project, spark=resource)
    checked = sql_defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[dg.AssetKey(["s", "checked"])]
    )
    assert checked.success
    (evaluation,) = [e.asset_check_evaluation_data for e in checked.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert evaluation.passed  # id 2 is in prod's s.mid (version 1), though the dev lake has no s.mid
