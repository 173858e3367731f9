"""Layer 1: the schema version moves on only when names, types, nullability or order change,
and the diff says exactly what changed."""

import pytest

from assetlake_dagster.run.schema_history import ColumnShape, next_schema_version, schema_diff

ID, NAME, SCORE = ColumnShape("id", "int", True), ColumnShape("name", "string", True), ColumnShape("score", "double", True)


@pytest.mark.parametrize(
    "current, diff",
    [
        pytest.param([ID, NAME, SCORE], [], id="same"),
        pytest.param([ID, NAME, SCORE, ColumnShape("note", "string", True)], ["added note string"], id="added"),
        pytest.param([ID, SCORE], ["removed name string"], id="removed"),
        pytest.param([ID, NAME, ColumnShape("score", "int", True)], ["retyped score double -> int"], id="retyped"),
        pytest.param([ColumnShape("id", "int", False), NAME, SCORE], ["id nullable -> not null"], id="nullability"),
        pytest.param([NAME, ID, SCORE], ["reordered id, name, score -> name, id, score"], id="reordered"),
        pytest.param([ColumnShape("ID", "int", True), NAME, SCORE], ["renamed id -> ID"], id="renamed-case"),
        pytest.param(
            [ColumnShape("id", "bigint", True), ColumnShape("label", "string", True), SCORE],
            ["removed name string", "added label string", "retyped id int -> bigint"],
            id="several",
        ),
    ],
)
def test_the_diff_names_each_change(current, diff):
    assert schema_diff([ID, NAME, SCORE], current) == diff
    assert next_schema_version(3, [ID, NAME, SCORE], current) == ((4, diff) if diff else (3, []))


def test_a_first_schema_is_version_one():
    assert next_schema_version(None, None, [ID]) == (1, [])
