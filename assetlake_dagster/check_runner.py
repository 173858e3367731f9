"""``assetlake check``: run an asset's data tests on their own, against the committed table.

Dagster runs a check without its asset when only the check is selected (the UI's
"Execute" on the asset's Checks tab does this); this is the same from the command line,
recorded in ``$DAGSTER_HOME`` like any run. Nothing is written.
"""

from typing import Optional

import dagster as dg

from assetlake_dagster.errors import ConfigError


def run_checks(
    defs: dg.Definitions, asset_key: dg.AssetKey, *, instance: dg.DagsterInstance, partition: Optional[str] = None
) -> list[dg.AssetCheckEvaluation]:
    """Execute every asset check of ``asset_key`` (one partition's slice if given).

    Example:
        >>> results = run_checks(defs, dg.AssetKey(["analytics", "customers"]),
        ...                      instance=dg.DagsterInstance.get())  # doctest: +SKIP
        >>> [(r.check_name, r.passed) for r in results]  # doctest: +SKIP
        [('unique_customer_id', True)]
    """
    if not defs.resolve_assets_def(asset_key).check_specs:
        raise ConfigError(f"{asset_key.to_user_string()} has no data tests.")
    job = dg.define_asset_job("__assetlake_checks", selection=dg.AssetSelection.checks_for_assets(asset_key))
    resolved = dg.Definitions.merge(defs, dg.Definitions(jobs=[job])).resolve_job_def(job.name)
    result = resolved.execute_in_process(instance=instance, partition_key=partition, raise_on_error=False)
    return [
        e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
