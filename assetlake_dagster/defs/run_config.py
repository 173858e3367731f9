"""``-- $name (type) [= default]`` SQL arguments as Dagster run config.

Each argument of a file is a config field of its asset's op: ``-- $top_n (int) = 20`` in
``top_customers.sql`` is ``ops: {sql__analytics__top_customers: {config: {top_n: 5}}}``,
with the default shown (and filled in) by the launchpad. The arguments are also kept in
the asset's metadata (:data:`ARGUMENTS_METADATA_KEY`), so :func:`sql_run_config` can
build and check that config from the definitions alone: a schedule, sensor or script
names the asset and its argument values, never the op.

Run config carries ``date`` and ``timestamp`` values as ISO text (Dagster config has no
date type); :func:`bind_arguments` turns them back into Python values for Spark. A
``timestamp`` without an offset stays naive here: the run reads it as a wall time in its
Spark session's zone (``spark.sql.session.timeZone``), as a SQL unit test does, never in this
machine's (:func:`assetlake_dagster.spark.python_values.in_session_zone`).
"""

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union

import dagster as dg

from assetlake_dagster.defs.dagster_internals import resolve_assets_def
from assetlake_dagster.errors import AssetlakeError, ConfigError, did_you_mean
from assetlake_dagster.spec import ArgumentSpec, ArgumentType, convert_value, typed_value

#: The asset metadata key listing a SQL asset's arguments (``{name: {type, default?}}``).
ARGUMENTS_METADATA_KEY = "assetlake/arguments"

_CONFIG_TYPES = {
    ArgumentType.STRING: dg.String,
    ArgumentType.INT: dg.Int,
    ArgumentType.FLOAT: dg.Float,
    ArgumentType.BOOL: dg.Bool,
    ArgumentType.DATE: dg.String,
    ArgumentType.TIMESTAMP: dg.String,
}
#: How a value of each type is written in run config (launchpad, ``--arg``, Python).
_TYPE_NOTES = {
    ArgumentType.DATE: "date, as YYYY-MM-DD",
    ArgumentType.TIMESTAMP: "timestamp, as YYYY-MM-DDTHH:MM:SS",
}

AssetsSource = Union[dg.Definitions, dg.RepositoryDefinition, Iterable[dg.AssetsDefinition]]
AssetName = Union[str, dg.AssetKey, Sequence[str]]


def argument_config_schema(arguments: Sequence[ArgumentSpec]) -> Optional[dict[str, dg.Field]]:
    """``-- $name (type) [= default]`` lines -> the config schema of the asset's op.

    An argument with a default is optional and carries it as the field's ``default_value``
    (the launchpad shows it and Dagster fills it in); one without is required.

    Example:
        >>> schema = argument_config_schema((ArgumentSpec("top_n", ArgumentType.INT, 20, True),))
        >>> schema["top_n"].default_value, schema["top_n"].is_required, schema["top_n"].description
        (20, False, 'SQL argument :top_n (int)')
    """
    if not arguments:
        return None
    schema = {}
    for arg in arguments:
        kwargs: dict[str, Any] = {"description": f"SQL argument :{arg.name} ({_TYPE_NOTES.get(arg.type, arg.type.value)})"}
        if arg.has_default:
            kwargs["default_value"] = _config_form(arg.default)
        else:
            kwargs["is_required"] = True
        schema[arg.name] = dg.Field(_CONFIG_TYPES[arg.type], **kwargs)
    return schema


def bind_arguments(arguments: Sequence[ArgumentSpec], config: Mapping[str, Any]) -> dict[str, Any]:
    """The op's run config -> typed Python values for Spark's parameter binding.

    A ``timestamp`` without an offset is returned naive (no session is needed here); the run
    gives it the session's zone before binding it (``sql_asset_run.run_sql_asset``).

    Raises:
        AssetlakeError: a ``date`` or ``timestamp`` value that is not one (Dagster only
            checked that it is text); retrying cannot help.

    Example:
        >>> bind_arguments((ArgumentSpec("since", ArgumentType.DATE),), {"since": "2024-01-31"})
        {'since': datetime.date(2024, 1, 31)}
    """
    values = {}
    for arg in arguments:
        value = config.get(arg.name, arg.default)
        if isinstance(value, str) and arg.type in (ArgumentType.DATE, ArgumentType.TIMESTAMP):
            try:
                value = typed_value(arg, value)
            except ValueError as exc:
                raise AssetlakeError(
                    f"run config {arg.name}={value!r} is not a {arg.type.value}. {exc}", allow_retries=False
                ) from exc
        values[arg.name] = value
    return values


def arguments_metadata(arguments: Sequence[ArgumentSpec]) -> dict[str, Any]:
    """The asset metadata that lists ``arguments`` (none for a file without any).

    Example:
        >>> arguments_metadata((ArgumentSpec("since", ArgumentType.DATE, dt.date(2024, 1, 1), True),))
        {'assetlake/arguments': {'since': {'type': 'date', 'default': '2024-01-01'}}}
    """
    if not arguments:
        return {}
    listed: dict[str, Any] = {}
    for arg in arguments:
        listed[arg.name] = {"type": arg.type.value, **({"default": _config_form(arg.default)} if arg.has_default else {})}
    return {ARGUMENTS_METADATA_KEY: listed}


def arguments_from_metadata(metadata: Optional[Mapping[str, Any]]) -> tuple[ArgumentSpec, ...]:
    """The arguments :func:`arguments_metadata` listed (values may be ``JsonMetadataValue``).

    Example:
        >>> arguments_from_metadata({"assetlake/arguments": {"top_n": {"type": "int", "default": 20}}})
        (ArgumentSpec(name='top_n', type=<ArgumentType.INT: 'int'>, default=20, has_default=True, location=None),)
    """
    raw = (metadata or {}).get(ARGUMENTS_METADATA_KEY)
    listed = getattr(raw, "value", raw) or {}
    arguments = []
    for name, entry in listed.items():
        type_ = ArgumentType(entry["type"])
        if "default" in entry:
            default = entry["default"]
            if type_ in (ArgumentType.DATE, ArgumentType.TIMESTAMP):
                default = convert_value(default, type_)
            arguments.append(ArgumentSpec(name, type_, default, True))
        else:
            arguments.append(ArgumentSpec(name, type_))
    return tuple(arguments)


def sql_run_config(assets: AssetsSource, arguments: Mapping[AssetName, Mapping[str, Any]]) -> dict[str, Any]:
    """Run config that gives SQL assets' ``-- $name (type)`` arguments these values.

    Name the assets by key and the arguments by name; the op each asset runs in is looked
    up, every name is checked, and each value is converted to its argument's type, so a
    mistake fails here, with what to write instead, and not when the run launches. Use the
    result wherever Dagster takes run config: ``RunRequest(run_config=...)``,
    ``ScheduleDefinition(run_config=...)``, ``dg.materialize(..., run_config=...)``,
    ``job.execute_in_process(run_config=...)``, or ``json.dumps`` it for
    ``dagster asset materialize --config-json``.

    Args:
        assets: where the assets are: the ``Definitions`` of :func:`build_definitions`,
            a sensor's ``context.repository_def``, or the ``AssetsDefinition`` objects
            handed to ``dg.materialize``.
        arguments: asset key (``"schema/table"``, an ``AssetKey`` or its path) -> argument
            name -> value. A value is the Python value (``5``, ``0.5``, ``True``,
            ``datetime.date(2024, 1, 31)``) or its text as in the SQL header (``"5"``,
            ``"2024-01-31"``; a ``string`` argument takes its text as it is). Arguments
            left out keep their defaults; one without a default must be given.

    Returns:
        ``{"ops": {<op>: {"config": {<name>: <value>}}}}``, dates and timestamps as ISO
        text; ``{}`` when no value is given.

    Raises:
        ConfigError: every unknown asset, unknown argument, badly typed value and missing
            required value, together, each with a fix ("Did you mean ...?", the asset's
            arguments and their types).

    Example:
        >>> defs = build_definitions("pipelines/")  # doctest: +SKIP
        >>> sql_run_config(defs, {"analytics/top_customers": {"top_n": 5}})  # doctest: +SKIP
        {'ops': {'sql__analytics__top_customers': {'config': {'top_n': 5}}}}

        In a sensor::

            @dg.sensor(target="analytics/top_customers")
            def top_five(context):
                config = sql_run_config(context.repository_def, {"analytics/top_customers": {"top_n": 5}})
                return dg.RunRequest(run_config=config)
    """
    lookup, known = _asset_lookup(assets)
    ops: dict[str, Any] = {}
    problems: list[str] = []
    for name, values in arguments.items():
        key = _asset_key(name)
        assets_def = lookup(key) if key in known else None
        if assets_def is None:
            text = key.to_user_string()
            hint = did_you_mean(text, [k.to_user_string() for k in known]) or " Name an asset by its key, as <schema>/<table>."
            problems.append(f"no asset '{text}' in these definitions.{hint}")
            continue
        if not isinstance(values, Mapping):
            problems.append(
                f"the arguments of {key.to_user_string()} are {values!r}, not a mapping of name to value. "
                f"Write e.g. {{'{key.to_user_string()}': {{'name': value}}}}."
            )
            continue
        config = _asset_config(key, assets_def, values, problems)
        if config:
            ops.setdefault(assets_def.node_def.name, {"config": {}})["config"].update(config)
    if problems:
        raise ConfigError("\n".join(problems))
    return {"ops": ops} if ops else {}


def _asset_config(
    key: dg.AssetKey, assets_def: dg.AssetsDefinition, values: Mapping[str, Any], problems: list[str]
) -> dict[str, Any]:
    """One asset's op config for ``values``; its problems appended to ``problems``."""
    asset = key.to_user_string()
    declared = {arg.name: arg for arg in arguments_from_metadata(assets_def.get_asset_spec(key).metadata)}
    if values and not declared:
        problems.append(
            f"{asset} has no SQL arguments, so its run config takes none. Leave it out, or declare "
            "one in its SQL file as '-- $name (type) [= default]'."
        )
        return {}
    listing = ", ".join(_describe(arg) for arg in declared.values())
    config: dict[str, Any] = {}
    for name, value in values.items():
        arg = declared.get(name)
        if arg is None:
            problems.append(f"{asset} has no argument {name!r}.{did_you_mean(str(name), declared)} Its arguments: {listing}.")
            continue
        try:
            config[name] = _config_form(typed_value(arg, value))
        except ValueError as exc:
            problems.append(f"{asset}: argument {name!r} ({arg.type.value}) cannot be {value!r}. {exc}")
    for arg in declared.values():
        if not arg.has_default and arg.name not in values:
            problems.append(f"{asset}: argument {arg.name!r} ({arg.type.value}) has no default. Give it a value.")
    return config


def _asset_lookup(assets: AssetsSource):
    """``(key -> AssetsDefinition, every key)`` of any of the :data:`AssetsSource` forms."""
    if isinstance(assets, dg.Definitions):
        return (lambda key: resolve_assets_def(assets, key)), set(assets.resolve_all_asset_keys())
    by_key = (
        dict(assets.assets_defs_by_key)
        if isinstance(assets, dg.RepositoryDefinition)
        else {key: a for a in assets if isinstance(a, dg.AssetsDefinition) for key in a.keys}
    )
    return by_key.get, set(by_key)


def _asset_key(name: AssetName) -> dg.AssetKey:
    if isinstance(name, dg.AssetKey):
        return name
    if isinstance(name, str):
        return dg.AssetKey.from_user_string(name)
    return dg.AssetKey(list(name))


def _config_form(value: Any) -> Any:
    """A typed value as run config carries it: dates and timestamps as ISO text."""
    return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else value


def _describe(arg: ArgumentSpec) -> str:
    """``top_n (int) = 20``, ``since (date)`` (no default)."""
    text = f"{arg.name} ({arg.type.value})"
    if not arg.has_default:
        return text
    default = arg.default
    if isinstance(default, bool):
        shown = "true" if default else "false"
    elif isinstance(default, str):
        shown = repr(default)
    else:
        shown = _config_form(default)
    return f"{text} = {shown}"
