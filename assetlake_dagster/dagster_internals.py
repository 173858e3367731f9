"""The only module that imports Dagster's private (``dagster._…``) names.

Dagster exports no public equivalent for these; each one says why we need it. When a
Dagster release moves one, importing this module fails, and so does
``assetlake_dagster_tests/unit/test_dagster_internals.py`` (it names each of them), so
the upgrade breaks here, loudly, and nowhere else.
"""

# An asset check evaluation that we build ourselves (one per partition of a backfill
# batch: ``AssetCheckResult`` only knows a run's single partition key) must point at the
# materialization it judged, as ``AssetCheckResult`` does internally. ``dagster`` exports
# ``AssetCheckEvaluation`` but not the type of its ``target_materialization_data``.
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData as AssetCheckEvaluationTargetMaterializationData,
)

# Dagster's own validators for group names, owners, tag keys/values and kinds: the grammar
# runs them so a bad `group`/`owner`/`tags`/`kinds` line fails at its line and column,
# instead of later inside ``dagster.AssetSpec`` with no location. Re-implementing them
# would drift from what ``AssetSpec`` accepts.
from dagster._core.definitions.utils import (
    VALID_GROUP_NAME_REGEX as VALID_GROUP_NAME_REGEX,
    is_valid_owner as is_valid_owner,
)
from dagster._core.storage.tags import KIND_PREFIX as KIND_PREFIX
from dagster._utils.tags import (
    is_valid_strict_tag_value as is_valid_strict_tag_value,
    is_valid_tag_key as is_valid_tag_key,
)

# Run tags, spelled as Dagster spells them: ``assetlake check`` launches a check-only run
# of one partition as the UI does (``execute_in_process(partition_key=)`` validates the key
# against the selected *assets*, and a check-only run selects none), and
# ``assetlake backfill`` launches a batch as a partition range, as the backfill daemon does.
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG as ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG as ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_NAME_TAG as PARTITION_NAME_TAG,
)

__all__ = [
    "ASSET_PARTITION_RANGE_END_TAG",
    "ASSET_PARTITION_RANGE_START_TAG",
    "AssetCheckEvaluationTargetMaterializationData",
    "KIND_PREFIX",
    "PARTITION_NAME_TAG",
    "VALID_GROUP_NAME_REGEX",
    "is_valid_owner",
    "is_valid_strict_tag_value",
    "is_valid_tag_key",
]
