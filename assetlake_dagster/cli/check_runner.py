"""``assetlake check``: run an asset's data tests on their own, against the committed table.

Dagster runs a check without its asset when only the check is selected (the UI's
"Execute" on the asset's Checks tab does this); this is the same from the command line,
recorded in ``$DAGSTER_HOME`` like any run. Nothing is written. The checks of a
partitioned asset are partitioned: they test one partition's slice and record their
result for that partition.
"""

from typing import Optional

import dagster as dg

from assetlake_dagster.defs.dagster_internals import PARTITION_NAME_TAG, check_evaluations, resolve_assets_def, resolve_job_def
from assetlake_dagster.errors import ConfigError, did_you_mean


def run_checks(
    defs: dg.Definitions, asset_key: dg.AssetKey, *, instance: dg.DagsterInstance, partition: Optional[str] = None
) -> list[dg.AssetCheckEvaluation]:
    """Execute every asset check of ``asset_key`` (one partition's slice if given).

    A partitioned asset needs ``partition``; an unpartitioned one must not get one.

    Example:
        >>> results = run_checks(defs, dg.AssetKey(["analytics", "customers"]),
        ...                      instance=dg.DagsterInstance.get())  # doctest: +SKIP
        >>> [(r.check_name, r.passed) for r in results]  # doctest: +SKIP
        [('unique_customer_id', True)]
    """
    assets_def = resolve_assets_def(defs, asset_key)
    name = asset_key.to_user_string()
    if not assets_def.check_specs:
        raise ConfigError(f"{name} has no data tests.")
    tags = {}
    partitions_def = assets_def.partitions_def
    if partitions_def is None and partition is not None:
        raise ConfigError(f"{name} is not partitioned; check it without --partition.")
    if partitions_def is not None:
        keys = list(partitions_def.get_partition_keys(dynamic_partitions_store=instance))
        if partition is None:
            shown = ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")
            raise ConfigError(f"{name} is partitioned: name the partition to check with --partition ({shown}).")
        if partition not in keys:
            raise ConfigError(f"{partition!r} is not a partition of {name}.{did_you_mean(partition, keys)}")
        # A run tag, as the UI launches a partitioned check: execute_in_process(partition_key=)
        # validates the key against the *assets* selected, and a check-only run selects none.
        tags[PARTITION_NAME_TAG] = partition
    job = dg.define_asset_job("__assetlake_checks", selection=dg.AssetSelection.checks_for_assets(asset_key))
    resolved = resolve_job_def(dg.Definitions.merge(defs, dg.Definitions(jobs=[job])), job.name)
    result = resolved.execute_in_process(instance=instance, tags=tags, raise_on_error=False)
    return check_evaluations(result)
