"""Layer 1: choosing the catalog (`ASSETLAKE_CATALOG`), its driver settings and the one-JVM rule."""

import pytest

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.catalog import CatalogSettings
from assetlake_dagster.defs.resources import SparkDeltaResource


def test_the_default_is_the_session_catalog_and_adds_no_setting(monkeypatch):
    monkeypatch.delenv("ASSETLAKE_CATALOG", raising=False)
    resource = SparkDeltaResource(lake_root="/data/lake")
    assert resource.catalog_settings() == CatalogSettings()
    assert "spark.sql.catalogImplementation" not in resource.server_spark_conf()


def test_hive_embeds_its_metastore_beside_the_lake_state(monkeypatch):
    monkeypatch.setenv("ASSETLAKE_CATALOG", "Hive")
    monkeypatch.delenv("ASSETLAKE_HIVE_METASTORE_URIS", raising=False)
    monkeypatch.delenv("ASSETLAKE_METASTORE_DIR", raising=False)
    conf = SparkDeltaResource(lake_root="/data/lake", spark_conf={"spark.driver.extraJavaOptions": "-Dmine=1"}).server_spark_conf()
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"] == (
        "jdbc:derby:;databaseName=/data/lake/.assetlake/metastore/metastore_db;create=true"
    )
    # The user's JVM options are kept, after the metastore's.
    assert conf["spark.driver.extraJavaOptions"] == "-Dderby.stream.error.file=/data/lake/.assetlake/metastore/derby.log -Dmine=1"


def test_a_bucket_lake_keeps_its_embedded_metastore_on_local_disk(monkeypatch):
    monkeypatch.delenv("ASSETLAKE_METASTORE_DIR", raising=False)
    settings = CatalogSettings.resolve("hive", lake_root="s3a://bucket/lake")
    assert "/.cache/assetlake/metastores/" in settings.metastore_dir
    assert settings.metastore_dir != CatalogSettings.resolve("hive", lake_root="s3a://bucket/other").metastore_dir


def test_an_external_metastore_takes_no_derby_and_any_number_of_drivers(monkeypatch):
    monkeypatch.setenv("ASSETLAKE_HIVE_METASTORE_URIS", "thrift://meta:9083")
    resource = SparkDeltaResource(lake_root="/data/lake", catalog="hive", mode="local")
    conf = resource.server_spark_conf()
    assert conf["spark.hadoop.hive.metastore.uris"] == "thrift://meta:9083"
    assert not any("derby" in value for value in conf.values())
    assert resource.sessions().local_refusal is None


def test_an_in_process_driver_on_the_embedded_metastore_is_refused_before_a_jvm_starts(monkeypatch):
    monkeypatch.delenv("ASSETLAKE_HIVE_METASTORE_URIS", raising=False)
    resource = SparkDeltaResource(lake_root="/data/lake", catalog="hive", mode="local")
    with pytest.raises(ConfigError) as refused:
        resource.get_session()
    assert str(refused.value) == (
        "the embedded Hive metastore (/data/lake/.assetlake/metastore) can be open in one JVM at a time, the lake's "
        "warm engine; an in-process driver (ASSETLAKE_SPARK_MODE=local) would start a second one. Unset "
        "ASSETLAKE_SPARK_MODE to run on the engine, or use an external metastore "
        "(ASSETLAKE_HIVE_METASTORE_URIS=thrift://host:9083)."
    )


def test_an_unknown_catalog_names_the_choices():
    with pytest.raises(ConfigError, match="'unity' \\(ASSETLAKE_CATALOG\\) is not one assetlake knows. Use 'session'"):
        SparkDeltaResource(lake_root="/data/lake", catalog="unity").catalog_settings()


def test_the_thrift_server_needs_the_hive_catalog(monkeypatch):
    from assetlake_dagster.cli.jdbc import start_thrift_server

    monkeypatch.delenv("ASSETLAKE_CATALOG", raising=False)
    with pytest.raises(ConfigError, match="Set ASSETLAKE_CATALOG=hive"):
        start_thrift_server(SparkDeltaResource(lake_root="/data/lake"), 10000)


def test_a_three_part_name_of_a_catalog_the_session_lacks_is_a_located_load_error(tmp_path):
    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.errors import ProjectError

    (tmp_path / "totals.sql").write_text(
        "-- materialize delta://mart/totals\n\nSELECT id FROM uc.sales.orders JOIN spark_catalog.raw.people USING (id)\n"
    )
    with pytest.raises(ProjectError) as failed:
        build_definitions(str(tmp_path), spark=SparkDeltaResource(lake_root=str(tmp_path / "lake")))
    (problem,) = failed.value.diagnostics
    assert problem.render().splitlines()[0] == (
        f"{tmp_path}/totals.sql:3:16: 'uc.sales.orders' names the catalog 'uc', which the Spark session does not "
        "have. Configure it (spark.sql.catalog.uc=<catalog plugin class> in the resource's spark_conf), or refer "
        "to a managed table as 'schema.table'."
    )
    # Configured, it loads: the other catalog's table is no asset; spark_catalog.raw.people is the lake's.
    conf = {"spark.sql.catalog.uc": "io.unitycatalog.spark.UCSingleCatalog"}
    defs = build_definitions(str(tmp_path), spark=SparkDeltaResource(lake_root=str(tmp_path / "lake"), spark_conf=conf))
    assert {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()} == {"mart/totals", "raw/people"}


def test_a_catalog_plugin_named_like_a_lake_schema_is_a_located_load_error(tmp_path):
    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.errors import ProjectError

    (tmp_path / "totals.sql").write_text(
        "-- materialize delta://mart/totals\n\nSELECT id FROM ext.people JOIN ext.people USING (id)\n"
    )
    (tmp_path / "ext_copy.sql").write_text("-- materialize delta://EXT/copy\n\nSELECT 1 AS id\n")
    conf = {"spark.sql.catalog.ext": "io.unitycatalog.spark.UCSingleCatalog"}
    with pytest.raises(ProjectError) as failed:
        build_definitions(str(tmp_path), spark=SparkDeltaResource(lake_root=str(tmp_path / "lake"), spark_conf=conf))
    # One error per table, at its first mention: the target's line and the read's name.
    assert [problem.render().splitlines()[0] for problem in failed.value.diagnostics] == [
        f"{tmp_path}/ext_copy.sql:1:16: the lake's schema 'EXT' (EXT.copy) has the name of the catalog plugin "
        "'ext' (spark.sql.catalog.ext): Spark would read 'EXT.copy' as the table 'copy' of that catalog. Give "
        "the catalog plugin another name in the resource's spark_conf, or keep the lake's tables out of the "
        "schema 'EXT'.",
        f"{tmp_path}/totals.sql:3:16: the lake's schema 'ext' (ext.people) has the name of the catalog plugin "
        "'ext' (spark.sql.catalog.ext): Spark would read 'ext.people' as the table 'people' of that catalog. "
        "Give the catalog plugin another name in the resource's spark_conf, or keep the lake's tables out of "
        "the schema 'ext'.",
    ]
    # Under another name the plugin shadows nothing, and the project loads.
    conf = {"spark.sql.catalog.uc": "io.unitycatalog.spark.UCSingleCatalog"}
    build_definitions(str(tmp_path), spark=SparkDeltaResource(lake_root=str(tmp_path / "lake"), spark_conf=conf))


def test_catalog_sync_covers_every_table_of_the_project_and_the_history_tables_views(tmp_path):
    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.cli.catalog_sync import project_tables
    from assetlake_dagster.demo import DEMO_PROJECT_DIR

    tables = project_tables(build_definitions(DEMO_PROJECT_DIR, lake_root=str(tmp_path / "lake")))
    assert [uri.sql_name for uri in tables] == [
        "analytics.customer_revenue", "analytics.customers", "analytics.dim_customer", "analytics.fct_orders",
        "analytics.monthly_revenue", "analytics.payment_reconciliation", "analytics.top_customers",
        "landing.payments", "ops.load_log", "raw.customers", "raw.orders", "ref.countries",
        "staging.orders", "staging.payments",
    ]
    assert [uri.sql_name for uri, view in tables.items() if view] == ["analytics.dim_customer"]
