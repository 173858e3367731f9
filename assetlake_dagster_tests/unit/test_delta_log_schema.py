"""A table's schema from its ``_delta_log`` without Spark, on hand-made logs: the newest
``metaData`` action wins, from a commit file or else from the checkpoint."""

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from assetlake_dagster.lake.delta_log import DeltaLog, DeltaLogUnreadableError, read_metadata
from assetlake_dagster.defs.external import delta_column_schema


def field(name, type_, nullable=True, comment=None):
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {"comment": comment} if comment else {}}


def metadata_action(*fields, partition_columns=()):
    schema = {"type": "struct", "fields": list(fields)}
    return {
        "metaData": {
            "id": "a4e3c8b2-0000-4000-8000-000000000000",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema),
            "partitionColumns": list(partition_columns),
            "configuration": {},
            "createdTime": 1704067200000,
        }
    }


PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}


def add(path="part-0.parquet"):
    return {"add": {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 0, "dataChange": True}}


def commit_info(operation="WRITE"):
    return {"commitInfo": {"timestamp": 1704067200000, "operation": operation}}


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "landing" / "orders"
    (path / "_delta_log").mkdir(parents=True)
    return str(path)


def write_commit(table, version, *actions):
    path = os.path.join(table, "_delta_log", f"{version:020d}.json")
    with open(path, "w") as f:
        f.writelines(json.dumps(a) + "\n" for a in actions)
    return path


STRINGS = pa.map_(pa.string(), pa.string())
#: A checkpoint's columns as the protocol lays them out (the ones these tests use).
CHECKPOINT_SCHEMA = pa.schema(
    {
        "protocol": pa.struct({"minReaderVersion": pa.int32(), "minWriterVersion": pa.int32()}),
        "metaData": pa.struct(
            {
                "id": pa.string(),
                "format": pa.struct({"provider": pa.string(), "options": STRINGS}),
                "schemaString": pa.string(),
                "partitionColumns": pa.list_(pa.string()),
                "configuration": STRINGS,
                "createdTime": pa.int64(),
            }
        ),
        "add": pa.struct(
            {
                "path": pa.string(),
                "partitionValues": STRINGS,
                "size": pa.int64(),
                "modificationTime": pa.int64(),
                "dataChange": pa.bool_(),
            }
        ),
    }
)


def write_checkpoint(table, version, *actions, name=None):
    """A checkpoint parquet as a writer lays it out: one row per action, one column each."""
    rows = [{c: a.get(c) for c in CHECKPOINT_SCHEMA.names} for a in actions]
    name = name or f"{version:020d}.checkpoint.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=CHECKPOINT_SCHEMA), os.path.join(table, "_delta_log", name))


def names_and_types(meta):
    return [(f["name"], f["type"]) for f in meta.schema["fields"]]


def test_the_metadata_of_an_older_commit_is_found(table):
    path = write_commit(table, 0, commit_info(), PROTOCOL, metadata_action(field("id", "long"), field("day", "date"),
                                                                          partition_columns=["day"]))
    write_commit(table, 1, commit_info(), add("a.parquet"))
    write_commit(table, 2, commit_info(), add("b.parquet"))

    meta = read_metadata(table)

    assert names_and_types(meta) == [("id", "long"), ("day", "date")]
    assert (meta.version, meta.partition_columns, meta.file) == (0, ("day",), path)


def test_a_later_schema_change_wins(table):
    write_commit(table, 0, commit_info(), PROTOCOL, metadata_action(field("id", "long")))
    write_commit(table, 1, commit_info(), add())
    # A mergeSchema append: one new metaData with the whole schema, next to the commit's adds.
    write_commit(table, 2, commit_info(), metadata_action(field("id", "long"), field("note", "string")), add("c"))
    write_commit(table, 3, commit_info(), add("d"))

    meta = DeltaLog.open(table).read_metadata()

    assert meta.version == 2
    assert names_and_types(meta) == [("id", "long"), ("note", "string")]


def test_the_checkpoint_holds_it_when_older_commits_are_gone(table):
    # Commits 0..2 were cleaned up after checkpoint 2; 3 and 4 changed no schema.
    write_checkpoint(table, 2, PROTOCOL, metadata_action(field("id", "integer"), field("amount", "decimal(10,2)")),
                     add("a"), add("b"))
    write_commit(table, 3, commit_info(), add("c"))
    write_commit(table, 4, commit_info(), add("d"))

    meta = read_metadata(table)

    assert meta.version == 2
    assert meta.file.endswith("00000000000000000002.checkpoint.parquet")
    assert names_and_types(meta) == [("id", "integer"), ("amount", "decimal(10,2)")]


def test_a_commit_after_the_checkpoint_wins_over_it(table):
    write_checkpoint(table, 1, PROTOCOL, metadata_action(field("id", "integer")), add("a"))
    write_commit(table, 2, commit_info(), metadata_action(field("id", "long")), add("b"))

    assert names_and_types(read_metadata(table)) == [("id", "long")]


def test_a_multi_part_checkpoint(table):
    # The metaData row is in the second part; the first holds only adds.
    write_checkpoint(table, 3, add("a"), add("b"), name="00000000000000000003.checkpoint.0000000001.0000000002.parquet")
    write_checkpoint(table, 3, PROTOCOL, metadata_action(field("k", "string")),
                     name="00000000000000000003.checkpoint.0000000002.0000000002.parquet")

    meta = read_metadata(table)

    assert (meta.version, names_and_types(meta)) == (3, [("k", "string")])


def test_a_multi_part_checkpoint_with_a_part_missing_is_unreadable(table):
    write_checkpoint(table, 3, add("a"), name="00000000000000000003.checkpoint.0000000001.0000000002.parquet")

    with pytest.raises(DeltaLogUnreadableError, match="checkpoint 3 of .* cannot be read: some of its parts are missing"):
        read_metadata(table)


def test_a_v2_json_checkpoint(table):
    name = "00000000000000000001.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"
    with open(os.path.join(table, "_delta_log", name), "w") as f:
        for action in ({"checkpointMetadata": {"version": 1}}, PROTOCOL, metadata_action(field("id", "long"))):
            f.write(json.dumps(action) + "\n")

    meta = read_metadata(table)

    assert (meta.version, names_and_types(meta)) == (1, [("id", "long")])


def test_column_comments_nested_and_decimal_types_become_the_dagster_schema(table):
    point = {"type": "struct", "fields": [field("x", "integer"), field("y", "double", nullable=False)]}
    write_commit(
        table,
        0,
        commit_info(),
        PROTOCOL,
        metadata_action(
            field("id", "long", nullable=False, comment="the order's key"),
            field("amount", "decimal(10,2)"),
            field("tags", {"type": "array", "elementType": "string", "containsNull": True}),
            field("counts", {"type": "map", "keyType": "string", "valueType": "integer", "valueContainsNull": True}),
            field("at", point, comment=""),
            field("small", "short"),
        ),
    )

    schema = delta_column_schema(read_metadata(table), table)

    assert [(c.name, c.type, c.constraints.nullable, c.description) for c in schema.columns] == [
        ("id", "bigint", False, "the order's key"),
        ("amount", "decimal(10,2)", True, None),
        ("tags", "array<string>", True, None),
        ("counts", "map<string,int>", True, None),
        ("at", "struct<x:int,y:double>", True, None),
        ("small", "smallint", True, None),
    ]


def test_a_type_pyspark_cannot_parse_is_unreadable(table):
    write_commit(table, 0, commit_info(), PROTOCOL, metadata_action(field("shape", "no_such_type")))

    with pytest.raises(DeltaLogUnreadableError, match="the schema of version 0 cannot be parsed"):
        delta_column_schema(read_metadata(table), table)


def test_no_metadata_anywhere_is_unreadable(table):
    write_commit(table, 0, commit_info(), PROTOCOL, add("a"))
    write_commit(table, 1, commit_info(), add("b"))

    with pytest.raises(DeltaLogUnreadableError) as caught:
        read_metadata(table)

    assert str(caught.value) == (
        f"the Delta log of {table} holds no metaData action (its schema) in versions 0..1: the log is damaged or "
        "was not written by a Delta writer. Restore it from a backup, or re-create the table."
    )


def test_no_metadata_in_the_commits_nor_the_checkpoint_is_unreadable(table):
    write_checkpoint(table, 0, PROTOCOL, add("a"))
    write_commit(table, 1, commit_info(), add("b"))

    with pytest.raises(DeltaLogUnreadableError, match=r"in versions 1 nor in checkpoint 0: the log is damaged"):
        read_metadata(table)


def test_commits_before_the_first_readable_without_a_checkpoint_are_unreadable(table):
    # Version 0 (the one with the metaData) is gone and no checkpoint covers it.
    write_commit(table, 1, commit_info(), add("b"))

    with pytest.raises(DeltaLogUnreadableError, match="has no commit file for version 0 .* the log is damaged"):
        read_metadata(table)


@pytest.mark.parametrize(
    "damage, problem",
    [
        ('{"metaData": {"schemaString": "{not json"}}', "not valid"),
        ('{"metaData": {"schemaString": "{\\"type\\": \\"array\\"}"}}', "must be a JSON struct type"),
        ('{"metaData": {"schemaString": 3}}', "'schemaString' must be a string"),
        ('{"metaData": "x"}', "not a valid Delta action"),
    ],
)
def test_a_damaged_metadata_action_is_unreadable(table, damage, problem):
    write_commit(table, 0, commit_info(), PROTOCOL)
    with open(os.path.join(table, "_delta_log", f"{0:020d}.json"), "a") as f:
        f.write(damage + "\n")

    with pytest.raises(DeltaLogUnreadableError, match=problem) as caught:
        read_metadata(table)

    assert caught.value.file.endswith("00000000000000000000.json")


def test_a_checkpoint_written_by_delta_rs(tmp_path):
    """A real writer's checkpoint (delta-rs lays out every action column), with every commit
    up to it cleaned up."""
    table = str(tmp_path / "orders")
    write_deltalake(table, pa.table({"id": pa.array([1], pa.int64()), "day": ["2024-01-01"]}), partition_by=["day"])
    write_deltalake(table, pa.table({"id": pa.array([2], pa.int64()), "day": ["2024-01-02"]}), mode="append")
    DeltaTable(table).create_checkpoint()  # at version 1
    for version in (0, 1):
        os.remove(os.path.join(table, "_delta_log", f"{version:020d}.json"))

    meta = read_metadata(table)

    assert meta.file.endswith("00000000000000000001.checkpoint.parquet")
    assert (names_and_types(meta), meta.partition_columns) == ([("id", "long"), ("day", "string")], ("day",))
