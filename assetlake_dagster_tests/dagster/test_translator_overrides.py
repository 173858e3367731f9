"""Translator overrides cannot break the write contract or the graph.

A ``get_metadata`` override that forgets ``super()`` used to drop the write spec, so the
IO manager overwrote a merge table; a dagster-dbt-style key prefix left deps on the
unprefixed keys (phantom assets) and the IO manager could not map a three-part key to a
table. Both translators here materialize a merge table and a history table, twice.
"""

import os
import textwrap

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.defs.translator import AssetlakeTranslator
from assetlake_dagster_tests.helpers import delta_history

FILES = {
    "people.sql": """\
        -- materialize delta://dim/people key=id
        SELECT id, name FROM raw.people
        """,
    "people_history.sql": """\
        -- materialize delta://dim/people_history key=id history deletes=close
        SELECT id, name FROM raw.people
        """,
    "people_count.sql": """\
        -- materialize delta://mart/people_count
        SELECT count(*) AS people FROM dim.people
        """,
}


class MetadataWithoutSuper(AssetlakeTranslator):
    def get_metadata(self, spec):
        return {"team": "crm"}  # no super(): the catalog metadata is gone, the contract is not


class Prefixed(AssetlakeTranslator):
    def get_asset_key(self, spec):
        return super().get_asset_key(spec).with_prefix("lake")

    def get_external_asset_key(self, uri):
        return super().get_external_asset_key(uri).with_prefix("lake")


def write_people(spark, lake_root, rows):
    df = spark.createDataFrame(rows, "id INT, name STRING")
    df.write.format("delta").mode("overwrite").save(os.path.join(lake_root, "raw", "people"))


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(textwrap.dedent(text))
    return str(folder)


@pytest.mark.parametrize("translator, prefix", [(MetadataWithoutSuper(), []), (Prefixed(), ["lake"])], ids=["no-super", "prefix"])
def test_an_override_keeps_merge_and_history_writes(spark, lake_root, project, translator, prefix):
    defs = build_definitions(project, lake_root=lake_root, translator=translator)
    key = lambda *path: dg.AssetKey([*prefix, *path])  # noqa: E731
    graph = defs.resolve_asset_graph()
    assert set(graph.get_all_asset_keys()) == {
        key("raw", "people"), key("dim", "people"), key("dim", "people_history"), key("mart", "people_count")
    }
    # Deps follow the translated keys: no phantom unprefixed upstream.
    assert graph.get(key("mart", "people_count")).parent_keys == {key("dim", "people")}
    assert graph.get(key("dim", "people")).parent_keys == {key("raw", "people")}

    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_implicit_global_asset_job_def()
    # The downstream asset is checked in the graph above; running it adds nothing here.
    selection = [key("dim", "people"), key("dim", "people_history")]

    write_people(spark, lake_root, [(1, "ann"), (2, "bob")])
    assert job.execute_in_process(instance=instance, asset_selection=selection).success
    # Load 2: ann renamed, bob absent, cy new.
    write_people(spark, lake_root, [(1, "anna"), (3, "cy")])
    assert job.execute_in_process(instance=instance, asset_selection=selection).success

    people = os.path.join(lake_root, "dim", "people")
    assert delta_history(spark, people) == [(1, "MERGE"), (0, "WRITE")]
    # A merge keeps bob (an overwrite would have dropped him).
    assert sorted(tuple(r) for r in spark.read.format("delta").load(people).collect()) == [
        (1, "anna"), (2, "bob"), (3, "cy")
    ]
    history = os.path.join(lake_root, "dim", "people_history")
    assert delta_history(spark, history) == [(1, "MERGE"), (0, "WRITE")]
    rows = spark.sql(f"SELECT id, name, is_current FROM delta.`{history}`").collect()
    assert sorted(tuple(r) for r in rows) == [
        (1, "ann", False), (1, "anna", True), (2, "bob", False), (3, "cy", True)
    ]
