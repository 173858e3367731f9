"""Managed writes: one module per strategy, each exactly one Delta commit per slice."""

from assetlake_dagster.spec import WriteStrategy
from assetlake_dagster.writes.append import AppendWrite
from assetlake_dagster.writes.base import WritePlan, WriteStrategyBase
from assetlake_dagster.writes.commit import CommitStamp, WriteResult, WriteTarget
from assetlake_dagster.writes.history import HistoryWrite
from assetlake_dagster.writes.merge import MergeWrite
from assetlake_dagster.writes.replace import ReplaceWrite

STRATEGIES: dict[WriteStrategy, WriteStrategyBase] = {
    s.strategy: s for s in (ReplaceWrite(), MergeWrite(), AppendWrite(), HistoryWrite())
}


def strategy_for(strategy: WriteStrategy) -> WriteStrategyBase:
    """The implementation of a managed strategy (``manual`` has none: the SQL writes)."""
    try:
        return STRATEGIES[strategy]
    except KeyError:
        valid = ", ".join(s.value for s in STRATEGIES)
        raise ValueError(f"no managed write for strategy {strategy.value!r}; valid: {valid}") from None


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
