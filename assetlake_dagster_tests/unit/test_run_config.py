"""`-- $name (type)` arguments as run config: the op's schema (launchpad defaults), the
`sql_run_config` helper, Dagster's own check of run config, and `assetlake backfill --arg`.

Nothing here starts Spark: every error must come before a run or a session does.
"""

import datetime as dt
import os

import dagster as dg
import pytest

from assetlake_dagster import ConfigError, SparkDeltaResource, build_definitions, sql_run_config
from assetlake_dagster.defs.run_config import ARGUMENTS_METADATA_KEY, arguments_from_metadata
from assetlake_dagster.spec import ArgumentSpec, ArgumentType
from assetlake_dagster_tests.helpers import PROJECTS, run_cli

PROJECT = os.path.join(PROJECTS, "arguments")
TYPED = dg.AssetKey(["mart", "typed"])
EVENTS = dg.AssetKey(["mart", "big_events"])


@pytest.fixture(scope="module")
def defs(tmp_path_factory):
    return build_definitions(PROJECT, lake_root=str(tmp_path_factory.mktemp("lake")))


def typed_config(**values):
    return {"ops": {"sql__mart__typed": {"config": values}}}


# -- the op's config schema: what the launchpad shows and scaffolds --------------------------


def test_each_argument_is_a_config_field_with_its_description_and_default(defs):
    fields = defs.resolve_assets_def(TYPED).op.config_schema.config_type.fields
    described = {
        name: (f.config_type.given_name, f.is_required, f.default_value if f.default_provided else None, f.description)
        for name, f in fields.items()
    }
    assert described == {
        "since": ("String", True, None, "SQL argument :since (date, as YYYY-MM-DD)"),
        "until": ("String", False, "2024-01-31T08:00:00", "SQL argument :until (timestamp, as YYYY-MM-DDTHH:MM:SS)"),
        "top_n": ("Int", False, 20, "SQL argument :top_n (int)"),
        "ratio": ("Float", False, 0.5, "SQL argument :ratio (float)"),
        "active": ("Bool", False, True, "SQL argument :active (bool)"),
        "label": ("String", False, "all", "SQL argument :label (string)"),
    }
    # Dagster fills every default in; only the required argument has to be given.
    resolved = dg.validate_run_config(defs.resolve_implicit_global_asset_job_def(), typed_config(since="2024-01-01"))
    assert resolved["ops"]["sql__mart__typed"]["config"] == {
        "since": "2024-01-01", "until": "2024-01-31T08:00:00", "top_n": 20, "ratio": 0.5, "active": True, "label": "all"
    }


def test_a_file_without_arguments_has_no_config_schema_and_no_argument_metadata(defs):
    plain = defs.resolve_assets_def(dg.AssetKey(["mart", "plain"]))
    assert plain.op.config_schema.config_type.fields == {}
    assert ARGUMENTS_METADATA_KEY not in plain.get_asset_spec().metadata


def test_the_arguments_are_listed_in_the_asset_metadata(defs):
    metadata = defs.resolve_assets_def(TYPED).get_asset_spec().metadata
    assert arguments_from_metadata(metadata)[:2] == (
        ArgumentSpec("since", ArgumentType.DATE),
        ArgumentSpec("until", ArgumentType.TIMESTAMP, dt.datetime(2024, 1, 31, 8), True),
    )


# -- sql_run_config ----------------------------------------------------------------------------


def test_sql_run_config_names_the_op_and_keeps_defaults_out(defs):
    assert sql_run_config(defs, {"mart/big_events": {"min_amount": 2}}) == {
        "ops": {"sql__mart__big_events": {"config": {"min_amount": 2.0}}}
    }
    # Several assets in one run; keys as AssetKey or path too.
    config = sql_run_config(defs, {EVENTS: {"min_amount": 1.5}, ("mart", "typed"): {"since": "2024-01-02"}})
    assert config == {
        "ops": {
            "sql__mart__big_events": {"config": {"min_amount": 1.5}},
            "sql__mart__typed": {"config": {"since": "2024-01-02"}},
        }
    }
    assert sql_run_config(defs, {}) == {} == sql_run_config(defs, {"mart/plain": {}})


@pytest.mark.parametrize(
    "name, value, expected",
    [
        pytest.param("top_n", 5, 5, id="int"),
        pytest.param("top_n", "-5", -5, id="int-text"),
        pytest.param("ratio", 2, 2.0, id="float-from-int"),
        pytest.param("ratio", "1e-3", 0.001, id="float-text"),
        pytest.param("active", False, False, id="bool"),
        pytest.param("active", "TRUE", True, id="bool-text"),
        pytest.param("label", "x' OR '1'='1", "x' OR '1'='1", id="string-as-is"),
        pytest.param("label", "'quoted'", "'quoted'", id="string-keeps-quotes"),
        pytest.param("since", dt.date(2024, 2, 29), "2024-02-29", id="date"),
        pytest.param("since", "2024-02-29", "2024-02-29", id="date-text"),
        pytest.param("until", dt.datetime(2024, 1, 31, 8, 30), "2024-01-31T08:30:00", id="timestamp"),
        pytest.param("until", "2024-01-31 08:30:00", "2024-01-31T08:30:00", id="timestamp-text"),
        pytest.param("until", "2024-01-31", "2024-01-31T00:00:00", id="timestamp-from-a-date-text"),
    ],
)
def test_values_are_converted_to_the_argument_type(defs, name, value, expected):
    values = {"since": "2024-01-01", name: value}
    config = sql_run_config(defs, {"mart/typed": values})["ops"]["sql__mart__typed"]["config"]
    assert config[name] == expected and type(config[name]) is type(expected)
    # What the helper builds is what Dagster accepts.
    dg.validate_run_config(defs.resolve_implicit_global_asset_job_def(), typed_config(**config))


@pytest.mark.parametrize(
    "name, value, message",
    [
        pytest.param("top_n", "five", "argument 'top_n' (int) cannot be 'five'. Give a whole number, e.g. 20.", id="int"),
        pytest.param("top_n", 2.5, "argument 'top_n' (int) cannot be 2.5. Give a whole number, e.g. 20.", id="int-float"),
        pytest.param("top_n", True, "argument 'top_n' (int) cannot be True. Give a whole number, e.g. 20.", id="int-bool"),
        pytest.param("top_n", "２０", "argument 'top_n' (int) cannot be '２０'. Give a whole number, e.g. 20.", id="int-lookalike"),
        pytest.param("ratio", "half", "argument 'ratio' (float) cannot be 'half'. Give a number, e.g. 0.5.", id="float"),
        pytest.param("active", "yes", "argument 'active' (bool) cannot be 'yes'. Give true or false.", id="bool"),
        pytest.param("active", 1, "argument 'active' (bool) cannot be 1. Give true or false.", id="bool-int"),
        pytest.param("label", 5, "argument 'label' (string) cannot be 5. Give a string.", id="string"),
        pytest.param(
            "since", "2024-02-30", "argument 'since' (date) cannot be '2024-02-30'. Give a date as YYYY-MM-DD, "
            "e.g. 2024-01-31.", id="date-not-a-day",
        ),
        pytest.param(
            "since", dt.datetime(2024, 1, 1, 8), "argument 'since' (date) cannot be datetime.datetime(2024, 1, 1, 8, 0). "
            "Give a date as YYYY-MM-DD, e.g. 2024-01-31.", id="date-datetime",
        ),
        pytest.param(
            "until", "yesterday", "argument 'until' (timestamp) cannot be 'yesterday'. Give an ISO timestamp, "
            "e.g. 2024-01-31T08:00:00.", id="timestamp",
        ),
    ],
)
def test_a_badly_typed_value_says_how_to_write_it(defs, name, value, message):
    with pytest.raises(ConfigError) as err:
        sql_run_config(defs, {"mart/typed": {"since": "2024-01-01", name: value}})
    assert str(err.value) == f"mart/typed: {message}"


def test_an_unknown_argument_suggests_the_closest_and_lists_the_arguments(defs):
    with pytest.raises(ConfigError) as err:
        sql_run_config(defs, {"mart/typed": {"since": "2024-01-01", "topn": 5}})
    assert str(err.value) == (
        "mart/typed has no argument 'topn'. Did you mean 'top_n'? Its arguments: since (date), "
        "until (timestamp) = 2024-01-31T08:00:00, top_n (int) = 20, ratio (float) = 0.5, active (bool) = true, "
        "label (string) = 'all'."
    )


def test_an_unknown_asset_suggests_the_closest(defs):
    with pytest.raises(ConfigError) as err:
        sql_run_config(defs, {"mart/big_event": {"min_amount": 1}})
    assert str(err.value) == "no asset 'mart/big_event' in these definitions. Did you mean 'mart/big_events'?"
    with pytest.raises(ConfigError) as err:
        sql_run_config(defs, {"top_customers": {"top_n": 1}})
    assert str(err.value) == "no asset 'top_customers' in these definitions. Name an asset by its key, as <schema>/<table>."


def test_an_asset_without_arguments_takes_none(defs):
    for asset in ("mart/plain", "raw/events"):  # a SQL file without arguments, an external table
        with pytest.raises(ConfigError) as err:
            sql_run_config(defs, {asset: {"top_n": 1}})
        assert str(err.value) == (
            f"{asset} has no SQL arguments, so its run config takes none. Leave it out, or declare one in its "
            "SQL file as '-- $name (type) [= default]'."
        )


def test_a_required_argument_must_be_given_and_every_problem_is_reported_together(defs):
    with pytest.raises(ConfigError) as err:
        sql_run_config(defs, {"mart/typed": {"top_n": "x", "lable": "a"}, "mart/nope": {}})
    assert str(err.value).splitlines() == [
        "mart/typed: argument 'top_n' (int) cannot be 'x'. Give a whole number, e.g. 20.",
        "mart/typed has no argument 'lable'. Did you mean 'label'? Its arguments: since (date), "
        "until (timestamp) = 2024-01-31T08:00:00, top_n (int) = 20, ratio (float) = 0.5, active (bool) = true, "
        "label (string) = 'all'.",
        "mart/typed: argument 'since' (date) has no default. Give it a value.",
        "no asset 'mart/nope' in these definitions. Did you mean 'mart/typed'?",
    ]


def test_sql_run_config_reads_a_repository_or_the_assets_given_to_materialize(defs):
    expected = {"ops": {"sql__mart__big_events": {"config": {"min_amount": 3.0}}}}
    # A sensor's context.repository_def, and the AssetsDefinitions of dg.materialize.
    assert sql_run_config(defs.get_repository_def(), {"mart/big_events": {"min_amount": 3}}) == expected
    assets = [defs.resolve_assets_def(EVENTS), dg.AssetSpec("other")]
    assert sql_run_config(assets, {"mart/big_events": {"min_amount": "3"}}) == expected


# -- Dagster checks the run config before the run: no step, no Spark ---------------------------


def test_dagster_rejects_an_unknown_key_before_any_run(defs):
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_implicit_global_asset_job_def()
    with pytest.raises(dg.DagsterInvalidConfigError) as err:
        job.execute_in_process(instance=instance, asset_selection=[TYPED], run_config=typed_config(since="2024-01-01", top=5))
    assert (
        'Received unexpected config entry "top" at path root:ops:sql__mart__typed:config. Expected: '
        '"{ active?: Bool label?: String ratio?: Float since: String top_n?: Int until?: String }".'
    ) in str(err.value)
    with pytest.raises(dg.DagsterInvalidConfigError) as err:
        dg.materialize([defs.resolve_assets_def(TYPED)], instance=instance, run_config=typed_config(top_n="5", since="x"))
    assert (
        'Invalid scalar at path root:ops:sql__mart__typed:config:top_n. Value "5" of type "<class \'str\'>" is not '
        'valid for expected type "Int".'
    ) in str(err.value)
    with pytest.raises(dg.DagsterInvalidConfigError) as err:
        job.execute_in_process(instance=instance, asset_selection=[TYPED])
    assert "Example config for the missing entry: {'ops': {'sql__mart__typed': {'config': {'since': '...'}}}}" in str(
        err.value
    )
    assert instance.get_runs() == []  # no run was created, so no step and no Spark session


def test_a_date_that_is_not_a_date_fails_the_step_before_its_spark_session(tmp_path):
    # Dagster only checks that a date is text. The step checks it first: a resource that
    # cannot make a session (an unknown mode) would fail with another message otherwise.
    broken = SparkDeltaResource(lake_root=str(tmp_path), mode="not-a-mode")
    defs = build_definitions(PROJECT, spark=broken)
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        asset_selection=[TYPED],
        run_config=typed_config(since="2024-02-30"),
        raise_on_error=False,
    )
    assert not result.success
    error = result.get_step_failure_events()[0].event_specific_data.error
    assert error.message.startswith(
        "assetlake_dagster.errors.AssetlakeError: run config since='2024-02-30' is not a date. "
        "Give a date as YYYY-MM-DD, e.g. 2024-01-31."
    )


# -- assetlake backfill --arg: checked before any run or Spark --------------------------------


@pytest.fixture
def cli_project(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("ASSETLAKE_PROJECT_DIR", PROJECT)
    monkeypatch.setenv("ASSETLAKE_LAKE_ROOT", str(tmp_path / "lake"))
    return home


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(
            ["--arg", "min_amont=2"],
            "mart/big_events has no argument 'min_amont'. Did you mean 'min_amount'? Its arguments: "
            "min_amount (float) = 0.0.",
            id="unknown-name",
        ),
        pytest.param(
            ["--arg", "min_amount=lots"],
            "mart/big_events: argument 'min_amount' (float) cannot be 'lots'. Give a number, e.g. 0.5.",
            id="bad-value",
        ),
        pytest.param(
            ["--arg", "min_amount"], "--arg 'min_amount' is not NAME=VALUE. Write it as e.g. --arg top_n=5.", id="no-equals"
        ),
        pytest.param(
            ["--arg", "min_amount=1", "--arg", "min_amount=2"],
            "--arg min_amount is given twice. Give each argument once.",
            id="twice",
        ),
    ],
)
def test_backfill_arg_errors_come_before_any_run(capsys, cli_project, args, message):
    code, out, err = run_cli(capsys, "backfill", "mart/big_events", *args)
    assert (code, out, err) == (1, "", message + "\n")
    with dg.DagsterInstance.from_config(str(cli_project)) as instance:
        assert instance.get_runs() == []


def test_backfill_of_an_asset_with_a_required_argument_needs_arg(capsys, cli_project):
    # mart/typed is not partitioned, but the missing value is reported first, before anything.
    code, out, err = run_cli(capsys, "backfill", "mart/typed", "--arg", "top_n=5")
    assert (code, err) == (1, "mart/typed: argument 'since' (date) has no default. Give it a value.\n")
    code, out, err = run_cli(capsys, "backfill", "mart/plain", "--arg", "top_n=5")
    assert code == 1 and err.startswith("mart/plain has no SQL arguments, so its run config takes none.")


def test_run_backfill_refuses_run_config_that_does_not_fit_before_any_run(defs):
    from assetlake_dagster.cli.backfill import run_backfill

    instance = dg.DagsterInstance.ephemeral()
    wrong = {"ops": {"sql__mart__big_events": {"config": {"min_amont": 1.0}}}}
    with pytest.raises(ConfigError) as err:
        run_backfill(defs, EVENTS, None, None, instance=instance, run_config=wrong, log=lambda line: None)
    assert str(err.value).splitlines() == [
        "the run config does not fit mart/big_events; no run started.",
        "Error in config for job __ASSET_JOB",
        '    Error 1: Received unexpected config entry "min_amont" at path root:ops:sql__mart__big_events:config. '
        'Expected: "{ min_amount?: Float }".',
        "Build it with sql_run_config(defs, {'mart/big_events': {<argument>: <value>}}): it names the op and "
        "checks each argument's name and type.",
    ]
    assert instance.get_runs() == []
