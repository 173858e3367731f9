"""The write contract of a Python asset, and of any asset from its definition metadata.

:func:`managed_write` is how a Python asset says how the Delta IO manager writes its output
(the SQL files say it on their ``-- materialize`` line); :func:`materialize_spec_for` reads
the contract back from an asset's metadata, in the definitions and in a run.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.errors import ConfigError, UsageError
from assetlake_dagster.spec import (
    MAX_CLUSTER_COLUMNS,
    TABLE_METADATA_KEY,
    WRITE_METADATA_KEY,
    ClusterColumn,
    LayoutSpec,
    MaterializeSpec,
    TableUri,
    WriteStrategy,
    contract_table,
    is_identifier,
)
from assetlake_dagster.spec.write_options import WriteOptionsError, contract_metadata, write_options
from assetlake_dagster.sql.target_predicate import TargetPredicate


def managed_write(
    strategy: str = "replace",
    key: Sequence[str] = (),
    track: Sequence[str] = (),
    deletes: Optional[str] = None,
    table: Optional[str] = None,
    cluster_by: Sequence[str] = (),
    properties: Optional[Mapping[str, str]] = None,
    update: Sequence[str] = (),
    keep: Sequence[str] = (),
    within: Optional[str] = None,
    valid_from: Optional[str] = None,
    late: Optional[str] = None,
) -> dict[str, Any]:
    """Asset metadata choosing how the Delta IO manager writes a Python asset's output.

    Args:
        strategy: ``replace`` (default), ``merge`` (needs ``key``), ``append`` or
            ``history`` (SCD2; needs ``key``).
        key: the key columns for ``merge`` and ``history``.
        track: ``history`` only: the columns whose change opens a new version (default:
            every non-key column).
        deletes: what happens to a key the output no longer holds (default: it stays):
            ``"delete"`` on a ``merge`` deletes it, ``"close"`` on a ``history`` closes its
            current version.
        table: the Delta table, ``delta://<schema>/<table>`` (default: the asset key,
            which must then be ``[schema, table]``). Name it when the key has a prefix.
        cluster_by: Delta liquid clustering columns, as ``-- cluster_by`` (at most four).
        properties: Delta table properties, as ``-- properties`` (Delta checks them at the
            first write).
        update: ``merge`` only: on a matched key, set only these columns.
        keep: ``merge`` only: on a matched key, keep these columns' table values.
        within: ``merge`` only: a predicate on the table's columns bounding the rows the
            merge reads and may match; every row written must satisfy it.
        valid_from: ``history`` only: the column (TIMESTAMP or DATE) whose value starts each
            version, as ``valid_from=`` on the materialize line (default: the run's clock).
        late: ``history`` on ``valid_from`` only: ``"insert"`` places a version earlier than
            its key's latest among the key's versions, as ``late=insert``; by default such a
            version fails the run.

    Example:
        >>> @dg.asset(key=["analytics", "customers"], metadata=managed_write("merge", key=["id"]))
        ... def customers(spark: SparkDeltaResource):
        ...     return spark.get_session().createDataFrame([(1, "Ann")], "id int, name string")
        >>> managed_write("history", key=["id"], track=["tier"], deletes="close")
        {'assetlake/write': {'strategy': 'history', 'key': ['id'], 'track': ['tier'], 'deletes': 'close'}}
        >>> managed_write("append", table="delta://raw/events")
        {'assetlake/write': {'table': 'delta://raw/events', 'strategy': 'append', 'key': [], 'track': [], 'deletes': None}}
    """
    kind = WriteStrategy(strategy)
    if kind is WriteStrategy.MANUAL:
        raise UsageError("'manual' is for SQL files that write themselves; return nothing instead")
    if within is not None:
        try:
            TargetPredicate.parse(within)
        except ValueError as problem:
            raise UsageError(f"within={within!r}: {problem}") from None
    try:
        # Which options a strategy takes, and how they combine, is the options classes' to say.
        options = write_options(
            kind, key=tuple(key), track=tuple(track), valid_from=valid_from, deletes=deletes,
            update=tuple(update), keep=tuple(keep), within=within, late=late,
        )
    except WriteOptionsError as err:
        raise WriteOptionsError(err.problems, where=f"managed_write({strategy!r})") from None
    uri = TableUri.parse(table) if table is not None else None
    bad = [c for c in cluster_by if not is_identifier(c)]
    if bad or len(cluster_by) > MAX_CLUSTER_COLUMNS:
        raise UsageError(f"cluster_by={list(cluster_by)}: at most {MAX_CLUSTER_COLUMNS} plain column names")
    layout = LayoutSpec(tuple(ClusterColumn(c) for c in cluster_by), tuple((properties or {}).items()))
    return {WRITE_METADATA_KEY: contract_metadata(options, uri), **layout.to_metadata()}


def materialize_spec_for(asset_key: dg.AssetKey, metadata: Any) -> MaterializeSpec:
    """The write contract of an asset, from its definition metadata.

    The table is the contract's own; without one (a Python asset that named no
    ``table=``, an external table, no contract at all) the catalog's ``assetlake/table``,
    and last the two-part asset key. The strategy defaults to ``replace``.

    Example:
        >>> meta = managed_write("merge", key=["id"], table="delta://s/t")
        >>> spec = materialize_spec_for(dg.AssetKey(["lake", "s", "t"]), meta)
        >>> str(spec.uri), spec.strategy.value, spec.key
        ('delta://s/t', 'merge', ('id',))
    """
    uri = contract_table(metadata)
    if uri is None:
        named = (metadata or {}).get(TABLE_METADATA_KEY)
        named = getattr(named, "value", named)
        uri = TableUri.parse(named) if isinstance(named, str) else table_uri_for(asset_key)
    try:
        return MaterializeSpec.from_metadata(metadata, default_uri=uri)
    except ValueError as exc:
        raise ConfigError(f"asset {asset_key.to_user_string()}: {exc}. Use managed_write(...) to set it.") from exc


def table_uri_for(asset_key: dg.AssetKey) -> TableUri:
    """``AssetKey(["schema", "table"])`` -> ``delta://schema/table`` (identifiers checked)."""
    path = asset_key.path
    if len(path) != 2:
        raise ConfigError(
            f"asset key {asset_key.to_user_string()} has {len(path)} parts and its metadata names no "
            "table; the Delta IO manager needs key=['schema', 'table'] (e.g. ['analytics', 'orders']) "
            "or managed_write(..., table='delta://schema/table')."
        )
    try:
        return TableUri(path[0], path[1])
    except ValueError as exc:
        raise ConfigError(
            f"asset key {asset_key.to_user_string()}: {exc}. Use letters, digits and '_' only."
        ) from exc
