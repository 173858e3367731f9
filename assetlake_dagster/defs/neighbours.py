"""Tables that other assetlake projects of the same code location produce.

A ``dg`` project may hold several :class:`~assetlake_dagster.defs.component.AssetlakeProjectComponent`
folders over one lake. Each is built on its own, and Dagster merges their definitions: a
table one folder writes and another reads would otherwise be an asset in the first and an
external asset in the second (Dagster's "Duplicate asset key", naming neither file), and a
table both write would be two producers of one key. The component hands each build the
tables of its neighbours, and :func:`resolve_neighbours` decides: a table read from a
neighbour depends on the neighbour's asset, and one produced twice is a located error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import dagster as dg

from assetlake_dagster.project.dag import table_key
from assetlake_dagster.errors import Diagnostic, ProjectError, SourceLocation
from assetlake_dagster.spec import SqlAssetSpec, TableUri


@dataclass(frozen=True)
class NeighbourTable:
    """A table another project of the code location produces.

    Attributes:
        uri: the table.
        key: its asset key there (after that project's translation).
        producer: where it is produced, for messages (``defs/lake_a/sql/orders.sql:1:1``).
        owner: the project, for messages (``the component defs/lake_a``).

    Example:
        >>> table = NeighbourTable(TableUri("sales", "orders"), dg.AssetKey(["sales", "orders"]), "a/orders.sql:1:1", "the component a")
        >>> table.describe()
        'a/orders.sql:1:1 (the component a)'
    """

    uri: TableUri
    key: dg.AssetKey
    producer: str
    owner: str

    def describe(self) -> str:
        return f"{self.producer} ({self.owner})"


def resolve_neighbours(
    assets: Sequence[SqlAssetSpec],
    keys_by_table: Mapping[TableUri, dg.AssetKey],
    external: Sequence[TableUri],
    neighbours: Sequence[NeighbourTable],
) -> dict[TableUri, NeighbourTable]:
    """The external tables that neighbours produce, by table; raises on a shared producer or key.

    Args:
        assets: this project's SQL assets.
        keys_by_table: this project's tables under their translated keys.
        external: the tables this project reads that it does not produce.
        neighbours: the tables the other projects produce.

    Raises:
        ProjectError: a table this project produces is produced by a neighbour too, or one
            of its asset keys is a neighbour's key for another table; located at the
            ``-- materialize`` line.

    Example:
        >>> orders = NeighbourTable(TableUri("sales", "orders"), dg.AssetKey(["s", "orders"]), "a/orders.sql:1:1", "the component a")
        >>> found = resolve_neighbours([], {}, [TableUri("sales", "orders")], [orders])
        >>> found[TableUri("sales", "orders")].key.to_user_string()
        's/orders'
    """
    by_table = {table_key(n.uri): n for n in neighbours}
    by_key = {n.key: n for n in neighbours}
    problems = []
    for spec in assets:
        other = by_table.get(table_key(spec.uri))
        key = keys_by_table[spec.uri]
        if other is not None:
            message = f"{spec.uri} is also materialized by {other.describe()}."
            hint = "A table has exactly one producer in a code location; retarget or remove one of them."
        elif key in by_key:
            other = by_key[key]
            message = f"the asset key {key.to_user_string()} is also {other.uri}'s, in {other.describe()}."
            hint = "Asset keys are unique in a code location; change one project's translation of the key."
        else:
            continue
        problems.append(Diagnostic(spec.materialize.location or SourceLocation(spec.path, 1), message, hint))
    if problems:
        raise ProjectError(problems)
    return {uri: by_table[table_key(uri)] for uri in external if table_key(uri) in by_table}
