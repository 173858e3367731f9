"""The private Dagster names assetlake relies on still exist and still mean what we use.

``assetlake_dagster/dagster_internals.py`` is the one module importing ``dagster._…``;
a Dagster release that moves or changes one of them fails here, by name.
"""

import dagster as dg

from assetlake_dagster import dagster_internals as di


def test_the_library_imports_private_dagster_names_only_through_the_adapter():
    import pathlib
    import re

    package = pathlib.Path(di.__file__).parent
    private = re.compile(r"^\s*(from|import)\s+dagster\._", re.MULTILINE)
    offenders = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "dagster_internals.py" and private.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_run_tags_are_spelled_as_the_ui_and_daemon_spell_them():
    assert di.PARTITION_NAME_TAG == "dagster/partition"
    assert di.ASSET_PARTITION_RANGE_START_TAG == "dagster/asset_partition_range_start"
    assert di.ASSET_PARTITION_RANGE_END_TAG == "dagster/asset_partition_range_end"


def test_validators_accept_and_reject_what_asset_spec_does():
    import re

    assert re.match(di.VALID_GROUP_NAME_REGEX, "sales") and not re.match(di.VALID_GROUP_NAME_REGEX, "a b")
    assert di.is_valid_owner("team:data") and di.is_valid_owner("ann@example.com")
    assert not di.is_valid_owner("not an owner")
    assert di.is_valid_tag_key("domain") and not di.is_valid_tag_key("bad key!")
    assert di.is_valid_strict_tag_value("x") and not di.is_valid_strict_tag_value("a" * 64)
    assert di.KIND_PREFIX == "dagster/kind/"


def test_a_check_evaluation_accepts_the_target_materialization_type():
    target = di.AssetCheckEvaluationTargetMaterializationData(storage_id=1, run_id="r", timestamp=1.0)
    evaluation = dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey(["s", "t"]),
        check_name="c",
        passed=True,
        target_materialization_data=target,
        partition="2024-01-01",
    )
    assert evaluation.target_materialization_data.storage_id == 1
