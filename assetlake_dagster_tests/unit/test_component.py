"""AssetlakeProjectComponent: a defs.yaml loaded as ``dg`` loads it (Dagster's component
sandbox, no Spark), compared with what ``build_definitions`` makes of the same folder.
"""

import os
import shutil
import textwrap
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster.components.testing import create_defs_folder_sandbox

from assetlake_dagster import AssetlakeProjectComponent, ConfigError, ProjectError, SparkDeltaResource, build_definitions
from assetlake_dagster.defs.component import COMPONENT_IO_MANAGER_KEY, EXAMPLE_SQL
from assetlake_dagster_tests.helpers import REPO

PROJECTS = os.path.join(REPO, "assetlake_dagster_tests", "projects")
TYPE = "assetlake_dagster.AssetlakeProjectComponent"


def _write_component(defs_folder: Path, name: str, attributes: dict, sql: dict[str, str]) -> Path:
    path = defs_folder / name
    (path / "sql").mkdir(parents=True)
    (path / "defs.yaml").write_text(yaml.safe_dump({"type": TYPE, "attributes": attributes}))
    for file, text in sql.items():
        (path / "sql" / file).write_text(textwrap.dedent(text))
    return path


def _names(defs: dg.Definitions) -> dict:
    """What a ``dg list defs`` shows: assets, checks, jobs, schedules, sensors."""
    repo = defs.get_repository_def()
    return {
        "assets": sorted(spec.key.to_user_string() for spec in defs.resolve_all_asset_specs()),
        "checks": sorted(key.to_user_string() for key in repo.asset_graph.asset_check_keys),
        "jobs": sorted(job.name for job in repo.get_all_jobs() if not job.name.startswith("__")),
        "schedules": sorted(s.name for s in repo.schedule_defs),
        "sensors": sorted(s.name for s in repo.sensor_defs),
    }


def test_scaffold_writes_a_defs_yaml_and_an_example_sql_file_that_load():
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=AssetlakeProjectComponent, defs_path="lake")
        assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == ["defs.yaml", "sql", "sql/example.sql"]
        assert yaml.safe_load((path / "defs.yaml").read_text())["attributes"] == {"project": "sql"}
        assert (path / "sql" / "example.sql").read_text() == EXAMPLE_SQL
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            assert isinstance(component, AssetlakeProjectComponent)
            assert _names(defs)["assets"] == ["analytics/example"]


@pytest.mark.parametrize("fixture", ["automation", "audited"])
def test_the_component_has_what_build_definitions_makes_of_the_folder(fixture):
    """Assets, checks, jobs, schedules and sensors (the automation and watch ones) as
    build_definitions has them; resources under their own keys and no executor."""
    expected = build_definitions(os.path.join(PROJECTS, fixture), lake_root="/tmp/lake")
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.defs_folder_path / "lake"
        shutil.copytree(os.path.join(PROJECTS, fixture), path / "sql")
        (path / "defs.yaml").write_text(
            yaml.safe_dump({"type": TYPE, "attributes": {"project": "sql", "lake_root": "/tmp/lake"}})
        )
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            names = _names(defs)
            assert names == _names(expected)
            assert names["sensors"]  # automation; watch of the external tables
            assert names["schedules" if fixture == "automation" else "checks"]
            assert set(defs.resources) == {"spark", COMPONENT_IO_MANAGER_KEY}
            assert defs.executor is None
            for spec in defs.resolve_all_asset_specs():  # SQL assets write, external ones load, through it
                assets_def = defs.resolve_assets_def(spec.key)
                assert assets_def.get_io_manager_key_for_asset_key(spec.key) == COMPONENT_IO_MANAGER_KEY


def test_build_definitions_keeps_the_default_io_manager_and_the_in_process_executor():
    """Existing callers of the Pythonic API see no change."""
    defs = build_definitions(os.path.join(PROJECTS, "audited"), lake_root="/tmp/lake")
    assert set(defs.resources) == {"spark", "io_manager"}
    assert defs.executor is dg.in_process_executor
    key = dg.AssetKey(["mart", "orders"])
    assert defs.resolve_assets_def(key).get_io_manager_key_for_asset_key(key) == "io_manager"


def test_attributes_reach_the_spark_resource():
    attributes = {
        "project": "sql",
        "lake_root": "/data/lake",
        "spark": {"master": "local[2]", "spark_conf": {"spark.sql.shuffle.partitions": "4"}, "deletion_vectors": True},
        "io_manager_key": "lake_io",
    }
    with create_defs_folder_sandbox() as sandbox:
        path = _write_component(sandbox.defs_folder_path, "lake", attributes, {"example.sql": EXAMPLE_SQL})
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            spark = defs.resources["spark"]
            assert isinstance(spark, SparkDeltaResource)
            assert (spark.lake_root, spark.master, spark.deletion_vectors) == ("/data/lake", "local[2]", True)
            assert spark.spark_conf == {"spark.sql.shuffle.partitions": "4"}
            assert spark.mode is None and spark.app_name == "assetlake"  # unset: the resource's defaults
            assert set(defs.resources) == {"spark", "lake_io"}


def test_every_resource_setting_is_a_defs_yaml_setting():
    from assetlake_dagster.defs.component import SparkSettings

    # Derived from the resource: a setting added there is one here (lake_root is the component's own).
    assert set(SparkSettings.model_fields) == set(SparkDeltaResource.model_fields) - {"lake_root"}
    for name, field in SparkSettings.model_fields.items():
        assert field.default is None and field.description == SparkDeltaResource.model_fields[name].description, name
    attributes = {
        "project": "sql",
        "lake_root": "/data/lake",
        "spark": {"catalog": "hive", "hive_metastore_uris": "thrift://127.0.0.1:9083", "defer_to": "/data/prod"},
    }
    with create_defs_folder_sandbox() as sandbox:
        path = _write_component(sandbox.defs_folder_path, "lake", attributes, {"example.sql": EXAMPLE_SQL})
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            spark = defs.resources["spark"]
            assert (spark.catalog, spark.hive_metastore_uris, spark.defer_to) == ("hive", "thrift://127.0.0.1:9083", "/data/prod")


def test_translation_templates_see_the_file_and_deps_follow_a_changed_key():
    attributes = {
        "project": "sql",
        "translation": {
            "key_prefix": "lake",
            "group_name": "lake_{{ schema }}",
            "owners": ["team:data"],
            "tags": {"file": "{{ file }}"},
            "description": "{{ table }} from {{ sql.materialize.uri }}",
            "metadata": {"source": "assetlake"},
        },
    }
    sql = {
        "orders.sql": """\
            -- materialize delta://sales/orders
            -- tags layer=core
            SELECT 1 AS id
        """,
        "totals.sql": """\
            -- materialize delta://mart/totals
            SELECT count(*) AS n FROM sales.orders
        """,
    }
    with create_defs_folder_sandbox() as sandbox:
        path = _write_component(sandbox.defs_folder_path, "lake", attributes, sql)
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            specs = {spec.key: spec for spec in defs.resolve_all_asset_specs()}
            orders, totals = specs[dg.AssetKey(["lake", "sales", "orders"])], specs[dg.AssetKey(["lake", "mart", "totals"])]
            assert (orders.group_name, totals.group_name) == ("lake_sales", "lake_mart")
            assert orders.owners == ["team:data"]
            assert orders.tags["file"] == "orders" and orders.tags["layer"] == "core"  # merged
            assert orders.description == "orders from delta://sales/orders"
            assert orders.metadata["source"] == "assetlake"
            assert "assetlake/write" in orders.metadata  # the write contract stays
            assert [dep.asset_key for dep in totals.deps] == [orders.key]
            assert sorted(k.to_user_string() for k in specs) == ["lake/mart/totals", "lake/sales/orders"]


def test_post_processing_applies_to_the_assets():
    with create_defs_folder_sandbox() as sandbox:
        path = _write_component(sandbox.defs_folder_path, "lake", {"project": "sql"}, {"example.sql": EXAMPLE_SQL})
        body = yaml.safe_load((path / "defs.yaml").read_text())
        body["post_processing"] = {"assets": [{"target": "*", "attributes": {"group_name": "processed"}}]}
        (path / "defs.yaml").write_text(yaml.safe_dump(body))
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            assert [spec.group_name for spec in defs.resolve_all_asset_specs()] == ["processed"]


def test_beside_a_plain_asset_with_its_own_io_manager():
    """The project's io_manager and executor stay the project's; the plain asset keeps them."""
    plain = textwrap.dedent("""\
        import dagster as dg

        @dg.asset
        def plain():
            return 1

        @dg.definitions
        def defs():
            return dg.Definitions(
                assets=[plain],
                resources={"io_manager": dg.mem_io_manager},
                executor=dg.multiprocess_executor,
            )
    """)
    with create_defs_folder_sandbox() as sandbox:
        _write_component(sandbox.defs_folder_path, "lake", {"project": "sql"}, {"example.sql": EXAMPLE_SQL})
        (sandbox.defs_folder_path / "plain").mkdir()
        (sandbox.defs_folder_path / "plain" / "defs.py").write_text(plain)
        with sandbox.build_all_defs() as defs:
            assert set(defs.resources) == {"spark", COMPONENT_IO_MANAGER_KEY, "io_manager"}
            assert defs.resources["io_manager"] is dg.mem_io_manager
            assert defs.executor is dg.multiprocess_executor
            assert defs.resolve_assets_def("plain").get_io_manager_key_for_asset_key(dg.AssetKey("plain")) == "io_manager"
            assert _names(defs)["assets"] == ["analytics/example", "plain"]


def test_beside_a_spark_resource_of_the_projects_own_under_another_key():
    """A project whose ``spark`` is its own (dagster-pyspark's, say) gives the component another key."""
    own = textwrap.dedent("""\
        import dagster as dg

        @dg.asset(required_resource_keys={"spark"})
        def plain():
            return 1

        @dg.definitions
        def defs():
            return dg.Definitions(assets=[plain], resources={"spark": dg.ResourceDefinition.hardcoded_resource("own")})
    """)
    with create_defs_folder_sandbox() as sandbox:
        attributes = {"project": "sql", "spark_resource_key": "assetlake_spark"}
        _write_component(sandbox.defs_folder_path, "lake", attributes, {"example.sql": EXAMPLE_SQL})
        (sandbox.defs_folder_path / "plain").mkdir()
        (sandbox.defs_folder_path / "plain" / "defs.py").write_text(own)
        with sandbox.build_all_defs() as defs:
            assert set(defs.resources) == {"spark", "assetlake_spark", COMPONENT_IO_MANAGER_KEY}
            assert defs.resources["spark"].resource_fn(None) == "own"
            assert isinstance(defs.resources["assetlake_spark"], SparkDeltaResource)
            example = defs.resolve_assets_def(dg.AssetKey(["analytics", "example"]))
            assert example.required_resource_keys == {"assetlake_spark", COMPONENT_IO_MANAGER_KEY}


def test_an_error_in_the_sql_is_located():
    sql = {"bad.sql": "-- materialize delta://sales/orders kye=id\nSELECT 1 AS id\n"}
    with create_defs_folder_sandbox() as sandbox:
        path = _write_component(sandbox.defs_folder_path, "lake", {"project": "sql"}, sql)
        with pytest.raises(Exception) as raised:
            with sandbox.load_component_and_build_defs(defs_path=path):
                pass
        error = raised.value
        while not isinstance(error, ProjectError) and error.__cause__ is not None:
            error = error.__cause__
        assert isinstance(error, ProjectError)
        assert "bad.sql:1:" in str(error) and "kye=id" in str(error)


def test_an_error_in_the_defs_yaml_is_located():
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.defs_folder_path / "lake"
        path.mkdir()
        (path / "defs.yaml").write_text(f"type: {TYPE}\nattributes:\n  project: sql\n  lake_rot: /data/lake\n")
        with pytest.raises(Exception) as raised:
            with sandbox.load_component_and_build_defs(defs_path=path):
                pass
        # Dagster's own error names the component; its cause, the attribute and the line.
        assert "lake" in str(raised.value)
        assert "`attributes.lake_rot at " in str(raised.value.__cause__)
        assert "defs.yaml:4`" in str(raised.value.__cause__)


def test_dg_finds_the_component_through_the_registry_modules_entry_point():
    """setup.cfg's dagster_dg_cli.registry_modules entry point (the installed package's)."""
    from dagster.components.core.package_entry import discover_entry_point_package_objects

    found = {key.to_typename(): obj for key, obj in discover_entry_point_package_objects().items()}
    assert found[TYPE] is AssetlakeProjectComponent
    assert [name for name in found if name.startswith("assetlake_dagster.")] == [TYPE]


def _two_components(sandbox, sql_a: str, sql_b: str, spark_b: dict | None = None) -> None:
    _write_component(sandbox.defs_folder_path, "lake_a", {"project": "sql"}, {"a.sql": sql_a})
    attributes_b = {"project": "sql", **({"spark": spark_b} if spark_b else {})}
    _write_component(sandbox.defs_folder_path, "lake_b", attributes_b, {"b.sql": sql_b})


def test_two_components_of_one_lake_share_its_resources():
    """Dagster merges resources under one key only when they are the same object."""
    with create_defs_folder_sandbox() as sandbox:
        _two_components(
            sandbox,
            "-- materialize delta://sales/orders\nSELECT 1 AS id\n",
            "-- materialize delta://mart/totals\nSELECT 1 AS n\n",
        )
        with sandbox.build_all_defs() as defs:
            assert _names(defs)["assets"] == ["mart/totals", "sales/orders"]
            assert set(defs.resources) == {"spark", COMPONENT_IO_MANAGER_KEY}
            assert defs.resources[COMPONENT_IO_MANAGER_KEY].spark is defs.resources["spark"]


def test_two_components_on_two_spellings_of_one_bucket_share_one_resource():
    """One lake, one identity: ``S3://Bucket//lake/`` is ``s3a://bucket/lake``, so the two
    components are one lake (one resource, so one warm engine), not a settings conflict."""
    with create_defs_folder_sandbox() as sandbox:
        _write_component(sandbox.defs_folder_path, "lake_a", {"project": "sql", "lake_root": "s3a://bucket/lake"},
                         {"a.sql": "-- materialize delta://sales/orders\nSELECT 1 AS id\n"})
        _write_component(sandbox.defs_folder_path, "lake_b", {"project": "sql", "lake_root": "S3://Bucket//lake/"},
                         {"b.sql": "-- materialize delta://mart/totals\nSELECT 1 AS n\n"})
        with sandbox.build_all_defs() as defs:
            assert _names(defs)["assets"] == ["mart/totals", "sales/orders"]
            assert set(defs.resources) == {"spark", COMPONENT_IO_MANAGER_KEY}
            assert defs.resources["spark"].lake.root == "s3a://bucket/lake"


def test_two_components_with_different_spark_settings_under_one_key_are_refused_by_name():
    with create_defs_folder_sandbox() as sandbox:
        _two_components(
            sandbox,
            "-- materialize delta://sales/orders\nSELECT 1 AS id\n",
            "-- materialize delta://mart/totals\nSELECT 1 AS n\n",
            spark_b={"master": "local[2]"},
        )
        with pytest.raises(Exception) as raised:
            with sandbox.build_all_defs():
                pass
        error = raised.value
        while not isinstance(error, ConfigError) and error.__cause__ is not None:
            error = error.__cause__
        assert isinstance(error, ConfigError), raised.value
        assert "lake_a and " in str(error) or "lake_b and " in str(error)
        assert "under the same resource key 'assetlake_io_manager', 'spark'" in str(error)
        assert "spark_resource_key: and io_manager_key:" in str(error)


def test_two_components_with_different_spark_settings_and_keys_of_their_own_load():
    with create_defs_folder_sandbox() as sandbox:
        _write_component(sandbox.defs_folder_path, "lake_a", {"project": "sql"}, {"a.sql": "-- materialize delta://sales/orders\nSELECT 1 AS id\n"})
        attributes_b = {"project": "sql", "spark": {"master": "local[2]"}, "spark_resource_key": "spark_b", "io_manager_key": "io_b"}
        _write_component(sandbox.defs_folder_path, "lake_b", attributes_b, {"b.sql": "-- materialize delta://mart/totals\nSELECT 1 AS n\n"})
        with sandbox.build_all_defs() as defs:
            assert set(defs.resources) == {"spark", COMPONENT_IO_MANAGER_KEY, "spark_b", "io_b"}
            assert defs.resources["spark_b"].master == "local[2]" and defs.resources["spark"].master is None
            totals = defs.resolve_assets_def(dg.AssetKey(["mart", "totals"]))
            assert totals.required_resource_keys == {"spark_b", "io_b"}


def _project_error(raised: pytest.ExceptionInfo) -> ProjectError:
    """The ProjectError under Dagster's "Error while building definitions for ..." wrappers."""
    error = raised.value
    while not isinstance(error, ProjectError) and error.__cause__ is not None:
        error = error.__cause__
    assert isinstance(error, ProjectError), raised.value
    return error


def test_the_same_table_in_two_components_is_a_located_error_naming_both_files():
    with create_defs_folder_sandbox() as sandbox:
        _two_components(sandbox, EXAMPLE_SQL, EXAMPLE_SQL)
        with pytest.raises(Exception) as raised:
            with sandbox.build_all_defs() as defs:
                defs.get_repository_def()
        message = str(_project_error(raised))
        # Whichever component builds first reports it, at its -- materialize line.
        mine, other = ("lake_a", "lake_b") if "lake_a/sql/a.sql:1:" in message else ("lake_b", "lake_a")
        assert f"{mine}/sql/{mine[-1]}.sql:1:16: delta://analytics/example is also materialized by " in message
        assert f"{other}/sql/{other[-1]}.sql:1:16 (the component " in message and message.count(f"{other})") == 1
        assert "A table has exactly one producer in a code location" in message


def test_a_table_one_component_writes_and_another_reads_is_one_asset_and_its_dep():
    """Not an external asset in the reader too (Dagster: 'Duplicate asset key'), whichever
    component builds first; the dep follows the writer's translated key."""
    with create_defs_folder_sandbox() as sandbox:
        _write_component(
            sandbox.defs_folder_path, "lake_a", {"project": "sql", "translation": {"key_prefix": "a"}},
            {"orders.sql": "-- materialize delta://sales/orders\nSELECT 1 AS id\n"},
        )
        _write_component(
            sandbox.defs_folder_path, "lake_b", {"project": "sql"},
            {"totals.sql": "-- materialize delta://mart/totals\nSELECT count(*) AS n FROM sales.orders JOIN raw.events ON true\n"},
        )
        with sandbox.build_all_defs() as defs:
            names = _names(defs)
            assert names["assets"] == ["a/sales/orders", "mart/totals", "raw/events"]  # raw.events: external
            totals = next(s for s in defs.resolve_all_asset_specs() if s.key == dg.AssetKey(["mart", "totals"]))
            assert sorted(dep.asset_key.to_user_string() for dep in totals.deps) == ["a/sales/orders", "raw/events"]
            # The reader's watch sensor watches only what no component produces.
            watch = next(s for s in defs.get_repository_def().sensor_defs if "watch" in s.name)
            assert "external tables delta://raw/events (no Spark)" in watch.description


def test_an_asset_key_two_components_translate_to_is_a_located_error():
    with create_defs_folder_sandbox() as sandbox:
        for name, table in (("lake_a", "sales/orders"), ("lake_b", "mart/orders")):
            _write_component(
                sandbox.defs_folder_path, name, {"project": "sql", "translation": {"key": "{{ table }}"}},
                {"orders.sql": f"-- materialize delta://{table}\nSELECT 1 AS id\n"},
            )
        with pytest.raises(Exception) as raised:
            with sandbox.build_all_defs() as defs:
                defs.get_repository_def()
        message = str(_project_error(raised))
        assert "orders.sql:1:16: the asset key orders is also delta://" in message
        assert "change one project's translation of the key" in message


def test_source_freshness_gives_the_external_tables_a_freshness_check():
    attributes = {"project": "sql", "source_freshness": {"raw.events": "fail=2h"}}
    sql = {"totals.sql": "-- materialize delta://mart/totals\nSELECT count(*) AS n FROM raw.events\n"}
    with create_defs_folder_sandbox() as sandbox:
        path = _write_component(sandbox.defs_folder_path, "lake", attributes, sql)
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            assert _names(defs)["checks"] == ["raw/events:freshness_check"]
            assert "assetlake_freshness_checks" in _names(defs)["sensors"]


def test_two_components_with_one_group_automation_and_external_tables_load_with_names_of_their_own():
    """Each makes its group job, schedule and sensors: with a sibling, under its folder's name;
    its automation sensor and group job target its own assets (not the other's, nor a plain asset)."""
    sql = """\
        -- materialize delta://analytics/{table}
        -- automation eager
        -- schedule 0 6 * * *
        SELECT count(*) AS n FROM raw.{source}
    """
    plain = textwrap.dedent("""\
        import dagster as dg

        @dg.asset(automation_condition=dg.AutomationCondition.eager())
        def plain():
            return 1
    """)
    with create_defs_folder_sandbox() as sandbox:
        _write_component(sandbox.defs_folder_path, "lake_a", {"project": "sql"}, {"a.sql": sql.format(table="a", source="events")})
        _write_component(sandbox.defs_folder_path, "lake_b", {"project": "sql"}, {"b.sql": sql.format(table="b", source="clicks")})
        (sandbox.defs_folder_path / "plain.py").write_text(plain)
        with sandbox.build_all_defs() as defs:
            names = _names(defs)
            assert names["jobs"] == [
                "analytics__a_schedule_job__lake_a", "analytics__b_schedule_job__lake_b", "analytics_job__lake_a", "analytics_job__lake_b",
            ]
            assert names["schedules"] == ["analytics__a_schedule__lake_a", "analytics__b_schedule__lake_b"]
            assert names["sensors"] == [
                "assetlake_automation_sensor__lake_a", "assetlake_automation_sensor__lake_b",
                "assetlake_watch_external_tables__lake_a", "assetlake_watch_external_tables__lake_b",
                "default_automation_condition_sensor",  # Dagster's, for the plain asset no sensor of ours targets
            ]
            repo = defs.get_repository_def()
            graph = repo.asset_graph
            automation_a = repo.get_sensor_def("assetlake_automation_sensor__lake_a")
            assert automation_a.asset_selection.resolve(graph) == {dg.AssetKey(["analytics", "a"])}
            job_b = repo.get_job("analytics_job__lake_b")
            assert {key for key in job_b.asset_layer.selected_asset_keys} == {dg.AssetKey(["analytics", "b"])}


def test_every_asset_carries_its_kinds():
    """SQL files: spark, delta and sql; a Python asset the Delta IO manager writes (it carries a
    write contract): python, spark and delta beside its own; external tables: delta."""
    import pandas as pd

    from assetlake_dagster import managed_write

    @dg.asset(key=["raw", "scores"], kinds={"pandas"}, metadata=managed_write("append"))
    def scores() -> pd.DataFrame:
        return pd.DataFrame({"id": [1]})

    @dg.asset(key=["elsewhere"])
    def elsewhere() -> int:
        return 1

    defs = build_definitions(os.path.join(PROJECTS, "basic"), lake_root="/data/lake", python_assets=[scores, elsewhere])
    kinds = {spec.key.to_user_string(): spec.kinds for spec in defs.resolve_all_asset_specs()}
    assert kinds["analytics/orders_clean"] >= {"spark", "delta", "sql"}
    assert kinds["raw/scores"] == {"pandas", "python", "spark", "delta"}
    assert kinds["elsewhere"] == set()  # not written by the Delta IO manager: left as it is
    # The SQL files' tables and the external tables they read are Delta tables.
    assert all("delta" in k for name, k in kinds.items() if name not in ("raw/scores", "elsewhere")) and len(kinds) > 4
