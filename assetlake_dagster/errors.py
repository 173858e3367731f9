"""The error tree, source locations and the did-you-mean helper.

Load-time problems are collected as :class:`Diagnostic` values (one per problem, each
pointing at ``path:line:col``) and raised together in one :class:`ProjectError`.
Run-time problems raise :class:`WriteError` subclasses that name the asset, table,
strategy and partition. Every error derives from :class:`dagster.Failure`, so Dagster
shows the message and metadata in the run view.
"""

import difflib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import dagster as dg


@dataclass(frozen=True)
class SourceLocation:
    """A 1-based position in a source file.

    Example:
        >>> str(SourceLocation("pipelines/orders.sql", 1, 49))
        'pipelines/orders.sql:1:49'
    """

    path: str
    line: int
    col: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    """One problem found while loading a project.

    Attributes:
        location: where the problem is.
        message: what is wrong, one sentence ending with a period.
        hint: how to fix it (may be empty).
        source_line: the offending source line, shown under the message.
        span: how many characters to underline from ``location.col``.
    """

    location: SourceLocation
    message: str
    hint: str = ""
    source_line: str = field(default="", compare=False)
    span: int = field(default=1, compare=False)

    def render(self) -> str:
        head = f"{self.location}: {self.message}"
        if self.hint:
            head += f" {self.hint}"
        if not self.source_line:
            return head
        caret = " " * (self.location.col - 1) + "^" * max(1, self.span)
        return f"{head}\n  {self.source_line}\n  {caret}"


class AssetlakeError(dg.Failure):
    """Base class of every error assetlake_dagster raises."""

    def __init__(self, message: str, *, allow_retries: Optional[bool] = None, metadata=None):
        super().__init__(description=message, metadata=metadata, allow_retries=allow_retries)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ProjectError(AssetlakeError):
    """Every problem found in a project folder, reported together.

    Attributes:
        diagnostics: the problems, sorted by file and position.
    """

    def __init__(self, diagnostics: Sequence[Diagnostic]):
        self.diagnostics = tuple(
            sorted(diagnostics, key=lambda d: (d.location.path, d.location.line, d.location.col))
        )
        count = len(self.diagnostics)
        files = len({d.location.path for d in self.diagnostics})
        summary = f"{count} error{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}"
        body = "\n".join(d.render() for d in self.diagnostics)
        super().__init__(f"{body}\n{summary}.", allow_retries=False)


class ConfigError(AssetlakeError):
    """A resource or environment setting is invalid (bad lake root, bad Spark option)."""


class UsageError(AssetlakeError, ValueError):
    """An argument given to the package's Python API is invalid: a ``managed_write`` option,
    a ``source_freshness`` text, a write contract without a table. Also a ``ValueError``, as
    these were before they joined this tree, so ``except ValueError`` still catches them."""


class PublishError(AssetlakeError):
    """A ``-- publish_with`` group was not published: a member failed its audit (no table of
    the group was committed), or a commit failed (the group's earlier commits were
    restored). The message names the tables and what became of each."""


class WriteError(AssetlakeError):
    """A managed write was refused or failed; the table keeps its prior version.

    Attributes:
        asset: the asset key as a string (``schema/table``).
        table: the table URI.
        strategy: the write strategy.
        partition: the partition key, or ``None`` for a whole-table write.
    """

    def __init__(
        self,
        problem: str,
        *,
        asset: str,
        table: str,
        strategy: str,
        partition: Optional[str] = None,
        allow_retries: Optional[bool] = None,
        metadata: Optional[dict[str, Any]] = None,
    ):
        self.problem = problem
        self.asset = asset
        self.table = table
        self.strategy = strategy
        self.partition = partition
        where = f"asset {asset} ({table}, strategy {strategy}"
        where += f", partition {partition!r})" if partition is not None else ")"
        super().__init__(
            f"{where}: {problem}", allow_retries=allow_retries, metadata=metadata
        )


class KeyViolationError(WriteError):
    """The rows to merge have NULL or duplicate keys; nothing was written.

    Retrying cannot help (the same query returns the same rows), so retries are off.
    """

    def __init__(self, problem: str, **kwargs: Any):
        kwargs.setdefault("allow_retries", False)
        super().__init__(problem, **kwargs)


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """Return ``" Did you mean 'x'?"`` for the closest option, or ``""``.

    Example:
        >>> did_you_mean("kye=", ["key=", "append", "history"])
        " Did you mean 'key='?"
    """
    matches = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" Did you mean '{matches[0]}'?" if matches else ""


def display_path(path: str) -> str:
    """A path as users should see it in messages: relative to the cwd when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # different drive on Windows
        return path
    return path if rel.startswith("..") else rel


@dataclass(frozen=True)
class SourceText:
    """One file's lines, for building :class:`Diagnostic` values that quote the offending line.

    Attributes:
        path: the file as shown in messages (see :func:`display_path`).
        lines: the file's lines without line endings (``lines[0]`` is line 1).

    Example:
        >>> src = SourceText.of("f.sql", "-- materialize delta://a/b kye=x\\nSELECT 1")
        >>> src.diagnostic(1, 28, "unknown option 'kye=x'.", span=5).render().splitlines()[0]
        "f.sql:1:28: unknown option 'kye=x'."
    """

    path: str
    lines: tuple[str, ...]

    @classmethod
    def of(cls, path: str, text: str) -> "SourceText":
        return cls(display_path(path), tuple(text.split("\n")))

    def line(self, number: int) -> str:
        """Line ``number`` (1-based), or ``""`` past the end."""
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else ""

    def location(self, line: int, col: int = 1) -> SourceLocation:
        return SourceLocation(self.path, line, col)

    def diagnostic(
        self, line: int, col: int, message: str, hint: str = "", *, span: int = 1
    ) -> Diagnostic:
        """A :class:`Diagnostic` at ``line:col`` underlining ``span`` characters."""
        return Diagnostic(
            self.location(line, col), message, hint, source_line=self.line(line), span=span
        )
