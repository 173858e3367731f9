"""``assetlake backfill``: a partition range of one asset, in batches, from the command line.

Dagster's own ``dagster asset materialize --partition-range`` only accepts assets whose
backfill policy is single-run; assetlake assets batch (``batch=`` partitions per run),
as the daemon does for a backfill launched from the UI. This runs the same batches
sequentially in this process, each as one Dagster run (recorded in ``$DAGSTER_HOME``,
so the UI shows them) that writes its partitions in one Delta commit. A failed batch
does not stop the others and leaves its own partitions at their prior version.
"""

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import dagster as dg

from assetlake_dagster.defs.dagster_internals import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    backfill_policy_of,
    implicit_asset_job,
    materialized_partitions,
    resolve_assets_def,
)
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.run.decision import FORCE_TAG

BACKFILL_TAG = "assetlake/backfill"


@dataclass
class BackfillReport:
    """What a backfill did: the batches that succeeded and failed, with their run ids."""

    backfill_id: str
    succeeded: list[tuple[list[str], str]] = field(default_factory=list)
    failed: list[tuple[list[str], str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed


def batches(keys: Sequence[str], all_keys: Sequence[str], size: int) -> list[list[str]]:
    """Split ``keys`` into runs of at most ``size`` keys that are contiguous in ``all_keys``.

    A run covers a partition range, so a gap (a key skipped as already materialized)
    starts a new batch.

    Example:
        >>> batches(["a", "b", "d", "e", "f"], ["a", "b", "c", "d", "e", "f"], 2)
        [['a', 'b'], ['d', 'e'], ['f']]
    """
    position = {k: i for i, k in enumerate(all_keys)}
    result: list[list[str]] = []
    for key in keys:
        current = result[-1] if result else None
        if current and len(current) < size and position[key] == position[current[-1]] + 1:
            current.append(key)
        else:
            result.append([key])
    return result


def run_backfill(
    defs: dg.Definitions,
    asset_key: dg.AssetKey,
    start: Optional[str],
    end: Optional[str],
    *,
    instance: dg.DagsterInstance,
    missing_only: bool = False,
    batch_size: Optional[int] = None,
    run_config: Optional[Union[Mapping[str, Any], dg.RunConfig]] = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> BackfillReport:
    """Materialize ``asset_key``'s partitions from ``start`` to ``end`` (inclusive) in batches.

    Args:
        defs: the definitions holding the asset.
        asset_key: a partitioned asset.
        start, end: the first and last partition key (default: the first / last one).
        instance: where the runs are recorded.
        missing_only: skip partitions that already have a materialization.
        batch_size: partitions per run (default: the asset's ``batch=``).
        run_config: every batch run's config, e.g. the values of the SQL file's
            ``-- $name (type)`` arguments from :func:`~assetlake_dagster.defs.run_config.sql_run_config`.
        force: run every batch even where nothing it reads changed since its partitions'
            last materialization (the run tag ``assetlake/force``; see ``run_decision``).
        log: where progress lines go.

    Raises:
        ConfigError: the asset is not partitioned, ``start``/``end`` is not one of its
            partitions, or ``run_config`` does not fit its job (before any run).

    Example:
        >>> config = sql_run_config(defs, {"staging/orders": {"min_amount": 10}})  # doctest: +SKIP
        >>> report = run_backfill(defs, dg.AssetKey(["staging", "orders"]), "2024-01-01", "2024-03-01",
        ...                       instance=dg.DagsterInstance.get(), run_config=config)  # doctest: +SKIP
    """
    assets_def = resolve_assets_def(defs, asset_key)
    partitions_def = assets_def.partitions_def
    if partitions_def is None:
        raise ConfigError(f"{asset_key.to_user_string()} is not partitioned; materialize it without a range.")
    all_keys = list(partitions_def.get_partition_keys(dynamic_partitions_store=instance))
    for name, value in (("--from", start), ("--to", end)):
        if value is not None and value not in all_keys:
            raise ConfigError(f"{name} {value!r} is not a partition of {asset_key.to_user_string()}.")
    first = all_keys.index(start) if start else 0
    last = all_keys.index(end) if end else len(all_keys) - 1
    keys = all_keys[first : last + 1]
    if missing_only:
        done = materialized_partitions(instance, asset_key)
        keys = [k for k in keys if k not in done]
    policy = backfill_policy_of(assets_def)
    size = batch_size or (policy.max_partitions_per_run if policy else None) or max(len(keys), 1)
    job = implicit_asset_job(defs, [asset_key])
    report = BackfillReport(backfill_id=uuid.uuid4().hex[:8])
    plan = batches(keys, all_keys, size)
    log(
        f"backfill {report.backfill_id}: {asset_key.to_user_string()}, "
        f"{len(keys)} partition{'s' if len(keys) != 1 else ''} in {len(plan)} run{'s' if len(plan) != 1 else ''}"
    )
    for batch in plan:
        tags = {
            ASSET_PARTITION_RANGE_START_TAG: batch[0],
            ASSET_PARTITION_RANGE_END_TAG: batch[-1],
            BACKFILL_TAG: report.backfill_id,
            **({FORCE_TAG: "true"} if force else {}),
        }
        try:
            result = job.execute_in_process(
                instance=instance, asset_selection=[asset_key], tags=tags, run_config=run_config, raise_on_error=False
            )
        except dg.DagsterInvalidConfigError as err:
            # Checked before the run is created, so this is the first batch and nothing ran.
            asset = asset_key.to_user_string()
            raise ConfigError(
                f"the run config does not fit {asset}; no run started.\n{err}\nBuild it with "
                f"sql_run_config(defs, {{'{asset}': {{<argument>: <value>}}}}): it names the op and checks "
                "each argument's name and type."
            ) from err
        outcome = (batch, result.run_id)
        succeeded = result.dagster_run.is_success
        (report.succeeded if succeeded else report.failed).append(outcome)
        log(f"  {batch[0]}...{batch[-1]} ({len(batch)}): {'ok' if succeeded else 'FAILED'} run {result.run_id}")
    return report
