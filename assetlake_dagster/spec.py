"""The typed form of one annotated SQL file: frozen dataclasses and ``str`` Enums.

Parsing (``annotations.py``, ``sql_analysis.py``) builds these; everything downstream
(translator, assets, IO manager, CLI) only reads them.
"""

import os
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from assetlake_dagster.errors import SourceLocation

IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
URI_SCHEME = "delta://"

#: Columns the IO manager owns; a SELECT may not project them (case-insensitive).
RESERVED_COLUMNS = frozenset({"_partition", "valid_from", "valid_to", "is_current"})
#: Suffix reserved for the SCD2 companion view.
RESERVED_TABLE_SUFFIX = "_current"


def is_identifier(name: str) -> bool:
    """Whether ``name`` is an allow-listed identifier (``^[A-Za-z_][A-Za-z0-9_]*$``).

    Example:
        >>> is_identifier("dim_customer"), is_identifier("a-b"), is_identifier("1x")
        (True, False, False)
    """
    return bool(IDENTIFIER_RE.match(name))


def quote_identifier(name: str) -> str:
    """Backtick-quote an allow-listed identifier for Spark SQL.

    Raises ValueError for anything not allow-listed, so callers cannot splice text.

    Example:
        >>> quote_identifier("order_id")
        '`order_id`'
    """
    if not is_identifier(name):
        raise ValueError(f"not an allowed identifier: {name!r}")
    return f"`{name}`"


class WriteStrategy(str, Enum):
    """How a slice is reconciled with its Delta table."""

    REPLACE = "replace"
    MERGE = "merge"
    APPEND = "append"
    HISTORY = "history"
    MANUAL = "manual"


class PartitionKind(str, Enum):
    """The kinds of ``-- partitioned`` line."""

    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"
    STATIC = "static"
    DYNAMIC = "dynamic"

    @property
    def is_time_window(self) -> bool:
        return self not in (PartitionKind.STATIC, PartitionKind.DYNAMIC)


#: Parameter markers a partitioned file's SQL may use; ``{partition}`` and friends become these.
PARTITION_PARAMETERS = ("partition", "partition_start", "partition_end")
#: In a custom data test, the rows under test (the staged slice, before it is committed).
THIS_PLACEHOLDER = "{this}"
#: What ``{this}`` becomes before parsing (same length); replaced by a temp view name at run time.
THIS_MARKER = "__this"
#: The markers only time-window partitions can bind.
TIME_WINDOW_PARAMETERS = ("partition_start", "partition_end")
#: How many partitions a backfill writes per run (and per Delta commit) unless ``batch=`` says.
DEFAULT_BACKFILL_BATCH = 31
#: ``window=<n><unit>`` units and the time-window kind each one counts in.
WINDOW_UNITS = {
    "h": PartitionKind.HOURLY,
    "d": PartitionKind.DAILY,
    "w": PartitionKind.WEEKLY,
    "mo": PartitionKind.MONTHLY,
}


class DataTestKind(str, Enum):
    """The kinds of ``-- data_test`` line."""

    UNIQUE = "unique"
    NOT_NULL = "not_null"
    ACCEPTED_VALUES = "accepted_values"
    RELATIONSHIPS = "relationships"
    CUSTOM = "custom"


class ArgumentType(str, Enum):
    """Types a ``-- $name (type)`` SQL argument may declare."""

    STRING = "string"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    DATE = "date"
    TIMESTAMP = "timestamp"


@dataclass(frozen=True)
class TableUri:
    """A managed table ``delta://<schema>/<table>``.

    Example:
        >>> uri = TableUri("analytics", "dim_customer")
        >>> str(uri), uri.sql_name, uri.asset_key_path
        ('delta://analytics/dim_customer', 'analytics.dim_customer', ['analytics', 'dim_customer'])
    """

    schema: str
    table: str

    def __post_init__(self) -> None:
        for part in (self.schema, self.table):
            if not is_identifier(part):
                raise ValueError(f"not an allowed identifier: {part!r}")

    def __str__(self) -> str:
        return f"{URI_SCHEME}{self.schema}/{self.table}"

    @property
    def sql_name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def asset_key_path(self) -> list[str]:
        return [self.schema, self.table]

    @classmethod
    def parse(cls, text: str) -> "TableUri":
        """Parse ``delta://schema/table``; raises ValueError with the reason."""
        if not text.startswith(URI_SCHEME):
            raise ValueError(f"expected '{URI_SCHEME}<schema>/<table>', got {text!r}")
        parts = text[len(URI_SCHEME) :].split("/")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"expected '{URI_SCHEME}<schema>/<table>', got {text!r}")
        return cls(parts[0], parts[1])


@dataclass(frozen=True)
class MaterializeSpec:
    """The ``-- materialize`` line: target table and write strategy.

    Attributes:
        key: the key columns (merge and history).
        track: history only: the columns whose change opens a new version (empty: every
            non-key column).
        close_deletes: history only: close the current version of keys absent from the
            snapshot (``deletes=close``); by default they stay current (soft delete).
    """

    uri: TableUri
    strategy: WriteStrategy
    key: tuple[str, ...] = ()
    track: tuple[str, ...] = ()
    close_deletes: bool = False
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class PartitionSpec:
    """The ``-- partitioned`` line: how the table is sliced.

    Attributes:
        kind: hourly, daily, weekly, monthly (time windows), static or dynamic.
        start: time windows: the first partition's start, as written (``2024-01-01`` or
            ``2024-01-01 06:00``).
        end: time windows: the exclusive end, as written (default: open, up to now).
        timezone: time windows: the IANA time zone of the windows (default UTC).
        values: static: the partition keys, in order.
        name: dynamic: the name of the Dagster dynamic partitions set.
        batch_size: how many partitions one backfill run writes, in one Delta commit.
    """

    kind: PartitionKind
    start: Optional[str] = None
    end: Optional[str] = None
    timezone: Optional[str] = None
    values: tuple[str, ...] = ()
    name: Optional[str] = None
    batch_size: int = DEFAULT_BACKFILL_BATCH
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class WindowSpec:
    """``window=<count><unit>`` on an ``-- on`` line: the trailing upstream partitions.

    Example:
        >>> WindowSpec(7, PartitionKind.DAILY).text
        '7d'
    """

    count: int
    kind: PartitionKind

    @property
    def text(self) -> str:
        unit = next(u for u, k in WINDOW_UNITS.items() if k is self.kind)
        return f"{self.count}{unit}"


@dataclass(frozen=True)
class DataTestSpec:
    """One ``-- data_test`` line: a Dagster asset check, audited before the commit.

    Attributes:
        kind: the built-in test, or ``custom`` (a SQL file whose SELECT returns failing rows).
        columns: the tested column(s) (``unique`` may name several: a composite key).
        values: ``accepted_values``: the allowed values (compared as text).
        ref_uri, ref_column: ``relationships``: the referenced table and column.
        path: ``custom``: the absolute path of the test's SQL file.
        query: ``custom``: the test's SELECT (placeholders already turned into markers).
        blocking: False for a trailing ``warn``: the result is reported, the write proceeds.
    """

    kind: DataTestKind
    columns: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    ref_uri: Optional["TableUri"] = None
    ref_column: Optional[str] = None
    path: Optional[str] = None
    query: Optional["SqlStatement"] = None
    blocking: bool = True
    location: Optional[SourceLocation] = field(default=None, compare=False)

    @property
    def name(self) -> str:
        """The asset check's name, e.g. ``not_null_email`` or ``custom_no_negative_amounts``.

        Example:
            >>> DataTestSpec(DataTestKind.UNIQUE, ("order_id", "line")).name
            'unique_order_id_line'
        """
        if self.kind is DataTestKind.CUSTOM:
            return "custom_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(self.path or "test"))[0])
        return f"{self.kind.value}_{'_'.join(self.columns)}"

    @property
    def description(self) -> str:
        """What the test checks, in words (shown in the UI and in failures)."""
        cols = ", ".join(self.columns)
        if self.kind is DataTestKind.UNIQUE:
            return f"{cols} unique"
        if self.kind is DataTestKind.NOT_NULL:
            return f"{cols} not NULL"
        if self.kind is DataTestKind.ACCEPTED_VALUES:
            return f"{cols} in ({', '.join(self.values)})"
        if self.kind is DataTestKind.RELATIONSHIPS:
            return f"{cols} found in {self.ref_uri}.{self.ref_column}"
        return f"no rows returned by {os.path.basename(self.path or '')}"


@dataclass(frozen=True)
class UpstreamSpec:
    """A declared (``-- on``) or inferred upstream table.

    Attributes:
        window: ``window=`` on the ``-- on`` line: each partition reads this many
            upstream partitions ending at its own.
    """

    uri: TableUri
    declared: bool = True
    window: Optional[WindowSpec] = None
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class ArgumentSpec:
    """A typed SQL argument ``-- $name (type) [= default]``, bound as ``:name``."""

    name: str
    type: ArgumentType
    default: Any = None
    has_default: bool = False
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class SqlStatement:
    """One SQL statement of the file body with the 1-based line it starts on."""

    sql: str
    line: int
    #: names of the ``:name`` parameter markers the statement uses
    parameters: tuple[str, ...] = ()


@dataclass(frozen=True)
class SqlAssetSpec:
    """Everything known about one annotated SQL file after parsing and checking.

    Attributes:
        path: absolute path of the file.
        materialize: the target table and strategy.
        upstreams: declared and inferred upstream tables, merged, without the target.
        arguments: typed SQL arguments.
        setup: setup statements run before the SELECT (``SET``, ``CREATE TEMP VIEW``...).
        select: the trailing SELECT (for ``manual``: the last statement, any kind).
        output_columns: columns the SELECT projects, when they can be known statically.
        partitions: the ``-- partitioned`` line, or ``None`` for a whole-table asset.
        data_tests: the ``-- data_test`` lines, in file order.
        code_version: sha256 of the file contents.
    """

    path: str
    materialize: MaterializeSpec
    upstreams: tuple[UpstreamSpec, ...] = ()
    arguments: tuple[ArgumentSpec, ...] = ()
    setup: tuple[SqlStatement, ...] = ()
    select: Optional[SqlStatement] = None
    output_columns: Optional[tuple[str, ...]] = None
    partitions: Optional[PartitionSpec] = None
    data_tests: tuple[DataTestSpec, ...] = ()
    group: Optional[str] = None
    owners: tuple[str, ...] = ()
    tags: tuple[tuple[str, str], ...] = ()
    description: Optional[str] = None
    kinds: tuple[str, ...] = ()
    code_version: str = ""

    @property
    def uri(self) -> TableUri:
        return self.materialize.uri
