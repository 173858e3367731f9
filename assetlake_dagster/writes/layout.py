"""A table's declared layout, applied: Delta table properties and liquid clustering.

The first write creates the table with the declared Delta properties in its own commit
(Delta's ``spark.databricks.delta.properties.defaults.*`` session settings, set only around
that write). Delta's DataFrame writer cannot create a clustered table by path, so the
clustering columns, a user property (without the ``delta.`` prefix) and every later change
are applied right after the data commit by ``ALTER TABLE … CLUSTER BY`` / ``SET
TBLPROPERTIES``: a metadata-only commit, made only when the table differs from the header.
A line removed from the header leaves the table as it is (``ALTER TABLE … CLUSTER BY NONE``
or ``UNSET TBLPROPERTIES`` by hand undo it).

Example:
    >>> from assetlake_dagster.spec import ClusterColumn, LayoutSpec
    >>> layout = LayoutSpec((ClusterColumn("id"),), (("delta.enableChangeDataFeed", "true"),))
    >>> new_table_settings(layout)
    {'spark.databricks.delta.properties.defaults.enableChangeDataFeed': 'true'}
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from assetlake_dagster.lake.delta_sql import path_identifier, session_conf
from assetlake_dagster.spec import LayoutSpec, quote_identifier
from assetlake_dagster.writes.commit import table_lock
from assetlake_dagster.writes.retry import MAX_ATTEMPTS, is_write_conflict

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Materialization metadata: what a run changed in the table's layout (absent: nothing).
LAYOUT_CHANGES_KEY = "assetlake/layout_changes"
_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."
_DELTA_PREFIX = "delta."
#: The Delta operation each kind of change commits.
_OPERATIONS = {"cluster_by": "CLUSTER BY", "properties": "SET TBLPROPERTIES"}

def new_table_settings(layout: LayoutSpec) -> dict[str, str]:
    """The session settings that give a table created meanwhile the declared Delta properties."""
    return {
        _DEFAULTS_PREFIX + key[len(_DELTA_PREFIX) :]: value
        for key, value in layout.properties
        if key.startswith(_DELTA_PREFIX)
    }


@contextmanager
def new_table_properties(spark: SparkSession, layout: LayoutSpec) -> Iterator[None]:
    """Around a write: a table it creates gets the declared Delta properties in that commit."""
    settings = new_table_settings(layout)
    if not settings:
        yield
        return
    with session_conf(spark, settings):
        yield


def apply_layout(spark: SparkSession, path: str, layout: LayoutSpec) -> list[dict[str, Any]]:
    """Make the table at ``path`` match the declared layout; the changes made, in order.

    Each change is ``{"change": "cluster_by"|"properties", "from": …, "to": …, "version": N}``
    (the Delta version of its metadata-only commit). Nothing declared, or nothing different:
    no query beyond one ``DESCRIBE DETAIL``, no commit, ``[]``.
    """
    if not layout:
        return []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            with table_lock(spark, path):
                return _apply(spark, path, layout)
        except Exception as exc:
            # Another run's commit got in between (two first runs of one table's partitions
            # on a bucket): read the table again; what it already has is not changed twice.
            if attempt == MAX_ATTEMPTS or not is_write_conflict(exc):
                raise
    raise AssertionError("unreachable")


def _apply(spark: SparkSession, path: str, layout: LayoutSpec) -> list[dict[str, Any]]:
    table = path_identifier(path)
    changes: list[dict[str, Any]] = []
    detail = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0].asDict()
    current_cluster = [str(c) for c in detail.get("clusteringColumns") or ()]
    wanted_cluster = list(layout.cluster_columns)
    if wanted_cluster and [c.lower() for c in current_cluster] != [c.lower() for c in wanted_cluster]:
        columns = ", ".join(quote_identifier(c) for c in wanted_cluster)
        spark.sql(f"ALTER TABLE {table} CLUSTER BY ({columns})")
        changes.append({"change": "cluster_by", "from": current_cluster, "to": wanted_cluster})
    current_properties = dict(detail.get("properties") or {})
    different = {k: v for k, v in layout.properties if current_properties.get(k) != v}
    if different:
        assignments = ", ".join(f"{_string(k)} = {_string(v)}" for k, v in different.items())
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({assignments})")
        changes.append({
            "change": "properties",
            "from": {k: current_properties.get(k) for k in different},
            "to": different,
        })
    if changes:
        # Each change's commit: the newest one of its operation (another run's commit may
        # have landed in between on a bucket, where the lock is this process's only).
        rows = spark.sql(f"DESCRIBE HISTORY {table} LIMIT {len(changes) + 5}").select("version", "operation").collect()
        for change in changes:
            operation = _OPERATIONS[change["change"]]
            change["version"] = next((int(r.version) for r in rows if r.operation == operation), None)
    return changes


def _string(text: str) -> str:
    """A SQL string literal (keys and values were checked at load; quotes escaped anyway)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
