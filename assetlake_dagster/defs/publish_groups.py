"""A ``-- publish_with`` group's files -> one Dagster asset definition of several assets.

The group's tables are staged, audited and committed by one step
(:mod:`assetlake_dagster.run.publish_group`), so its assets are one op that cannot be
subset: selecting one of them in the UI, a job or a schedule runs them all (Dagster adds the
others, as for any multi-asset that cannot be subset).
"""

from collections.abc import Mapping, Sequence
from typing import Optional

import dagster as dg

from assetlake_dagster.defs.assets import (
    SPARK_RESOURCE_KEY,
    assets_definition,
    sql_asset_spec,
    upstream_asset_keys,
)
from assetlake_dagster.defs.checks import check_specs, restore_run_retries
from assetlake_dagster.defs.dagster_internals import with_metadata
from assetlake_dagster.defs.partitions import backfill_policy
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.defs.translator import AssetlakeTranslator
from assetlake_dagster.errors import AssetlakeError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spark.engine import engine_lost_failure
from assetlake_dagster.spec import PUBLISH_GROUP_KEY, SqlAssetSpec, TableUri

#: The asset tag naming a member's publish group.
PUBLISH_GROUP_TAG = "publish_group"


def build_publish_group(
    group: str,
    members: Sequence[SqlAssetSpec],
    translator: AssetlakeTranslator,
    lake: Optional[Lake] = None,
    io_manager_key: str = "io_manager",
    spark_key: str = SPARK_RESOURCE_KEY,
    views: Mapping[TableUri, SqlAssetSpec] = {},
) -> dg.AssetsDefinition:
    """The assets of a publish group's files (``members``, in the order they commit), run
    by one step that publishes them together.

    Example:
        >>> groups = publish_groups(project.assets)  # doctest: +SKIP
        >>> build_publish_group("daily_sales", groups["daily_sales"], translator).keys  # doctest: +SKIP
        {AssetKey(['mart', 'orders']), AssetKey(['mart', 'order_totals'])}
    """
    asset_specs = [sql_asset_spec(spec, translator, lake) for spec in members]
    # Tagged with the group, so ``--select tag:publish_group=<group>`` names all of it.
    asset_specs = [
        with_metadata(a, {**a.metadata, PUBLISH_GROUP_KEY: group}).replace_attributes(
            tags={**a.tags, PUBLISH_GROUP_TAG: group}
        )
        for a in asset_specs
    ]
    upstream_keys = [upstream_asset_keys(spec, translator) for spec in members]
    checks = [c for spec, a in zip(members, asset_specs) for c in check_specs(spec, a.key, a.partitions_def)]
    partitions = members[0].partitions  # alike in every member (project/dag.py)

    def _publish_group(context: dg.AssetExecutionContext):
        restore_run_retries(context.instance, context.run.run_id)
        if partitions and not (context.has_partition_key or context.has_partition_key_range):
            raise AssetlakeError(
                f"publish group '{group}' is partitioned: run it for one or more partitions.", allow_retries=False
            )
        resource: SparkDeltaResource = getattr(context.resources, spark_key)
        # The run's half (PySpark and all) loads with the first run, not with the definitions.
        from assetlake_dagster.run.publish_group import GroupMember, run_publish_group

        group_members = [
            GroupMember(spec, a, a.key.to_python_identifier(), keys)
            for spec, a, keys in zip(members, asset_specs, upstream_keys)
        ]
        try:
            yield from run_publish_group(context, group, group_members, resource, views)
        except (AssetlakeError, dg.Failure):
            raise
        except Exception as exc:
            lost = engine_lost_failure(exc, f"the run of publish group '{group}'", None)
            if lost is not None:
                raise lost from exc
            raise

    return assets_definition(
        _publish_group,
        name=f"publish__{group}",
        asset_specs=asset_specs,
        dagster_type=dg.Any,
        checks=checks,
        can_subset=False,
        config_schema=None,
        policy=backfill_policy(partitions) if partitions else None,
        io_manager_key=io_manager_key,
        spark_key=spark_key,
    )
