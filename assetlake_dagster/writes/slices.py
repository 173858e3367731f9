"""The slice of a partitioned table a write may touch: its ``_partition`` predicate.

Delta's ``replaceWhere`` option and a MERGE condition are SQL text, and there is no way
to pass them bound parameters. Partition keys are untrusted (Dagster allows quotes and
backslashes, and in Spark SQL ``\\'`` escapes a quote), so a key never enters the text
as itself: it goes in as a hex binary literal, ``CAST(X'<hex of its UTF-8>' AS STRING)``,
whose only characters are hex digits. An empty key list is an error, never an
unpredicated (whole-table) write.
"""

from collections.abc import Sequence
from typing import Optional

from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster.spec import quote_identifier

#: Delta's optimized write for a partitioned table: rows are shuffled by partition before
#: they are written, so a batch of 91 days writes about one file per day instead of one per
#: day and task (728 for the demo's staging/orders), which every later read lists and opens:
#: 77k requests against a test bucket for the demo, 51k of them for that one table.
OPTIMIZED_WRITE = "optimizeWrite"


def partition_literal(key: str) -> str:
    """A Spark SQL expression equal to ``key``, made of hex digits only.

    Example:
        >>> partition_literal("a' OR 1=1 --")
        "CAST(X'6127204f5220313d31202d2d' AS STRING)"
    """
    return f"CAST(X'{key.encode('utf-8').hex()}' AS STRING)"


def partition_predicate(keys: Sequence[str], alias: Optional[str] = None) -> str:
    """``_partition IN (...)`` for the slice's keys; raises ValueError when there are none.

    Example:
        >>> partition_predicate(["2024-01-01"], alias="t")
        "t.`_partition` IN (CAST(X'323032342d30312d3031' AS STRING))"
    """
    if not keys:
        raise ValueError("a partitioned write needs at least one partition key")
    column = quote_identifier(PARTITION_COLUMN)
    if alias:
        column = f"{alias}.{column}"
    return f"{column} IN ({', '.join(partition_literal(k) for k in keys)})"


def describe_slice(keys: Sequence[str]) -> Optional[str]:
    """How a commit stamp names the slice: the key, or ``first...last`` for a batch.

    Example:
        >>> describe_slice(["2024-01-01"]), describe_slice(["2024-01-01", "2024-01-02", "2024-01-03"])
        ('2024-01-01', '2024-01-01...2024-01-03')
    """
    if not keys:
        return None
    return keys[0] if len(keys) == 1 else f"{keys[0]}...{keys[-1]}"
