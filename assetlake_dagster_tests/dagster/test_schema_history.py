"""Layer 5: each materialization carries the table's schema version, unchanged across runs
with the same schema and one more, with the diff, when the SELECT reshapes it."""

import dagster as dg

from assetlake_dagster.defs.build import build_definitions

KEY = dg.AssetKey(["s", "t"])
SELECTS = [
    "SELECT 1 AS id, 'ann' AS name, 1.5 AS score",
    "SELECT 2 AS id, 'bob' AS name, 2.5 AS score",  # new rows, same schema
    "SELECT 3 AS id, CAST(3 AS INT) AS score, 'x' AS note",  # name removed, score retyped, note added
]


def test_the_schema_version_moves_on_only_when_the_schema_changes(spark, lake_root, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    instance = dg.DagsterInstance.ephemeral()
    recorded = []
    for select in SELECTS:
        (project / "t.sql").write_text(f"-- materialize delta://s/t\n\n{select}\n")
        defs = build_definitions(str(project), lake_root=lake_root)
        assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance).success
        metadata = instance.get_latest_materialization_event(KEY).asset_materialization.metadata
        diff = metadata.get("assetlake/schema_diff")
        recorded.append((metadata["assetlake/schema_version"].value, diff.value if diff else None))
    assert recorded == [
        (1, None),
        (1, None),
        (2, "- removed name string\n- added note string\n- retyped score decimal(2,1) -> int"),
    ]
