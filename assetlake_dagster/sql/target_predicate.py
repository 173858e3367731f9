"""A merge's ``within=`` predicate: one boolean expression over the target table's columns.

It bounds the rows of the table a merge reads and may update (dbt's
``incremental_predicates``), so that with clustering or partitioning a keyed write reads few
files. It is user SQL like the SELECT, checked here: one expression, no subquery, no
aggregate or window function, no parameter marker, no table-qualified column. The write
uses it twice, as written: to filter its read of the table, and with every column qualified
by the MERGE's target alias in the ``ON`` clause.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # sqlglot loads when a predicate is checked, not with the package
    from sqlglot import exp

DIALECT = "spark"


@dataclass(frozen=True)
class TargetPredicate:
    """A checked ``within=`` predicate.

    Attributes:
        text: the predicate as written.
        column_starts: each column reference, with its 0-based offset in ``text`` (for
            located messages and for qualifying it), in the order written.

    Example:
        >>> p = TargetPredicate.parse("order_date >= date_sub(current_date(), 7)")
        >>> p.columns
        ('order_date',)
        >>> TargetPredicate.parse("a > 1 or b < 2").column_starts
        (('a', 0), ('b', 9))
        >>> p.qualified("t")
        '(t.order_date >= date_sub(current_date(), 7))'
    """

    text: str
    column_starts: tuple[tuple[str, int], ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """The column names it reads, in order of first use (case-insensitively distinct).

        Example:
            >>> TargetPredicate.parse("a > 1 or B < 2 or A < 0").columns
            ('a', 'B')
        """
        first: dict[str, str] = {}
        for name, _ in self.column_starts:
            first.setdefault(name.lower(), name)
        return tuple(first.values())

    @classmethod
    def parse(cls, text: str) -> "TargetPredicate":
        """Check ``text``.

        Raises:
            ValueError: what is wrong with it, as a sentence.
        """
        from sqlglot import exp

        found = ((column.name, column.this.meta["start"]) for column in _tree(text).find_all(exp.Column))
        starts = tuple(sorted(found, key=lambda name_start: name_start[1]))  # find_all walks breadth-first
        if not starts:
            raise ValueError("it reads no column of the table, so it bounds nothing")
        return cls(text, starts)

    def qualified(self, alias: str) -> str:
        """The predicate with each column qualified by ``alias`` (the MERGE's target).

        The text stays the user's: ``alias.`` goes in front of each column where the
        tokenizer found it (sqlglot's regenerated SQL may spell functions differently).
        """
        starts = sorted((start for _, start in self.column_starts), reverse=True)
        text = self.text
        for start in starts:
            text = f"{text[:start]}{alias}.{text[start:]}"
        return f"({text})"

    def unqualified(self) -> str:
        """The predicate, parenthesised, to filter a read of the table."""
        return f"({self.text})"


def _tree(text: str) -> "exp.Expression":
    from sqlglot import exp, parse_one
    from sqlglot.errors import ParseError, TokenError

    from assetlake_dagster.sql.statements import quiet_sqlglot

    try:
        with quiet_sqlglot():
            tree = parse_one(text, dialect=DIALECT)
    except (ParseError, TokenError) as error:
        raise ValueError(f"it is not a SQL expression ({_first_line(error)})") from None
    if tree is None or not isinstance(tree, exp.Condition) or isinstance(tree, exp.Query):
        raise ValueError("it is not one SQL expression")
    problem = _forbidden(tree)
    if problem:
        raise ValueError(problem)
    return tree


def _forbidden(tree: "exp.Expression") -> Optional[str]:
    from sqlglot import exp

    for node in tree.walk():
        if isinstance(node, (exp.Subquery, exp.Query, exp.Exists)):
            return "it holds a subquery; a merge's bound reads the table's own columns only"
        if isinstance(node, (exp.Placeholder, exp.Parameter)):
            return "it holds a parameter marker; write the value, or compute it with a function such as current_date()"
        if isinstance(node, exp.AggFunc):
            return f"it holds an aggregate ({node.sql(dialect=DIALECT)}); a bound is tested row by row"
        if isinstance(node, exp.Window):
            return "it holds a window function; a bound is tested row by row"
        if isinstance(node, exp.Column) and node.table:
            return f"column '{node.sql(dialect=DIALECT)}' names a table; write the table's column name alone"
    return None


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0].strip()[:160]
