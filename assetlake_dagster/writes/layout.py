"""A table's declared layout, applied: Delta table properties and liquid clustering.

The first write creates the table with its whole declared layout in its one commit: the
``delta.*`` properties through Delta's ``spark.databricks.delta.properties.defaults.*``
session settings (set only around that write), and a description, a user property or
clustering columns through ``CREATE TABLE … AS SELECT`` (:mod:`~assetlake_dagster.writes.create`).
A later change of the header is applied after the run's data commit by ``ALTER TABLE …
CLUSTER BY`` / ``SET TBLPROPERTIES``: a metadata-only commit, made only when the table
differs from the header, which changes no rows (the watch sensor and ``assetlake diff`` pass
over it). A line removed from the header leaves the table as it is (``ALTER TABLE … CLUSTER
BY NONE`` or ``UNSET TBLPROPERTIES`` by hand undo it).

The table's comments follow the same rule: each column's comment travels with the written
rows (:func:`with_column_comments`, so a first write or a whole-table replace carries it in
its data commit), the table's comment is in the first commit, and what differs later (an
edited description) is set by ``ALTER TABLE … SET TBLPROPERTIES ('comment' = …)`` and
``ALTER TABLE … ALTER COLUMN … COMMENT …``, one metadata-only commit each, no data rewritten.

Example:
    >>> from assetlake_dagster.spec import ClusterColumn, LayoutSpec
    >>> layout = LayoutSpec((ClusterColumn("id"),), (("delta.enableChangeDataFeed", "true"),))
    >>> new_table_settings(layout)
    {'spark.databricks.delta.properties.defaults.enableChangeDataFeed': 'true'}
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Optional

from assetlake_dagster.lake.delta_sql import path_identifier, session_conf
from assetlake_dagster.lake.registration import sql_string
from assetlake_dagster.spec import LayoutSpec, TableComments, quote_identifier
from assetlake_dagster.writes.commit import table_lock
from assetlake_dagster.writes.retry import MAX_ATTEMPTS, is_write_conflict

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Materialization metadata: what a run changed in the table's layout (absent: nothing).
LAYOUT_CHANGES_KEY = "assetlake/layout_changes"
_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."
_DELTA_PREFIX = "delta."
#: The Delta operation each kind of change commits.
_OPERATIONS = {
    "cluster_by": "CLUSTER BY",
    "properties": "SET TBLPROPERTIES",
    "comment": "SET TBLPROPERTIES",
    "column_comments": "CHANGE COLUMN",  # "CHANGE COLUMNS" for several
}
#: The table property Delta keeps as the table's description (``DESCRIBE DETAIL``'s).
_COMMENT_PROPERTY = "comment"

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


def with_column_comments(df: DataFrame, comments: Optional[TableComments]) -> DataFrame:
    """``df`` with each declared column comment in its schema, so that a write which sets
    the table's schema (a first write, a whole-table replace) commits it with the data.

    Only metadata changes: no Spark job, the same rows and columns.
    """
    if not comments or not comments.columns:
        return df
    for field in df.schema.fields:
        text = comments.column(field.name)
        if text is not None and field.metadata.get("comment") != text:
            df = df.withMetadata(field.name, {**field.metadata, "comment": text})
    return df


def apply_layout(
    spark: SparkSession, path: str, layout: LayoutSpec, comments: Optional[TableComments] = None
) -> list[dict[str, Any]]:
    """Make the table at ``path`` match the declared layout and comments; the changes made.

    Each change is ``{"change": "cluster_by"|"properties"|"comment"|"column_comments", "from":
    …, "to": …, "version": N}`` (the Delta version of its metadata-only commit). Nothing
    declared, or nothing different: no query beyond one ``DESCRIBE DETAIL`` (and a schema
    read for column comments), no commit, ``[]``.
    """
    comments = comments or TableComments()
    if not layout and not comments:
        return []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            with table_lock(spark, path):
                return _apply(spark, path, layout, comments)
        except Exception as exc:
            # Another run's commit got in between (two first runs of one table's partitions
            # on a bucket): read the table again; what it already has is not changed twice.
            if attempt == MAX_ATTEMPTS or not is_write_conflict(exc):
                raise
    raise AssertionError("unreachable")


def _apply(spark: SparkSession, path: str, layout: LayoutSpec, comments: TableComments) -> list[dict[str, Any]]:
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
    assignments = dict(different)
    if comments.table is not None and (detail.get("description") or None) != comments.table:
        # The same commit as the properties: Delta keeps 'comment' as the description.
        assignments[_COMMENT_PROPERTY] = comments.table
        changes.append({"change": "comment", "from": detail.get("description"), "to": comments.table})
    if different:
        changes.append({
            "change": "properties",
            "from": {k: current_properties.get(k) for k in different},
            "to": different,
        })
    if assignments:
        listed = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in assignments.items())
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({listed})")
    column_changes = _column_comment_changes(spark, path, comments)
    if column_changes:
        listed = ", ".join(f"{quote_identifier(name)} COMMENT {sql_string(text)}" for name, (_, text) in column_changes.items())
        spark.sql(f"ALTER TABLE {table} ALTER COLUMN {listed}")
        changes.append({
            "change": "column_comments",
            "from": {name: old for name, (old, _) in column_changes.items()},
            "to": {name: new for name, (_, new) in column_changes.items()},
        })
    if changes:
        # Each change's commit: the newest one of its operation (another run's commit may
        # have landed in between on a bucket, where the lock is this process's only).
        rows = spark.sql(f"DESCRIBE HISTORY {table} LIMIT {len(changes) + 5}").select("version", "operation").collect()
        for change in changes:
            operation = _OPERATIONS[change["change"]]
            change["version"] = next((int(r.version) for r in rows if r.operation.startswith(operation)), None)
    return changes


def _column_comment_changes(
    spark: SparkSession, path: str, comments: TableComments
) -> dict[str, tuple[Optional[str], str]]:
    """``{column: (its comment now, the declared one)}`` for each top-level column whose
    comment differs (a declared column the table does not have is not the table's to say)."""
    if not comments.columns:
        return {}
    schema = spark.read.format("delta").load(path).schema
    changes = {}
    for field in schema.fields:
        wanted = comments.column(field.name)
        current = field.metadata.get("comment")
        if wanted is not None and current != wanted:
            changes[field.name] = (current, wanted)
    return changes
