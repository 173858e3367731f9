"""SQL and key checks shared by the keyed strategies (merge, history): one spelling of each.

A MERGE names its target ``t`` and its source ``s``; the key condition matches them with
plain ``=`` (keys are checked non-NULL and unique first, by :func:`check_keys`), and the
change condition compares the other columns NULL-safely. Identifiers are quoted through
:func:`~assetlake_dagster.spec.quote_identifier`, which rejects anything outside the
identifier allow-list, so no column name can alter the statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.errors import KeyViolationError
from assetlake_dagster.spec import quote_identifier
from assetlake_dagster.writes.base import WriteStrategyBase
from assetlake_dagster.writes.commit import WriteTarget

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import DataFrame, Row


TARGET_ALIAS = "t"
SOURCE_ALIAS = "s"
#: How many offending keys an error message shows.
SAMPLE_SIZE = 5


def key_condition(key: Sequence[str]) -> str:
    """The MERGE ON clause. Keys are checked non-NULL first, so plain ``=`` is exact.

    Example:
        >>> key_condition(["id", "day"])
        't.`id` = s.`id` AND t.`day` = s.`day`'
    """
    return " AND ".join(
        f"{TARGET_ALIAS}.{quote_identifier(k)} = {SOURCE_ALIAS}.{quote_identifier(k)}" for k in key
    )


def change_condition(columns: Sequence[str]) -> str:
    """True when any of ``columns`` differs, NULL-safely (NULL vs value is a change).

    ``<>`` would miss NULL <-> value changes (the bug dbt fixed in dbt-core#1516).

    Example:
        >>> change_condition(["name", "tier"])
        'NOT (t.`name` <=> s.`name`) OR NOT (t.`tier` <=> s.`tier`)'
    """
    return " OR ".join(
        f"NOT ({TARGET_ALIAS}.{quote_identifier(c)} <=> {SOURCE_ALIAS}.{quote_identifier(c)})"
        for c in columns
    )


# Columns here come from the DataFrames themselves (``df[name]``), never from
# ``pyspark.sql.functions``: those follow a process-wide switch between classic and Spark
# Connect columns, and each kind of DataFrame rejects the other kind of column.


def find_key_violations(df: DataFrame, key: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """Up to :data:`SAMPLE_SIZE` NULL keys and duplicated keys (with counts), in one pass."""
    # toDF renames by position, so a key column named `count` cannot collide.
    grouped = df.groupBy(*key).count().toDF(*key, "_rows")
    has_null = reduce(lambda a, b: a | b, [grouped[k].isNull() for k in key])
    bad = grouped.where(has_null | (grouped["_rows"] > 1))
    return violations_among(bad.limit(2 * SAMPLE_SIZE + 1).collect(), key, "_rows")


def check_keys(
    strategy: WriteStrategyBase, staged: DataFrame, target: WriteTarget, key: Optional[Sequence[str]] = None
) -> None:
    """Fail with :class:`KeyViolationError`, naming a few, on NULL or duplicate keys.

    Delta MERGE would insert both of two unmatched duplicates, and a NULL key never
    matches, so either would corrupt a keyed table; nothing is written.

    Args:
        strategy: the strategy writing (named in the error).
        staged: the rows about to be written.
        target: the write; its ``key`` is checked unless ``key`` is given.
        key: the columns to check instead (merge adds ``_partition`` to the key).

    Example:
        >>> check_keys(strategy_for(WriteStrategy.MERGE), rows, target)  # doctest: +SKIP
        Traceback (most recent call last):
        KeyViolationError: duplicate keys, e.g. (id=1) x2. Each key (id) must appear once ...
    """
    key = tuple(key or target.key)
    nulls, dups = find_key_violations(staged, key)
    raise_key_violations(strategy, target, key, nulls, dups)


def raise_key_violations(
    strategy: WriteStrategyBase, target: WriteTarget, key: Sequence[str], nulls: list[dict], dups: list[dict]
) -> None:
    """Raise :class:`KeyViolationError` naming the NULL and duplicated keys found, if any.

    ``nulls`` and ``dups``: up to :data:`SAMPLE_SIZE` each, as dicts of the key columns and
    ``_rows`` (how many rows hold that key), as :func:`find_key_violations` returns them.
    """
    problems = []
    if nulls:
        problems.append(f"NULL keys, e.g. {_render(nulls, key)}")
    if dups:
        problems.append(f"duplicate keys, e.g. {_render(dups, key)}")
    if problems:
        raise KeyViolationError(
            "; ".join(problems)
            + f". Each key ({', '.join(key)}) must appear once and be non-NULL; "
            "deduplicate or filter in the SELECT. Nothing was written.",
            asset=target.asset,
            table=str(target.uri),
            strategy=strategy.strategy.value,
            partition=target.stamp.partition,
            metadata={"null_keys": len(nulls), "duplicate_key_samples": len(dups)},
        )


def check_staged_keys(
    strategy: WriteStrategyBase, target: WriteTarget, key: Sequence[str], invalid: DataFrame, rows_column: str
) -> None:
    """Raise :class:`KeyViolationError` when a staged diff's ``invalid`` rows (those whose
    key is NULL or duplicated; ``rows_column``: how many rows hold the key) are not empty."""
    rows = invalid.limit(4 * SAMPLE_SIZE).collect()
    if rows:
        raise_key_violations(strategy, target, key, *violations_among(rows, key, rows_column))


def violations_among(rows: Sequence[Row], key: Sequence[str], rows_column: str) -> tuple[list[dict], list[dict]]:
    """Up to :data:`SAMPLE_SIZE` NULL and duplicated keys among collected ``rows``, as
    :func:`raise_key_violations` takes them; ``rows_column`` holds each row's count of rows
    with its key (a duplicated key's rows all hold the same count, so it is named once)."""
    found: dict[tuple, dict] = {}
    for row in rows:
        found.setdefault(tuple(row[k] for k in key), {**{k: row[k] for k in key}, "_rows": row[rows_column]})
    nulls = [r for r in found.values() if any(r[k] is None for k in key)][:SAMPLE_SIZE]
    dups = [r for r in found.values() if not any(r[k] is None for k in key)][:SAMPLE_SIZE]
    return nulls, dups


def _render(rows: list[dict], key: Sequence[str]) -> str:
    return ", ".join("(" + ", ".join(f"{k}={row[k]!r}" for k in key) + f") x{row['_rows']}" for row in rows)
