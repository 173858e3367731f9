"""What a data test found: one outcome per test per scope (and per partition).

:mod:`assetlake_dagster.run.data_tests` evaluates the tests in Spark and returns these;
:mod:`assetlake_dagster.defs.checks` turns them into asset check results and run failures.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from assetlake_dagster.spec.model import DataTestKind, DataTestSpec

#: How many failing values a result shows.
SAMPLE_SIZE = 5

@dataclass(frozen=True)
class TestOutcome:
    """The result of one data test on one scope.

    Attributes:
        failing: how many rows (or duplicated values, for ``unique``) fail.
        samples: up to :data:`SAMPLE_SIZE` failing values, as text.
        rows: how many rows were tested.
        scope: what was tested, in words (``staged slice 2024-01-01``, ``current rows``...).
        partition: the partition this outcome covers (``None``: an unpartitioned table).
    """

    test: DataTestSpec
    failing: int
    samples: tuple[str, ...]
    rows: int
    scope: str
    partition: Optional[str] = None

    @property
    def passed(self) -> bool:
        return self.failing == 0

    def message(self, table: str) -> str:
        """The failure as one line: test, column, count and samples."""
        shown = ", ".join(self.samples)
        return (
            f"data test {self.test.name} ({self.test.description}) failed on {table} ({self.scope}): "
            f"{self.failing} failing {'value' if self.test.kind is DataTestKind.UNIQUE else 'row'}"
            f"{'s' if self.failing != 1 else ''}, e.g. {shown}"
        )


def blocking_failures(outcomes: Sequence[TestOutcome]) -> list[TestOutcome]:
    """The failed outcomes of ``blocking`` tests: any one stops the write."""
    return [o for o in outcomes if not o.passed and o.test.blocking]
