"""A SQL asset's AssetsDefinition, built directly from an OpDefinition (defs/assets.py), equals what
Dagster's own ``@multi_asset`` builds from the same spec, deps, checks, config and policy; so does
a publish group's, of several assets (defs/publish_groups.py).

Every project the suite loads is compared, asset by asset: op, inputs, outputs (types,
required, metadata: the IO manager reads the write contract there), keys, specs, checks,
partitions, mappings, backfill policy, subsetting. A Dagster upgrade that changes what the
decorator builds fails here, not in a run.
"""

import os

import dagster as dg
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.demo import DEMO_PROJECT_DIR
from assetlake_dagster_tests.helpers import PROJECTS, load_script

LOADABLE = ("arguments", "audited", "automation", "basic", "history", "partitioned", "pipeline", "published", "retried")


def _reference(assets_def: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """The same asset through ``@multi_asset``, as defs/assets.py built it before (a publish
    group's several assets with the deps between them as the op's internal deps)."""
    specs = {spec.key: spec for spec in assets_def.specs}
    outs, internal = {}, {}
    for output_name, key in assets_def.keys_by_output_name.items():
        out = assets_def.op.output_def_named(output_name)
        outs[output_name] = dg.AssetOut.from_spec(
            specs[key].replace_attributes(deps=[]), dagster_type=out.dagster_type, is_required=out.is_required
        )
        internal[output_name] = {dep.asset_key for dep in specs[key].deps}
    deps = list({d.asset_key: d for spec in specs.values() for d in spec.deps if d.asset_key not in specs}.values())
    return dg.multi_asset(
        name=assets_def.op.name,
        outs=outs,
        deps=deps,
        internal_asset_deps=internal if len(specs) > 1 else None,
        required_resource_keys=set(assets_def.op.required_resource_keys),
        config_schema=_user_config(assets_def.op),
        partitions_def=assets_def.partitions_def,
        backfill_policy=assets_def.backfill_policy,
        check_specs=list(assets_def.check_specs),
        can_subset=assets_def.can_subset,
    )(assets_def.op.compute_fn.decorated_fn)


def _user_config(op: dg.OpDefinition):
    """The op's config schema as the user gave it: its fields, or none."""
    fields = getattr(op.config_schema.as_field().config_type, "fields", None) if op.config_schema else None
    return dict(fields) if fields else None


def _shape(assets_def: dg.AssetsDefinition) -> dict:
    op = assets_def.op
    config = op.config_schema.as_field() if op.config_schema else None
    return {
        "op": (op.name, op.description, dict(op.tags), sorted(op.required_resource_keys), op.positional_inputs),
        "config": config.config_type.key if config else None,
        "config_fields": {
            name: (field.config_type.key, field.is_required, field.default_value if field.default_provided else None)
            for name, field in getattr(config.config_type, "fields", {}).items()
        } if config else None,
        "compute_fn": type(op.compute_fn).__name__,
        "inputs": [(i.name, i.dagster_type.key, dict(i.metadata)) for i in op.input_defs],
        "outputs": [
            (o.name, o.dagster_type.key, o.is_required, o.description, dict(o.metadata), o.code_version, o.io_manager_key)
            for o in op.output_defs
        ],
        "keys_by_input_name": dict(assets_def.keys_by_input_name),
        "keys_by_output_name": dict(assets_def.keys_by_output_name),
        # In no particular order (a multi-asset lists its external deps before its internal ones).
        "specs": sorted(
            (s._replace(deps=sorted(s.deps, key=lambda d: d.asset_key.to_user_string())) for s in assets_def.specs),
            key=lambda s: s.key.to_user_string(),
        ),
        "checks": dict(assets_def.check_specs_by_output_name),
        "partitions_def": assets_def.partitions_def,
        "partition_mappings": {k: assets_def.get_partition_mapping(k) for k in assets_def.keys_by_input_name.values()},
        "backfill_policy": assets_def.backfill_policy,
        "can_subset": assets_def.can_subset,
        "execution_type": assets_def.execution_type,
        "resource_requirements": sorted(str(r) for r in assets_def.get_resource_requirements()),
    }


def _projects(tmp_path):
    bench = load_script("bench_load")
    generated = str(tmp_path / "generated")
    bench.write_sql_project(bench.make_dag(60, seed=7), generated)
    return [DEMO_PROJECT_DIR, generated, *(os.path.join(PROJECTS, name) for name in LOADABLE)]


@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
def test_each_sql_asset_equals_what_multi_asset_builds(tmp_path):
    compared = groups = 0
    for project_dir in _projects(tmp_path):
        defs = build_definitions(project_dir, lake_root=str(tmp_path / "lake"))
        for assets_def in defs.assets:
            if not isinstance(assets_def, dg.AssetsDefinition) or not assets_def.op.name.startswith(("sql__", "publish__")):
                continue  # external tables and Python assets are Dagster's own
            assert _shape(assets_def) == _shape(_reference(assets_def)), (project_dir, assets_def.op.name)
            compared += 1
            groups += len(assets_def.keys) > 1
    assert compared >= 90  # every project's SQL files, not an empty loop
    assert groups == 1  # projects/published: one publish group of three assets


@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
def test_every_fixture_project_loads_as_a_code_location(tmp_path):
    # What `dagster dev` checks when it loads a code location, beyond building the assets:
    # every job, schedule and sensor together, with unique op and graph names.
    for project_dir in _projects(tmp_path):
        dg.Definitions.validate_loadable(build_definitions(project_dir, lake_root=str(tmp_path / "lake")))
