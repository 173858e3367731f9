"""Layer 5: one Delta commit per run, the first run too, whatever the table declares.

Every strategy × first run / changing run / unchanged run × a plain table and one that
declares a description, a column comment, a user property, a Delta property and clustering
(partitioned tables: no clustering, which Delta does not combine with partitions, and no
history, which is whole-table only). Each round is one
Dagster run of all the unpartitioned assets and one of all the partitioned ones, through the
IO manager, as users run them.
"""

import json
import os

import dagster as dg
import pytest

from assetlake_dagster.defs.io_manager import DeltaIOManager
from assetlake_dagster.defs.write_contract import managed_write
from assetlake_dagster.lake.delta_sql import path_identifier
from assetlake_dagster.defs.resources import SparkDeltaResource

STRATEGIES = ("replace", "merge", "append", "history")
DECLARED = {
    "assetlake/table_comment": "What the table holds.",
    "assetlake/column_descriptions": {"v": "The value."},
}
PROPERTIES = {"team.note": "nightly", "delta.enableChangeDataFeed": "true"}
PARTITIONS = dg.StaticPartitionsDefinition(["p1"])


def _asset(strategy: str, declared: bool, partitioned: bool, rows: dict):
    name = f"{strategy}_{'declared' if declared else 'plain'}{'_part' if partitioned else ''}"
    key = ["commits", name]
    metadata = managed_write(
        strategy,
        key=["id"] if strategy in ("merge", "history") else (),
        cluster_by=["id"] if declared and not partitioned else (),
        properties=PROPERTIES if declared else None,
    )
    if declared:
        metadata.update(DECLARED)

    @dg.asset(key=key, metadata=metadata, partitions_def=PARTITIONS if partitioned else None)
    def _table(spark: SparkDeltaResource):
        return spark.get_session().createDataFrame(rows["value"], "id INT, v STRING")

    return _table


def _versions(lake_root: str, name: str) -> list[dict]:
    """Each commit of the table, oldest first, read from its log files."""
    log = os.path.join(lake_root, "commits", name, "_delta_log")
    commits = []
    for file in sorted(f for f in os.listdir(log) if f.endswith(".json")):
        actions = [json.loads(line) for line in open(os.path.join(log, file))]
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        metadata = next((a["metaData"] for a in actions if "metaData" in a), None)
        commits.append({"operation": info["operation"], "metadata": metadata, "userMetadata": info.get("userMetadata")})
    return commits


@pytest.mark.parametrize("partitioned", [False, True], ids=["whole", "partitioned"])
def test_every_run_is_at_most_one_commit_and_the_first_holds_the_declared_layout(spark, lake_root, partitioned):
    rows = {"value": [(1, "a"), (2, "b")]}
    strategies = [s for s in STRATEGIES if not (partitioned and s == "history")]  # history: whole tables only
    assets = [_asset(s, d, partitioned, rows) for s in strategies for d in (False, True)]
    names = [a.key.path[-1] for a in assets]
    resource = SparkDeltaResource(lake_root=lake_root)
    resources = {"spark": resource, "io_manager": DeltaIOManager(spark=resource)}
    instance = dg.DagsterInstance.ephemeral()

    def run() -> dict[str, int]:
        result = dg.materialize(assets, resources=resources, instance=instance, partition_key="p1" if partitioned else None)
        assert result.success
        return {name: len(_versions(lake_root, name)) for name in names}

    first = run()
    assert first == {name: 1 for name in names}, "a first run is exactly one commit"
    for name in names:
        (commit,) = _versions(lake_root, name)
        stamp = json.loads(commit["userMetadata"])["assetlake"]
        assert stamp["asset"] == f"commits/{name}"
        described = commit["metadata"]
        if "declared" in name:
            assert described["description"] == "What the table holds."
            assert described["configuration"]["team.note"] == "nightly"
            assert described["configuration"]["delta.enableChangeDataFeed"] == "true"
            column = next(f for f in json.loads(described["schemaString"])["fields"] if f["name"] == "v")
            assert column["metadata"]["comment"] == "The value."
        else:
            assert not described.get("description") and "team.note" not in described["configuration"]
    declared_whole = [n for n in names if "declared" in n and not partitioned]
    for name in declared_whole:  # clustering is in version 0 as well
        detail = spark.sql(f"DESCRIBE DETAIL {path_identifier(os.path.join(lake_root, 'commits', name))}").collect()[0]
        assert list(detail.clusteringColumns) == ["id"] and detail.description == "What the table holds."

    rows["value"] = [(1, "a"), (2, "changed"), (3, "c")]
    changing = run()
    assert changing == {name: 2 for name in names}, "a run that changes rows is exactly one commit"

    unchanged = run()
    # An append appends its rows again, and a partition replace rewrites its slice (one
    # commit); a merge or a history write that finds nothing to change commits nothing, and so
    # does a whole-table replace of the rows the table holds (writes/content.py).
    rewritten = ("append", "replace") if partitioned else ("append",)
    expected = {name: 3 if name.startswith(rewritten) else 2 for name in names}
    assert unchanged == expected
    for name in names:
        operations = [c["operation"] for c in _versions(lake_root, name)]
        assert not any(op in ("SET TBLPROPERTIES", "CLUSTER BY", "CHANGE COLUMN") for op in operations), (name, operations)


@pytest.mark.parametrize("partitioned", [False, True], ids=["whole", "partitioned"])
def test_a_first_write_over_an_uncommitted_one_writes_and_then_describes_the_table(
    spark, lake_root, partitioned, monkeypatch
):
    """A folder with a `_delta_log` but no commit yet (a terminated run's first write) is "a
    table" to CREATE TABLE: the write waits for a first commit that never comes, then goes
    through Delta's writer, and the declared layout follows in a metadata-only commit. Seen in
    a backfill's concurrent batches on a bucket: every retry of CREATE TABLE failed with
    TABLE_OR_VIEW_ALREADY_EXISTS until the run did. (The wait, 120 s by default, is 1 s here;
    a first commit that does come is `spark/test_first_write_race.py`.)"""
    from assetlake_dagster.writes import create as create_module

    monkeypatch.setattr(create_module, "FIRST_COMMIT_WAIT_S", 1.0)
    rows = {"value": [(1, "a"), (2, "b")]}
    strategies = [s for s in STRATEGIES if not (partitioned and s == "history")]
    assets = [_asset(s, True, partitioned, rows) for s in strategies]
    names = [a.key.path[-1] for a in assets]
    for name in names:
        os.makedirs(os.path.join(lake_root, "commits", name, "_delta_log"))
    resource = SparkDeltaResource(lake_root=lake_root)
    result = dg.materialize(
        assets, resources={"spark": resource, "io_manager": DeltaIOManager(spark=resource)},
        partition_key="p1" if partitioned else None,
    )
    assert result.success
    for name in names:
        commits = _versions(lake_root, name)
        # (a clustered whole-table replace is CREATE OR REPLACE, which such a folder does not stop)
        expected = "CREATE OR REPLACE TABLE AS SELECT" if name == "replace_declared" else "WRITE"
        assert commits[0]["operation"] == expected, (name, commits)
        path = path_identifier(os.path.join(lake_root, "commits", name))
        detail = spark.sql(f"DESCRIBE DETAIL {path}").collect()[0]
        assert detail.description == "What the table holds." and detail.properties["team.note"] == "nightly", name
        assert spark.sql(f"SELECT count(*) AS n FROM {path}").collect()[0].n == 2, name
