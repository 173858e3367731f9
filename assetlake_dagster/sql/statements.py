"""The statements of a SQL body: splitting, classifying, and parsing within bounds.

The analyzer (:mod:`assetlake_dagster.sql.analysis`) parses each statement once; this
module says where statements end, what role each plays (the query, setup, anything else),
and keeps parsing bounded on hostile input (see :func:`runaway_join`).
"""

import contextlib
import logging
from collections.abc import Iterator
from typing import Optional

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

_QUERY_LEADS = frozenset({"SELECT", "WITH", "VALUES", "FROM", "("})
_OBJECT_WORDS = frozenset({"TABLE", "VIEW", "SCHEMA", "DATABASE", "FUNCTION", "NAMESPACE", "CATALOG"})
_WRITES = (exp.Insert, exp.Create, exp.Merge, exp.Delete, exp.Update, exp.Drop, exp.Alter)
#: JOINs with neither ON nor USING that one statement may have (see :func:`runaway_join`).
MAX_JOINS_WITHOUT_CONDITION = 12


def split_statements(tokens: list[Token]) -> Iterator[list[Token]]:
    """The tokens of each statement (``;`` separates them; empty ones included)."""
    chunk: list[Token] = []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            yield chunk
            chunk = []
        else:
            chunk.append(token)
    yield chunk


def statement_role(expression: Optional[exp.Expression], tokens: list[Token]) -> str:
    """``query``, ``setup`` (SET, CACHE, a temp view AS a query) or ``other``."""
    words = [t.text.upper() for t in tokens[:8]]
    if words[0] in ("SET", "RESET", "CACHE", "UNCACHE"):  # sqlglot may parse these as Command
        return "setup"
    if expression is None:  # a parse error: classify by keyword so no second error piles up
        if words[0] in _QUERY_LEADS:
            return "query"
        return "setup" if words[0] == "CREATE" and _is_temp_view_words(words) else "other"
    if isinstance(expression, (exp.Query, exp.Values)):
        return "query"
    if isinstance(expression, exp.Create) and expression.kind == "VIEW":
        properties = expression.args.get("properties")
        kinds = {type(p) for p in properties.expressions} if properties else set()
        # Only 'AS <query>' views: a view 'USING parquet OPTIONS (path ...)' would read
        # files outside the lake.
        if exp.TemporaryProperty in kinds and exp.GlobalProperty not in kinds and expression.expression:
            return "setup"
    return "other"


def _is_temp_view_words(words: list[str]) -> bool:
    return "VIEW" in words and ("TEMP" in words or "TEMPORARY" in words) and "GLOBAL" not in words


def statement_kind(tokens: list[Token], expression: Optional[exp.Expression]) -> str:
    """The statement's leading keywords for messages: 'INSERT', 'CREATE OR REPLACE TABLE'."""
    words = [t.text.upper() for t in tokens[:6]]
    if words[0] == "WITH" and expression is not None:
        return expression.key.upper()
    if words[0] in ("CREATE", "DROP", "ALTER", "REPLACE", "TRUNCATE"):
        for i, word in enumerate(words[1:], start=2):
            if word in _OBJECT_WORDS:
                return " ".join(words[:i])
    return words[0]


def write_targets(expression: exp.Expression) -> set[int]:
    """ids of the tables a statement writes (manual files): they are not upstream reads."""
    targets: set[int] = set()
    for node in expression.find_all(*_WRITES):
        candidates = [node.this, *(node.args.get("tables") or [])]
        for target in candidates:
            if isinstance(target, exp.Schema):
                target = target.this
            if isinstance(target, exp.Table):
                targets.add(id(target))
    return targets


def runaway_join(tokens: list[Token]) -> Optional[Token]:
    """The first JOIN past :data:`MAX_JOINS_WITHOUT_CONDITION` with neither ON nor USING.

    sqlglot backtracks on each such join (it may open a nested ``a JOIN b JOIN c ON … ON …``),
    so its parse time doubles per join: 21 of them took 40 s. CROSS and NATURAL joins need no
    condition and parse in linear time, so they do not count.
    """
    depths, depth = [], 0
    for token in tokens:
        depth += token.token_type is TokenType.L_PAREN
        depth -= token.token_type is TokenType.R_PAREN
        depths.append(depth)
    joins = [i for i, t in enumerate(tokens) if t.token_type is TokenType.JOIN]
    unconditioned = 0
    for n, i in enumerate(joins):
        before = {t.token_type for t in tokens[max(0, i - 3) : i]}
        if before & {TokenType.CROSS, TokenType.NATURAL}:
            continue
        end = joins[n + 1] if n + 1 < len(joins) else len(tokens)
        conditioned = any(
            tokens[j].token_type in (TokenType.ON, TokenType.USING) and depths[j] == depths[i]
            for j in range(i + 1, end)
        )
        if not conditioned:
            unconditioned += 1
            if unconditioned > MAX_JOINS_WITHOUT_CONDITION:
                return tokens[i]
    return None


@contextlib.contextmanager
def quiet_sqlglot() -> Iterator[None]:
    # sqlglot logs a warning when it falls back to exp.Command (OPTIMIZE, VACUUM...); the
    # loader reports what matters itself, so keep `assetlake validate` output clean.
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
