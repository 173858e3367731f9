"""Managed writes: one class per strategy, each exactly one Delta commit per slice.

Each ``writes/<name>.py`` holds one :class:`WriteStrategyBase` subclass that owns its plan,
its write, its data tests' staged and committed scopes and its ``assetlake plan``
description; ``sql.py`` builds the SQL the keyed strategies share. A new strategy is
registered here, once: everything else finds it through :func:`strategy_for`.
"""

from assetlake_dagster.errors import UsageError
from assetlake_dagster.spec import WriteStrategy
from assetlake_dagster.writes.append import AppendWrite
from assetlake_dagster.writes.base import WritePlan, WriteStrategyBase
from assetlake_dagster.writes.commit import CommitStamp, WriteResult, WriteTarget
from assetlake_dagster.writes.history import HistoryWrite
from assetlake_dagster.writes.merge import MergeWrite
from assetlake_dagster.writes.replace import ReplaceWrite

#: The registry: one instance per managed strategy (``manual`` has none: its SQL writes).
STRATEGIES: dict[WriteStrategy, WriteStrategyBase] = {
    s.strategy: s for s in (ReplaceWrite(), MergeWrite(), AppendWrite(), HistoryWrite())
}


def strategy_for(strategy: WriteStrategy) -> WriteStrategyBase:
    """The implementation of a managed strategy (``manual`` has none: the SQL writes).

    Raises:
        ValueError: ``strategy`` has no managed write; the message lists those that do.

    Example:
        >>> from assetlake_dagster.spec import MaterializeSpec, TableUri
        >>> strategy_for(WriteStrategy.MERGE).describe(MaterializeSpec(TableUri("s", "t"), WriteStrategy.MERGE, ("id",)))
        'merge on key (id)'
    """
    try:
        return STRATEGIES[strategy]
    except KeyError:
        valid = ", ".join(s.value for s in STRATEGIES)
        raise UsageError(f"no managed write for strategy {strategy.value!r}; valid: {valid}") from None


__all__ = [
    "CommitStamp",
    "HistoryWrite",
    "STRATEGIES",
    "WritePlan",
    "WriteResult",
    "WriteStrategyBase",
    "WriteTarget",
    "strategy_for",
]
