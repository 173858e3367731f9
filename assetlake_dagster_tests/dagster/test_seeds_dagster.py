"""Layer 4: seeds written to Delta by real runs (docs/seeds.md).

A keyed seed is merged on its key with the types the file declares or implies, a SQL file
downstream reads it, and an edited file changes the table in one commit under a new code
version (a row removed from the file stays); an unkeyed seed replaces its table.
"""

import datetime as dt
import decimal

import dagster as dg

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.lake.delta_sql import path_identifier

COUNTRIES = """\
-- seed delta://ref/countries key=code
-- column area DECIMAL(10,2)
code,name,population,area,joined,eu
FR,France,68000000,551695,1958-01-01,true
DE,"Germany, Federal Republic",84000000,357588.5,1958-01-01,true
NO,Norway,5500000,385207,,false
"""
EDITED = """\
-- seed delta://ref/countries key=code
-- column area DECIMAL(10,2)
code,name,population,area,joined,eu
FR,France,68400000,551695,1958-01-01,true
NO,Norway,5500000,385207,,false
IE,Ireland,5300000,70273,1973-01-01,true
"""
EU = """\
-- materialize delta://mart/eu_members

SELECT code, name FROM ref.countries WHERE eu
"""
SEED, EU_KEY = dg.AssetKey(["ref", "countries"]), dg.AssetKey(["mart", "eu_members"])


def run(project, lake_root, instance, selection):
    defs = build_definitions(str(project), lake_root=lake_root)
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, asset_selection=selection)
    assert result.success
    return defs


def rows(spark, path, *columns):
    return sorted(tuple(r) for r in spark.sql(f"SELECT {', '.join(columns)} FROM {path_identifier(path)}").collect())


def test_a_keyed_seed_is_merged_typed_read_downstream_and_edited(spark, lake_root, tmp_path):
    project = tmp_path / "project"
    (project / "ref").mkdir(parents=True)
    (project / "ref" / "countries.csv").write_text(COUNTRIES)
    (project / "eu.sql").write_text(EU)
    instance = dg.DagsterInstance.ephemeral()
    path = f"{lake_root}/ref/countries"

    defs = run(project, lake_root, instance, [SEED, EU_KEY])
    schema = {f.name: f.dataType.simpleString() for f in spark.read.format("delta").load(path).schema}
    assert schema == {"code": "string", "name": "string", "population": "bigint", "area": "decimal(10,2)",
                      "joined": "date", "eu": "boolean"}
    assert rows(spark, path, "code", "name", "area", "joined") == [
        ("DE", "Germany, Federal Republic", decimal.Decimal("357588.50"), dt.date(1958, 1, 1)),
        ("FR", "France", decimal.Decimal("551695.00"), dt.date(1958, 1, 1)),
        ("NO", "Norway", decimal.Decimal("385207.00"), None),
    ]
    assert rows(spark, f"{lake_root}/mart/eu_members", "code") == [("DE",), ("FR",)]
    first = instance.get_latest_materialization_event(SEED).asset_materialization.metadata
    assert (first["delta/version"].value, first["dagster/row_count"].value, first["assetlake/strategy"].value) == (0, 3, "merge")
    first_version = defs.resolve_asset_graph().get(SEED).code_version

    (project / "ref" / "countries.csv").write_text(EDITED)
    defs = run(project, lake_root, instance, [SEED])
    assert defs.resolve_asset_graph().get(SEED).code_version != first_version
    # Merged: FR updated, IE inserted, DE (gone from the file) kept, NO unchanged; one commit.
    assert rows(spark, path, "code", "population") == [("DE", 84000000), ("FR", 68400000), ("IE", 5300000),
                                                       ("NO", 5500000)]
    second = instance.get_latest_materialization_event(SEED).asset_materialization.metadata
    assert (second["delta/version"].value, second["delta/operation"].value) == (1, "MERGE")


def test_an_unkeyed_seed_replaces_its_table(spark, lake_root, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    instance = dg.DagsterInstance.ephemeral()
    key = dg.AssetKey(["seeds", "sizes"])
    (project / "sizes.csv").write_text("size,label\nS,small\nM,medium\n")
    run(project, lake_root, instance, [key])
    (project / "sizes.csv").write_text("size,label\nM,medium\nL,large\n")
    run(project, lake_root, instance, [key])
    assert rows(spark, f"{lake_root}/seeds/sizes", "size", "label") == [("L", "large"), ("M", "medium")]
    metadata = instance.get_latest_materialization_event(key).asset_materialization.metadata
    assert (metadata["delta/version"].value, metadata["assetlake/strategy"].value, metadata["dagster/row_count"].value) == (
        1, "replace", 2)
