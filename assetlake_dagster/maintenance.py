"""Which versions of a table Dagster still needs, for the ``VACUUM`` guard.

:mod:`assetlake_dagster.lake.maintenance` runs ``OPTIMIZE`` and ``VACUUM`` on a table and
refuses a ``VACUUM`` that would delete a needed version's files; this module finds those
versions where Dagster keeps them:

* materializations inside the restore window: the table's own ``delta/version``, and every
  downstream's ``assetlake/upstream_versions`` entry for the table;
* inputs that pin a version (``AssetIn(metadata={"assetlake/version": N})``);
* runs still in flight: the version that was current when each started.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Optional

import dagster as dg

from assetlake_dagster.io_manager import READ_VERSION_KEY
from assetlake_dagster.lake.maintenance import Need
from assetlake_dagster.spec import TableUri
from assetlake_dagster.sql_asset_run import UPSTREAM_VERSIONS_KEY

#: Materializations read per asset key (inside the window; newest first).
RECORD_LIMIT = 1000


def needed_versions(
    instance: dg.DagsterInstance,
    uri: TableUri,
    asset_key: dg.AssetKey,
    *,
    since: dt.datetime,
    commit_times: Mapping[int, dt.datetime],
    defs: Optional[dg.Definitions] = None,
) -> list[Need]:
    """Every version of ``uri`` that Dagster still needs (see the module docstring).

    Args:
        instance: where materializations and runs are recorded.
        asset_key: the table's own asset key.
        since: the start of the restore window: older materializations are not read.
        commit_times: the table's commit times by version (to find the version a run in
            flight started on).
        defs: the project's definitions, for inputs that pin a version (optional).

    Example:
        >>> needed_versions(dg.DagsterInstance.ephemeral(), TableUri("s", "t"), dg.AssetKey(["s", "t"]),
        ...                 since=dt.datetime.now(dt.timezone.utc), commit_times={})
        []
    """
    needs: list[Need] = []
    for key in instance.get_asset_keys():
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, after_timestamp=since.timestamp()), limit=RECORD_LIMIT
        ).records
        for record in records:
            materialization = record.asset_materialization
            if materialization is None:
                continue
            metadata = materialization.metadata
            run = record.run_id[:8]
            when = dt.datetime.fromtimestamp(record.timestamp, dt.timezone.utc).isoformat(timespec="seconds")
            own = metadata.get("delta/version")
            if key == asset_key and own is not None and own.value is not None:
                needs.append(Need(int(own.value), f"recorded by its materialization of {when} (run {run})"))
            upstream = metadata.get(UPSTREAM_VERSIONS_KEY)
            version = (upstream.value or {}).get(str(uri)) if upstream is not None else None
            if version is not None:
                needs.append(Need(int(version), f"read by {key.to_user_string()}'s materialization of {when} (run {run})"))
    needs += _pinned(defs, asset_key) if defs is not None else []
    needs += _in_flight(instance, commit_times)
    return needs


def _pinned(defs: dg.Definitions, asset_key: dg.AssetKey) -> list[Need]:
    needs = []
    graph = defs.resolve_asset_graph()
    for assets_def in graph.assets_defs:
        if not assets_def.is_executable:
            continue  # an external asset reads nothing
        for name, input_def in assets_def.node_def.input_dict.items():
            if assets_def.keys_by_input_name.get(name) != asset_key:
                continue
            pinned = (input_def.metadata or {}).get(READ_VERSION_KEY)
            pinned = getattr(pinned, "value", pinned)
            if pinned is not None:
                reader = ", ".join(k.to_user_string() for k in assets_def.keys)
                needs.append(Need(int(pinned), f"pinned by {reader}'s input '{name}'"))
    return needs


def _in_flight(instance: dg.DagsterInstance, commit_times: Mapping[int, dt.datetime]) -> list[Need]:
    needs = []
    statuses = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=statuses)):
        started = record.start_time or record.create_timestamp.timestamp()
        at_start = [v for v, t in commit_times.items() if t.timestamp() <= started]
        if at_start:
            needs.append(Need(max(at_start), f"current when run {record.dagster_run.run_id[:8]}, still in flight, started"))
    return needs
