"""The private Dagster names and non-public members assetlake relies on still exist and
still mean what we use.

``assetlake_dagster/defs/dagster_internals.py`` is the one module importing ``dagster._…`` or
using a member of a Dagster class that is not ``@public``; a Dagster release that moves or
changes one of them fails here, by name.
"""

import warnings

import dagster as dg
import pytest

from assetlake_dagster.defs import dagster_internals as di


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


#: Members of public Dagster classes that are not @public, each used through one adapter function.
_NON_PUBLIC_MEMBERS = (
    "add_asset_metadata", "add_run_tags", "asset_check_evaluation_data", "asset_selection", "backfill_policy",
    "event_type_value", "get_asset_check_evaluations", "get_materialized_partitions",
    "get_output_name_for_asset_check_key", "is_materializable", "resolve_assets_def",
    "resolve_implicit_job_def_def_for_assets", "resolve_job_def", "run_retries_retry_on_asset_or_op_failure",
    "step_context", "time_window_for_partition_key", "without", "get_python_identifier", "_replace", "_instance",
)


def test_the_library_uses_non_public_dagster_members_only_through_the_adapter():
    import pathlib
    import re

    package = pathlib.Path(di.__file__).parent
    member = re.compile(r"\.(" + "|".join(_NON_PUBLIC_MEMBERS) + r")\b")
    offenders = [
        f"{path.relative_to(package)}:{number}: {line.strip()}"
        for path in package.rglob("*.py")
        if path.name != "dagster_internals.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if member.search(line)
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


def test_cron_checks_accept_and_reject_what_schedule_definition_does():
    assert di.is_valid_cron_string("0 2 * * *") and di.is_valid_cron_string("@daily")
    for cron in ("0 2 * *", "0 0 2 * * *", "61 * * * *", "0 0 30 2 *"):
        assert not di.is_valid_cron_string(cron)
        with pytest.raises(dg.DagsterInvalidDefinitionError):
            dg.ScheduleDefinition(name="s", cron_schedule=cron, target=dg.AssetSelection.all())
    assert di.has_out_of_range_cron_interval("*/90 * * * *") and not di.has_out_of_range_cron_interval("*/15 * * * *")


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


# -- the members of public classes that are not @public -------------------------------------
_DAILY = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-04")


class _RecordingIOManager(dg.IOManager):
    """Calls the IO manager adapters as the Delta IO manager does, and keeps what they gave."""

    def __init__(self):
        self.seen: dict = {}

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        self.seen["run"] = di.output_run(context)
        di.add_partition_output_metadata(context, {"rows": dg.MetadataValue.int(7)}, context.asset_partition_keys[0])

    def load_input(self, context: dg.InputContext):
        # Required by dg.IOManager; the one asset here has no inputs, so nothing loads.
        raise AssertionError(f"unexpected input load of {context.asset_key.to_user_string()}")


def _events():
    yield dg.Output(1)
    yield dg.AssetCheckResult(check_name="positive", passed=True)


with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)  # @asset(backfill_policy=) is beta in Dagster 1.13
    events = dg.asset(
        name="events",
        partitions_def=_DAILY,
        backfill_policy=dg.BackfillPolicy.multi_run(2),
        check_specs=[dg.AssetCheckSpec("positive", asset="events")],
    )(_events)


def test_automation_adapters_answer_as_the_library_expects():
    A = dg.AutomationCondition
    eager = di.condition_without(A.eager(), A.in_latest_time_window())
    assert A.in_latest_time_window() in A.eager().children and A.in_latest_time_window() not in eager.children
    assert len(eager.children) == len(A.eager().children) - 1
    external = di.resolve_assets_def(dg.Definitions(assets=[dg.AssetSpec("x")]), dg.AssetKey("x"))
    assert di.is_materializable(events) and not di.is_materializable(external)
    sensor = dg.AutomationConditionSensorDefinition("s", target=dg.AssetSelection.assets("events"))
    assert di.sensor_asset_selection(sensor).resolve(dg.Definitions(assets=[events]).resolve_asset_graph()) == {
        dg.AssetKey("events")
    }


def test_with_metadata_equals_replace_attributes():
    spec = dg.AssetSpec(
        ["s", "t"], deps=["s/u"], description="d", metadata={"a": 1}, group_name="g", owners=["team:x"],
        tags={"k": "v"}, kinds={"spark"}, partitions_def=_DAILY, code_version="1",
    )
    metadata = {"a": 2, "b": dg.MetadataValue.path("/x")}
    assert di.with_metadata(spec, metadata) == spec.replace_attributes(metadata=metadata)
    assert di.with_metadata(spec, metadata) != spec


def test_definition_lookups_answer_as_the_library_expects():
    defs = dg.Definitions(assets=[events])
    key = dg.AssetKey("events")
    assets_def = di.resolve_assets_def(defs, key)
    assert assets_def.keys == {key}
    assert di.backfill_policy_of(assets_def).max_partitions_per_run == 2
    assert di.check_output_name(assets_def, dg.AssetCheckKey(key, "positive")) in assets_def.node_def.output_dict
    window = di.time_window_of(_DAILY, "2024-01-02")
    assert (window.start.isoformat()[:10], window.end.isoformat()[:10]) == ("2024-01-02", "2024-01-03")
    assert di.implicit_asset_job(defs, [key]).partitions_def == _DAILY
    job = dg.define_asset_job("only_events", selection=[key])
    assert di.resolve_job_def(dg.Definitions.merge(defs, dg.Definitions(jobs=[job])), "only_events").name == "only_events"


def test_run_and_instance_adapters_work_on_a_real_run():
    io_manager = _RecordingIOManager()
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize([events], instance=instance, partition_key="2024-01-02", resources={"io_manager": io_manager})
        assert result.dagster_run.is_success
        run, run_instance = io_manager.seen["run"]
        assert run.run_id == result.run_id and run.root_run_id is None and run_instance is instance
        assert di.output_run(dg.build_output_context()) is None
        [evaluation] = di.check_evaluations(result)
        assert (evaluation.check_name, evaluation.passed) == ("positive", True)
        assert di.materialized_partitions(instance, dg.AssetKey("events")) == {"2024-01-02"}
        record = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("events"), asset_partitions=["2024-01-02"]), limit=1
        ).records[0]
        assert record.asset_materialization.metadata["rows"] == dg.MetadataValue.int(7)
        assert isinstance(di.retries_on_step_failure(instance), bool)
        di.add_run_tags(instance, result.run_id, {"assetlake/test": "yes"})
        assert instance.get_run_by_id(result.run_id).tags["assetlake/test"] == "yes"


def test_the_package_registers_itself_with_dagsters_library_registry():
    import assetlake_dagster
    from assetlake_dagster.defs.dagster_internals import registered_libraries

    assert registered_libraries()["assetlake-dagster"] == assetlake_dagster.__version__
