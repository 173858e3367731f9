"""The only module that uses Dagster's private names and its members that are not ``@public``.

Private names are the ``dagster._…`` imports; non-public members are methods and properties
of public Dagster classes that Dagster does not mark ``@public`` (nor type as ``PublicAttr``).
Dagster offers no public equivalent for any of them; each one says why we need it. When a
Dagster release moves or changes one, importing or calling it here fails, and so does
``assetlake_dagster_tests/unit/test_dagster_internals.py`` (it exercises each of them), so
the upgrade breaks here, loudly, and nowhere else.
"""

import inspect
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import CodeType
from typing import Any, Optional

import dagster as dg

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

# Dagster's own cron checks: `ScheduleDefinition` and `AutomationCondition.on_cron` accept
# exactly the strings the first accepts (five fields, or an alias such as '@daily'; no
# seconds; no 30 February), and `ScheduleDefinition` warns when the second is true ('*/90'
# fires every hour, not every 90 minutes). The grammar runs both so that a bad `schedule` or
# `automation on_cron` line fails at its line and column, not inside Dagster without one.
from dagster._utils.schedules import (
    has_out_of_range_cron_interval as has_out_of_range_cron_interval,
    is_valid_cron_string as is_valid_cron_string,
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

# A run launcher's answer to Dagster's run monitoring (``check_run_worker_health``) is typed
# by these two, which ``dagster`` does not export; :mod:`assetlake_dagster.run.launcher`
# answers it for the DefaultRunLauncher's runs, which Dagster leaves unmonitored.
from dagster._core.launcher.base import (
    CheckRunHealthResult as CheckRunHealthResult,
    WorkerStatus as WorkerStatus,
)

# The tag that carries an asset event's data version. The watch sensor reports an
# observation of an external table from a sensor (``SensorResult(asset_events=)``), which
# takes a bare ``AssetObservation``; only an observable asset's own function may return the
# public ``ObserveResult(data_version=)``, and no public name spells this tag.
from dagster._core.definitions.data_version import DATA_VERSION_TAG as DATA_VERSION_TAG

# A run that finds its inputs unchanged reports its data tests' last results again
# (run/decision.py): the instance's check history is filtered by status and partition with
# these two types, which ``dagster`` does not export.
from dagster._core.storage.asset_check_execution_record import (
    AssetCheckExecutionRecordStatus as CheckExecutionStatus,
)
from dagster._core.storage.event_log.base import PartitionKeyFilter as PartitionKeyFilter

# A SQL asset's AssetsDefinition is built from an OpDefinition directly, not through
# ``@multi_asset``, whose builder re-inspects the compute function's signature about 16
# times per asset (most of a 1000-file load, B4). The public ``OpDefinition`` then needs the
# compute function wrapped as the ``@op`` decorator wraps it (its context typed from the
# annotation, ``AssetExecutionContext``), and the deps' inputs and the checks' outputs named
# as ``@multi_asset`` names them. ``unit/test_assets_definition.py`` checks the result equals
# the decorator's.
from dagster._core.definitions.assets.definition.assets_definition import (
    stringify_asset_key_to_input_name as _stringify_asset_key_to_input_name,
)
from dagster._core.definitions.decorators.op_decorator import DecoratedOpFunction as _DecoratedOpFunction


def decorated_op_function(fn: Any) -> Any:
    """``fn`` as the ``@op`` decorator hands it to ``OpDefinition``.

    ``OpDefinition`` reads the function's signature about seven times; ``fn`` gets it as
    its ``__signature__`` (which ``inspect.signature`` returns as is, PEP 362), computed once
    per code object: every SQL asset's compute is a closure of one function (without
    defaults, so all its closures have one signature).
    """
    if fn.__defaults__ is None and fn.__kwdefaults__ is None:  # else closures may differ
        signature = _SIGNATURES.get(fn.__code__)
        if signature is None:
            signature = _SIGNATURES[fn.__code__] = inspect.signature(fn)
        fn.__signature__ = signature
    return _DecoratedOpFunction(fn)


_SIGNATURES: dict[CodeType, inspect.Signature] = {}


def dep_input_name(key: dg.AssetKey) -> str:
    """The name ``@multi_asset`` gives the (Nothing) input of a dep on ``key``."""
    return _stringify_asset_key_to_input_name(key).replace("-", "_")


def check_spec_output_name(check_spec: dg.AssetCheckSpec) -> str:
    """The name ``@multi_asset`` gives the output of a check (not ``@public``)."""
    return check_spec.get_python_identifier()


# -- members of public classes that are not @public ----------------------------------------
def with_metadata(spec: dg.AssetSpec, metadata: dict[str, Any]) -> dg.AssetSpec:
    """``spec.replace_attributes(metadata=metadata)``, without validating again what
    ``AssetSpec`` validated when ``spec`` was made (key, deps, group, owners, tags, kinds)."""
    # That re-validation was about a tenth of a 1000-file load (B4). ``_replace`` is how
    # AssetSpec.with_io_manager_key replaces its own metadata; it is not @public.
    return spec._replace(metadata=metadata)


def resolve_assets_def(defs: dg.Definitions, key: dg.AssetKey) -> dg.AssetsDefinition:
    """The definition of ``key``: its check specs, partitions and backfill policy."""
    # Definitions.resolve_assets_def is the only lookup by key (get_assets_def, its
    # predecessor, is not @public either); resolve_all_asset_specs has no checks or policy.
    return defs.resolve_assets_def(key)


def resolve_job_def(defs: dg.Definitions, name: str) -> dg.JobDefinition:
    """The job ``name`` of ``defs``, a ``define_asset_job`` one resolved against its assets."""
    # The @public Definitions.get_job_def warns for an asset job and defers to this.
    return defs.resolve_job_def(name)


def implicit_asset_job(defs: dg.Definitions, keys: Sequence[dg.AssetKey]) -> dg.JobDefinition:
    """The code location's own asset job for ``keys`` (its runs show under it, as the UI's do)."""
    # A define_asset_job job of our own would name its runs after a job the location lacks.
    return defs.resolve_implicit_job_def_def_for_assets(list(keys))


def backfill_policy_of(assets_def: dg.AssetsDefinition) -> Optional[dg.BackfillPolicy]:
    """The ``backfill_policy`` an asset was defined with (its batch size), if any."""
    # Set through @multi_asset(backfill_policy=); no @public member reads it back.
    return assets_def.backfill_policy


def materialized_partitions(instance: dg.DagsterInstance, key: dg.AssetKey) -> set[str]:
    """The partitions of ``key`` materialized at least once."""
    # The @public get_status_by_partition reports a partition whose last run failed as FAILED;
    # a --missing backfill skips every partition that was ever materialized.
    return set(instance.get_materialized_partitions(key))


def check_evaluations(result: dg.ExecuteInProcessResult) -> list[dg.AssetCheckEvaluation]:
    """The asset check evaluations a run recorded, in order."""
    # Neither this method nor DagsterEvent's data accessor (event_specific_data) is @public.
    return list(result.get_asset_check_evaluations())


def check_output_name(assets_def: dg.AssetsDefinition, key: dg.AssetCheckKey) -> str:
    """The output a check's step yields; steps gated on a blocking check wait for it."""
    # An AssetCheckEvaluation we yield per partition still owes the check's output, whose
    # name only the AssetsDefinition knows.
    return assets_def.get_output_name_for_asset_check_key(key)


def time_window_of(partitions_def: dg.TimeWindowPartitionsDefinition, key: str) -> dg.TimeWindow:
    """The time window of one partition key."""
    # A batch needs each key's window; the @public partition_time_window spans the whole batch.
    return partitions_def.time_window_for_partition_key(key)


def partition_keys_starting_in(
    partitions_def: dg.TimeWindowPartitionsDefinition, start: datetime, end: datetime
) -> list[str]:
    """The keys of the windows of ``partitions_def``'s cadence that start in ``[start, end)``.

    The definition's own start and end are ignored: a caller compares with
    ``get_partition_keys()`` to tell which keys exist.
    """
    # The watch sensor maps a changed day or instant to the windows around it; the only
    # @public lookup lists every key of the definition, from its first.
    return list(partitions_def.get_partition_keys_in_time_window(dg.TimeWindow(start, end)))


def condition_without(condition: dg.AutomationCondition, operand: dg.AutomationCondition) -> dg.AutomationCondition:
    """``condition`` (an AND, such as ``AutomationCondition.eager()``) without one operand."""
    # Dagster's docs customize eager exactly so ("Updating older time partitions":
    # eager().without(in_latest_time_window())), but AndAutomationCondition.without is
    # not @public; rebuilding eager from its parts would drift from Dagster's eager.
    return condition.without(operand)


def is_materializable(assets_def: dg.AssetsDefinition) -> bool:
    """Whether ``assets_def`` materializes (an external or observable asset does not)."""
    # A Python asset may be external; a job per group selects only what can run.
    return assets_def.is_materializable


def run_asset_graph(context: dg.AssetExecutionContext) -> Any:
    """The asset graph of the run's code location; a run executed in process has none, and
    its job's graph answers (where every asset outside the selection looks external)."""
    try:
        return context.repository_def.asset_graph
    except Exception:  # noqa: BLE001 - Dagster's "No repository definition was set" check
        return context.job_def.asset_layer.asset_graph


def is_observable_source(graph: Any, key: dg.AssetKey) -> bool:
    """Whether ``key`` is in ``graph`` as an observable asset that nothing materializes (an
    external table: it is landed, then observed)."""
    if not graph.has(key):
        return False
    node = graph.get(key)
    return node.is_observable and not node.is_materializable


def sensor_asset_selection(sensor: dg.SensorDefinition) -> Optional[dg.AssetSelection]:
    """The assets a sensor targets (an automation condition sensor: those it evaluates)."""
    # Our automation sensor leaves out the assets a user's own automation sensor evaluates:
    # two sensors evaluating one asset would both request it.
    return sensor.asset_selection


def add_run_tags(instance: dg.DagsterInstance, run_id: str, tags: Mapping[str, str]) -> None:
    """Add or overwrite tags of a run that is in progress."""
    # A failed blocking data test tags its own run so that no retry repeats it; no @public
    # API writes a run's tags.
    instance.add_run_tags(run_id, dict(tags))


def retries_on_step_failure(instance: dg.DagsterInstance) -> bool:
    """The instance's ``run_retries: retry_on_asset_or_op_failure`` setting."""
    # Restored on a run that a data test had tagged; the instance's settings are not @public.
    return instance.run_retries_retry_on_asset_or_op_failure


def output_run(context: dg.OutputContext) -> Optional[tuple[dg.DagsterRun, dg.DagsterInstance]]:
    """The run an IO manager writes for and its instance; ``None`` for a bare ``build_output_context()``."""
    # OutputContext.step_context is an IO manager's only handle on its run's lineage (a
    # re-execution's commit idempotency) and instance.
    try:
        step_context = context.step_context
    except Exception:  # noqa: BLE001 - a context built without a run has no step context
        return None
    return step_context.dagster_run, step_context.instance


def input_run(context: dg.InputContext) -> Optional[tuple[dg.DagsterInstance, str]]:
    """The instance and run id an IO manager loads an input for; ``None`` for a bare
    ``build_input_context()``."""
    try:
        step_context = context.step_context
    except Exception:  # noqa: BLE001 - a context built without a run has no step context
        return None
    return step_context.instance, step_context.dagster_run.run_id


def add_partition_output_metadata(context: dg.OutputContext, metadata: Mapping[str, Any], partition_key: str) -> None:
    """Metadata on one partition's materialization of the output's asset."""
    # OutputContext.add_output_metadata covers the whole output; a batch records each
    # partition's row count, which only the step context can.
    context.step_context.add_asset_metadata(dict(metadata), asset_key=context.asset_key, partition_key=partition_key)


__all__ = [
    "ASSET_PARTITION_RANGE_END_TAG",
    "ASSET_PARTITION_RANGE_START_TAG",
    "AssetCheckEvaluationTargetMaterializationData",
    "DATA_VERSION_TAG",
    "KIND_PREFIX",
    "PARTITION_NAME_TAG",
    "VALID_GROUP_NAME_REGEX",
    "add_partition_output_metadata",
    "add_run_tags",
    "backfill_policy_of",
    "check_evaluations",
    "check_output_name",
    "condition_without",
    "has_out_of_range_cron_interval",
    "implicit_asset_job",
    "input_run",
    "is_materializable",
    "is_valid_cron_string",
    "is_valid_owner",
    "is_valid_strict_tag_value",
    "is_valid_tag_key",
    "materialized_partitions",
    "output_run",
    "partition_keys_starting_in",
    "resolve_assets_def",
    "resolve_job_def",
    "retries_on_step_failure",
    "sensor_asset_selection",
    "time_window_of",
    "with_metadata",
]



def run_launcher_instance(launcher: Any) -> dg.DagsterInstance:
    """The instance a run launcher belongs to: the ``_instance`` every launcher of Dagster's
    own (and dagster-docker's, dagster-k8s's) reads its runs' events from; no public name."""
    return launcher._instance


def set_output_data_version(context: dg.OutputContext, version: str) -> None:
    """Make ``version`` the data version of the materialization an IO manager's write records.

    An ``Output(data_version=)`` is the compute's to give; the IO manager learns the Delta
    version only when it has written. Dagster takes the step's cached data version of the
    asset as user-provided when it builds the materialization, after ``handle_output``
    (``execute_step._get_output_asset_events``). A bare ``build_output_context()`` has no step.
    """
    try:
        step_context = context.step_context
    except Exception:  # noqa: BLE001 - a context built without a run has no step context
        return
    step_context.set_data_version(context.asset_key, dg.DataVersion(version))


def register_library(name: str, version: str) -> None:
    """Add ``name`` to the libraries Dagster reports (its telemetry and version listings), as
    Dagster's own integration libraries do on import (``dagster-dbt`` calls the same
    registry); ``is_dagster_package=False``: our version does not follow Dagster's."""
    from dagster._core.libraries import DagsterLibraryRegistry

    DagsterLibraryRegistry.register(name, version, is_dagster_package=False)


def registered_libraries() -> Mapping[str, str]:
    """The libraries Dagster reports, by name (for the test that pins our registration)."""
    from dagster._core.libraries import DagsterLibraryRegistry

    return DagsterLibraryRegistry.get()
