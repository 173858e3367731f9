"""Layer 5: a SQL file's `-- description` and `-- column` descriptions written to its Delta table.

The first run creates the table with its comment and its columns' comments in its one
commit; a run that declares the same text commits nothing for it, and an edited text is
applied without rewriting a data file (a metadata-only commit).
"""

import dagster as dg

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.lake.delta_sql import path_identifier

KEY = dg.AssetKey(["docs", "customers"])
SELECT = "SELECT 1 AS id, 'ann' AS name, 10.5 AS revenue UNION ALL SELECT 2, 'bob', 3.0"


def materialize(project, lake_root, instance, header: str, materialize_line="key=id", tags=None):
    (project / "customers.sql").write_text(
        f"-- materialize delta://docs/customers {materialize_line}\n{header}\n\n{SELECT}\n"
    )
    defs = build_definitions(str(project), lake_root=lake_root)
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, tags=tags).success
    return instance.get_latest_materialization_event(KEY).asset_materialization.metadata


def described(spark, name):
    """``DESCRIBE TABLE EXTENDED``: the columns' comments and the table's Comment row."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    columns = {}
    for row in rows:
        if not row.col_name or row.col_name.startswith("#"):
            break
        columns[row.col_name] = row.comment
    table = next((row.data_type for row in rows if row.col_name == "Comment"), None)
    return table, columns


def history(spark, path):
    rows = spark.sql(f"DESCRIBE HISTORY {path_identifier(path)}").collect()
    return [(r.version, r.operation, dict(r.operationMetrics or {})) for r in sorted(rows, key=lambda r: r.version)]


def schema_at(spark, path, version):
    schema = spark.read.format("delta").option("versionAsOf", version).load(path).schema
    return {f.name: f.metadata.get("comment") for f in schema.fields}


HEADER = (
    "-- description Customers and what they paid.\n"
    '-- column id "The customer\'s key."\n'
    '-- column revenue "Sum of paid orders, in EUR."'
)


def test_comments_are_written_with_the_data_and_changed_without_rewriting_it(spark, lake_root, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    instance = dg.DagsterInstance.ephemeral()
    path = f"{lake_root}/docs/customers"

    first = materialize(project, lake_root, instance, HEADER)
    # The table's and the columns' comments are in the data commit itself (version 0).
    assert schema_at(spark, path, 0) == {"id": "The customer's key.", "name": None, "revenue": "Sum of paid orders, in EUR."}
    assert [(v, op) for v, op, _ in history(spark, path)] == [(0, "CREATE TABLE AS SELECT")]
    assert "assetlake/layout_changes" not in first
    # Seen by any session of the engine, through the registered name, as other tools see it.
    table, columns = described(spark.newSession(), "docs.customers")
    assert table == "Customers and what they paid."
    assert columns == {"id": "The customer's key.", "name": None, "revenue": "Sum of paid orders, in EUR."}

    again = materialize(project, lake_root, instance, HEADER)
    assert "assetlake/layout_changes" not in again
    assert len(history(spark, path)) == 1  # the merge changed no row, and no comment changed

    files_before = spark.sql(f"DESCRIBE DETAIL {path_identifier(path)}").first().numFiles
    edited = HEADER.replace("Customers and what they paid.", "Every customer.").replace("in EUR", "in euros")
    changed = materialize(project, lake_root, instance, edited + '\n-- column name "Display name."')
    assert [(c["change"], c["from"], c["to"]) for c in changed["assetlake/layout_changes"].value] == [
        ("comment", "Customers and what they paid.", "Every customer."),
        (
            "column_comments",
            {"name": None, "revenue": "Sum of paid orders, in EUR."},
            {"name": "Display name.", "revenue": "Sum of paid orders, in euros."},
        ),
    ]
    commits = history(spark, path)
    assert [(v, op) for v, op, _ in commits] == [
        (0, "CREATE TABLE AS SELECT"), (1, "SET TBLPROPERTIES"), (2, "CHANGE COLUMNS"),
    ]
    assert [c["version"] for c in changed["assetlake/layout_changes"].value] == [1, 2]
    # Metadata-only commits: no file added or removed.
    assert spark.sql(f"DESCRIBE DETAIL {path_identifier(path)}").first().numFiles == files_before
    assert not any(metrics.get("numAddedFiles", "0") != "0" for _, _, metrics in commits[1:])
    assert described(spark, "docs.customers") == (
        "Every customer.",
        {"id": "The customer's key.", "name": "Display name.", "revenue": "Sum of paid orders, in euros."},
    )


def test_a_replaced_table_keeps_its_comments_without_a_commit_for_them(spark, lake_root, tmp_path):
    # A whole-table replace sets the table's schema (overwriteSchema): the comments must ride
    # in the data commit, or every run would drop them and add two commits to put them back.
    project = tmp_path / "project"
    project.mkdir()
    instance = dg.DagsterInstance.ephemeral()
    path = f"{lake_root}/docs/customers"
    materialize(project, lake_root, instance, HEADER, materialize_line="")
    # Forced: the same file with nothing new to read would be skipped.
    again = materialize(project, lake_root, instance, HEADER, materialize_line="", tags={"assetlake/force": "true"})
    assert "assetlake/layout_changes" not in again
    assert [(v, op) for v, op, _ in history(spark, path)] == [(0, "CREATE TABLE AS SELECT"), (1, "WRITE")]
    assert schema_at(spark, path, 1)["revenue"] == "Sum of paid orders, in EUR."
    assert described(spark, "docs.customers")[0] == "Customers and what they paid."


def test_a_python_asset_takes_its_comments_from_its_metadata(spark, lake_root):
    from assetlake_dagster.defs.io_manager import DeltaIOManager
    from assetlake_dagster.defs.write_contract import managed_write
    from assetlake_dagster.defs.resources import SparkDeltaResource

    metadata = {
        **managed_write("append"),
        "assetlake/table_comment": "Events as they arrive.",
        "assetlake/column_descriptions": {"day": "The event's day, UTC."},
    }

    @dg.asset(key=["py", "events"], metadata=metadata)
    def events(spark: SparkDeltaResource):
        return spark.get_session().createDataFrame([(1, "2024-01-01")], "id INT, day STRING")

    resource = SparkDeltaResource(lake_root=lake_root)
    assert dg.materialize([events], resources={"spark": resource, "io_manager": DeltaIOManager(spark=resource)}).success
    assert described(spark, "py.events") == ("Events as they arrive.", {"id": None, "day": "The event's day, UTC."})
