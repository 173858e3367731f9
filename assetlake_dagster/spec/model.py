"""The typed form of one annotated SQL file: frozen dataclasses and ``str`` Enums.

Parsing (``annotations``, ``sql_analysis``) builds these; everything downstream
(translator, assets, IO manager, CLI) only reads them.
"""

import json
import os
import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from assetlake_dagster.errors import SourceLocation, UsageError
from assetlake_dagster.spec.names import TableUri

#: The one asset-metadata key carrying the write contract (a :class:`MaterializeSpec`).
WRITE_METADATA_KEY = "assetlake/write"
#: Catalog metadata naming an asset's table; external tables carry it (they have no contract).
TABLE_METADATA_KEY = "assetlake/table"
#: Input metadata key for time travel: read the upstream table as of this Delta version.
READ_VERSION_KEY = "assetlake/version"
#: Asset metadata: output column -> description; the IO manager puts them in the
#: ``dagster/column_schema`` of each materialization (any asset may set it).
COLUMN_DESCRIPTIONS_KEY = "assetlake/column_descriptions"
#: Asset metadata: the table's description (a SQL file's ``-- description``), which the IO
#: manager writes to the Delta table as its comment (any asset may set it).
TABLE_COMMENT_KEY = "assetlake/table_comment"


class WriteStrategy(str, Enum):
    """How a slice is reconciled with its Delta table."""

    REPLACE = "replace"
    MERGE = "merge"
    APPEND = "append"
    HISTORY = "history"
    MANUAL = "manual"
    #: Not a write: the SELECT becomes a view in the lake's catalog (``materialize view``).
    VIEW = "view"


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


class AutomationKind(str, Enum):
    """The conditions of an ``-- automation`` line (Dagster's declarative automation)."""

    EAGER = "eager"
    ON_CRON = "on_cron"
    ON_MISSING = "on_missing"


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
class MergeOptions:
    """The keyed-write options of a merge (``-- materialize … key=… update=… within=…``).

    Attributes:
        update: on a matched key, update only these columns (dbt's
            ``merge_update_columns``); empty: every non-key column.
        keep: on a matched key, keep these columns' values in the table (dbt's
            ``merge_exclude_columns``); a new key still inserts them.
        within: a predicate on the table's columns bounding which rows of the table the
            merge reads and may update (dbt's ``incremental_predicates``), e.g.
            ``order_date >= date_sub(current_date(), 7)``.
        deletes: a key of the table (of the slice, within ``within``) that the rows no
            longer hold is deleted (``deletes=delete``), so the table is the SELECT's
            result; by default such a key stays.

    Example:
        >>> MergeOptions(keep=("created_at",)).to_json()
        {'keep': ['created_at']}
        >>> MergeOptions.from_json({'keep': ['created_at']}) == MergeOptions(keep=("created_at",))
        True
    """

    update: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    within: Optional[str] = None
    deletes: bool = False

    def __bool__(self) -> bool:
        return bool(self.update or self.keep or self.within or self.deletes)

    def updated_columns(self, columns: Sequence[str], key: Sequence[str]) -> list[str]:
        """The columns a matched row has set from the source, of ``columns`` (the rows').

        Example:
            >>> MergeOptions(keep=("created",)).updated_columns(["id", "v", "created"], ["id"])
            ['v']
        """
        skip = {c.lower() for c in (*key, *self.keep)}
        if self.update:
            wanted = {c.lower() for c in self.update}
            return [c for c in columns if c.lower() in wanted and c.lower() not in skip]
        return [c for c in columns if c.lower() not in skip]

    def to_json(self) -> dict[str, Any]:
        raw: dict[str, Any] = {
            "update": list(self.update),
            "keep": list(self.keep),
            "within": self.within,
            "deletes": "delete" if self.deletes else None,
        }
        return {name: value for name, value in raw.items() if value}

    @classmethod
    def from_json(cls, raw: Optional[Mapping[str, Any]]) -> "MergeOptions":
        raw = raw or {}
        return cls(
            tuple(raw.get("update") or ()),
            tuple(raw.get("keep") or ()),
            raw.get("within") or None,
            raw.get("deletes") == "delete",
        )


@dataclass(frozen=True)
class MaterializeSpec:
    """The ``-- materialize`` line: target table and write strategy.

    Attributes:
        key: the key columns (merge and history).
        track: history only: the columns whose change opens a new version (empty: every
            non-key column).
        close_deletes: history only: close the current version of keys absent from the
            snapshot (``deletes=close``); by default they stay current (soft delete).
        valid_from: history only: the column whose value starts each version
            (``valid_from=<column>``); by default the run's clock time.
        late_insert: history on ``valid_from`` only: a version whose timestamp falls before
            its key's latest one is placed among the key's versions (``late=insert``)
            instead of failing the run.
        new_rows: append only: each run appends the SELECT over the rows its upstream
            gained since the versions the table's rows were read up to (``append new_rows``),
            not over the whole upstream.
        merge: merge only: which columns a match updates, and the bound on the table's
            rows (:class:`MergeOptions`).
    """

    uri: TableUri
    strategy: WriteStrategy
    key: tuple[str, ...] = ()
    track: tuple[str, ...] = ()
    close_deletes: bool = False
    valid_from: Optional[str] = None
    merge: MergeOptions = MergeOptions()
    location: Optional[SourceLocation] = field(default=None, compare=False)
    new_rows: bool = False
    late_insert: bool = False

    def to_metadata(self) -> dict[str, Any]:
        """The write contract as asset metadata, under :data:`WRITE_METADATA_KEY`.

        Example:
            >>> MaterializeSpec(TableUri("s", "t"), WriteStrategy.MERGE, key=("id",)).to_metadata()
            {'assetlake/write': {'table': 'delta://s/t', 'strategy': 'merge', 'key': ['id'], 'track': [], 'deletes': None}}
        """
        return {
            WRITE_METADATA_KEY: write_contract(
                self.strategy, self.key, self.track, self.close_deletes, self.uri, self.merge, self.valid_from,
                self.new_rows, self.late_insert,
            )
        }

    @classmethod
    def from_metadata(cls, metadata: Optional[Mapping[str, Any]], default_uri: Optional[TableUri] = None) -> "MaterializeSpec":
        """The contract stored by :meth:`to_metadata` (or ``managed_write``) in asset metadata.

        Args:
            metadata: an asset's definition metadata; values may be raw or Dagster
                ``JsonMetadataValue``s.
            default_uri: the table when the metadata names none (a Python asset without
                ``table=``, or no contract at all: then the strategy is ``replace``).

        Raises:
            ValueError: the metadata names no table and there is no ``default_uri``, or
                an unknown strategy.

        Example:
            >>> meta = MaterializeSpec(TableUri("s", "t"), WriteStrategy.APPEND).to_metadata()
            >>> MaterializeSpec.from_metadata(meta).strategy
            <WriteStrategy.APPEND: 'append'>
        """
        raw = _contract(metadata)
        uri = contract_table(metadata) or default_uri
        if uri is None:
            raise UsageError(f"the asset's {WRITE_METADATA_KEY} metadata names no table")
        return cls(
            uri=uri,
            strategy=WriteStrategy(raw.get("strategy", WriteStrategy.REPLACE.value)),
            key=tuple(raw.get("key") or ()),
            track=tuple(raw.get("track") or ()),
            close_deletes=raw.get("deletes") == "close",
            valid_from=raw.get("valid_from") or None,
            merge=MergeOptions.from_json(raw.get("merge")),
            new_rows=bool(raw.get("new_rows")),
            late_insert=raw.get("late") == "insert",
        )


def contract_table(metadata: Optional[Mapping[str, Any]]) -> Optional[TableUri]:
    """The table the write contract in ``metadata`` names, if it names one.

    Example:
        >>> contract_table(MaterializeSpec(TableUri("s", "t"), WriteStrategy.REPLACE).to_metadata())
        TableUri(schema='s', table='t')
        >>> contract_table({}) is None
        True
    """
    table = _contract(metadata).get("table")
    return TableUri.parse(table) if table else None


def _contract(metadata: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    # Dagster hands definition metadata back as JsonMetadataValue (``.value``); raw dicts
    # and JSON text (older stored metadata) are accepted too.
    raw = (metadata or {}).get(WRITE_METADATA_KEY)
    raw = getattr(raw, "value", raw)
    return json.loads(raw) if isinstance(raw, str) else dict(raw or {})


def write_contract(
    strategy: "WriteStrategy",
    key: tuple[str, ...] = (),
    track: tuple[str, ...] = (),
    close_deletes: bool = False,
    uri: Optional[TableUri] = None,
    merge: "MergeOptions" = MergeOptions(),
    valid_from: Optional[str] = None,
    new_rows: bool = False,
    late_insert: bool = False,
) -> dict[str, Any]:
    """The JSON form of a write contract (``table`` is omitted when not known yet; ``merge``
    when it holds no option, ``valid_from`` when history runs on the clock, ``late`` unless
    late versions are inserted)."""
    contract: dict[str, Any] = {"table": str(uri)} if uri is not None else {}
    contract.update(
        strategy=strategy.value,
        key=list(key),
        track=list(track),
        deletes="close" if close_deletes else None,
    )
    if valid_from:
        contract["valid_from"] = valid_from
    if new_rows:
        contract["new_rows"] = True
    if late_insert:
        contract["late"] = "insert"
    if merge:
        contract["merge"] = merge.to_json()
    return contract


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
        event_time: time windows: the output column (DATE or TIMESTAMP) that places each
            row in its partition. With it a run of several partitions is one query over
            ``{partition_start}``..``{partition_end}`` of the whole range, each row's
            ``_partition`` computed from this column (dbt microbatch's ``event_time``);
            without it, one query per partition, unioned.
    """

    kind: PartitionKind
    start: Optional[str] = None
    end: Optional[str] = None
    timezone: Optional[str] = None
    values: tuple[str, ...] = ()
    name: Optional[str] = None
    batch_size: int = DEFAULT_BACKFILL_BATCH
    event_time: Optional[str] = None
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class ScheduleSpec:
    """The ``-- schedule <cron> [tz=<zone>]`` line: run the asset on a cron schedule.

    Attributes:
        cron: the five cron fields (or a ``@daily``-style alias), one space apart.
        timezone: the IANA time zone of the cron (default: UTC).
    """

    cron: str
    timezone: Optional[str] = None
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class AutomationSpec:
    """The ``-- automation eager|on_cron <cron> [tz=<zone>]|on_missing`` line.

    Attributes:
        kind: the declarative automation condition.
        cron: ``on_cron`` only: the cron schedule.
        timezone: ``on_cron`` only: the IANA time zone of the cron (default: UTC).
    """

    kind: AutomationKind
    cron: Optional[str] = None
    timezone: Optional[str] = None
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class FreshnessSpec:
    """The ``-- freshness fail=<duration> [warn=<duration>]`` or
    ``-- freshness cron <cron> lower_bound=<duration> [tz=<zone>]`` line.

    Attributes:
        fail: window form: how old the last materialization may get before the asset fails.
        warn: window form: the same for a warning (shorter than ``fail``).
        cron: cron form: the deadline by which the asset must have been materialized...
        lower_bound: cron form: ...at most this long before the deadline.
        timezone: cron form: the IANA time zone of the cron (default: UTC).
    """

    fail: Optional[timedelta] = None
    warn: Optional[timedelta] = None
    cron: Optional[str] = None
    lower_bound: Optional[timedelta] = None
    timezone: Optional[str] = None
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
        quarantine: ``on_fail=quarantine``: the rows that fail it are written aside to the
            table's quarantine table, and the rest are published (row-level tests only).
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
    quarantine: bool = False

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
    #: the statement as the user wrote it (``{partition}``, not ``:partition``), to show
    written: str = field(default="", compare=False)


@dataclass(frozen=True)
class ColumnSourceSpec:
    """One ``<uri>.<column>`` of a ``-- column <out> <- ...`` line."""

    uri: TableUri
    column: str
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class ColumnSpec:
    """What ``-- column`` lines declare about one output column.

    Attributes:
        name: the output column, as written.
        description: from ``-- column <out> "text"``; shown in the UI's column table.
        sources: from ``-- column <out> <- delta://s/t.c, ...``; replaces the inferred
            lineage of this column. Empty when only a description is declared.
        lineage_declared: whether a ``<-`` line names the sources (they may still be empty
            if every one was invalid).
    """

    name: str
    description: Optional[str] = None
    sources: tuple[ColumnSourceSpec, ...] = ()
    lineage_declared: bool = False
    location: Optional[SourceLocation] = field(default=None, compare=False)


#: Materialization metadata: the Delta version of each upstream table a SQL asset's run read.
UPSTREAM_VERSIONS_KEY = "assetlake/upstream_versions"
#: Asset metadata of a ``-- publish_with`` member: its group's name (the IO manager's write
#: of it is one of the group's commits).
PUBLISH_GROUP_KEY = "assetlake/publish_group"
#: Asset metadata key of a table's declared layout (:class:`LayoutSpec`), read by the IO manager.
LAYOUT_METADATA_KEY = "assetlake/layout"
#: Delta clusters a table by at most this many columns.
MAX_CLUSTER_COLUMNS = 4


@dataclass(frozen=True)
class ClusterColumn:
    """One column of a ``-- cluster_by`` line, and where it is written."""

    name: str
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class LayoutSpec:
    """How the table is laid out: the ``-- cluster_by`` and ``-- properties`` lines, bundled.

    Attributes:
        cluster_by: the Delta liquid clustering columns, in order (empty: not clustered).
        properties: Delta table properties (``delta.enableChangeDataFeed`` …) and their
            values as Delta stores them, in file order.

    Example:
        >>> layout = LayoutSpec((ClusterColumn("order_id"),), (("delta.enableChangeDataFeed", "true"),))
        >>> layout.to_metadata()
        {'assetlake/layout': {'cluster_by': ['order_id'], 'properties': {'delta.enableChangeDataFeed': 'true'}}}
        >>> LayoutSpec.from_metadata(layout.to_metadata()) == layout
        True
    """

    cluster_by: tuple[ClusterColumn, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def cluster_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.cluster_by)

    def __bool__(self) -> bool:
        return bool(self.cluster_by or self.properties)

    def to_json(self) -> dict[str, Any]:
        """The layout as JSON: ``{"cluster_by": [...], "properties": {...}}``."""
        return {"cluster_by": list(self.cluster_columns), "properties": dict(self.properties)}

    def to_metadata(self) -> dict[str, Any]:
        """The layout as asset metadata (empty when nothing is declared)."""
        return {LAYOUT_METADATA_KEY: self.to_json()} if self else {}

    @classmethod
    def from_metadata(cls, metadata: Optional[Mapping[str, Any]]) -> "LayoutSpec":
        """The layout stored by :meth:`to_metadata` (none declared: an empty one)."""
        raw = (metadata or {}).get(LAYOUT_METADATA_KEY)
        raw = getattr(raw, "value", raw)
        raw = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
        return cls(
            cluster_by=tuple(ClusterColumn(str(c)) for c in raw.get("cluster_by") or ()),
            properties=tuple((str(k), str(v)) for k, v in (raw.get("properties") or {}).items()),
        )


@dataclass(frozen=True)
class TableComments:
    """What the Delta table says about itself: its comment and its columns' comments.

    Read from the asset's metadata (:data:`TABLE_COMMENT_KEY` and
    :data:`COLUMN_DESCRIPTIONS_KEY`, which a SQL file's ``-- description`` and ``-- column``
    lines fill), and written to the table by the IO manager.

    Example:
        >>> comments = TableComments.from_metadata(
        ...     {TABLE_COMMENT_KEY: "Revenue per customer.", COLUMN_DESCRIPTIONS_KEY: {"revenue": "Sum of paid orders."}}
        ... )
        >>> comments.table, comments.column("REVENUE")
        ('Revenue per customer.', 'Sum of paid orders.')
        >>> bool(TableComments.from_metadata({}))
        False
    """

    table: Optional[str] = None
    columns: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.table or self.columns)

    def column(self, name: str) -> Optional[str]:
        """The comment of column ``name`` (matched case-insensitively, as Spark does)."""
        return next((text for column, text in self.columns if column.lower() == name.lower()), None)

    @classmethod
    def from_metadata(cls, metadata: Optional[Mapping[str, Any]]) -> "TableComments":
        """The comments an asset's metadata declares (none: an empty one)."""
        metadata = metadata or {}
        table = getattr(metadata.get(TABLE_COMMENT_KEY), "value", metadata.get(TABLE_COMMENT_KEY))
        columns = metadata.get(COLUMN_DESCRIPTIONS_KEY)
        columns = getattr(columns, "value", columns)
        columns = json.loads(columns) if isinstance(columns, str) else dict(columns or {})
        return cls(
            table=str(table) if table else None,
            columns=tuple((str(k), str(v)) for k, v in columns.items() if v),
        )


@dataclass(frozen=True)
class MaintainSpec:
    """The ``-- maintain`` line: when the table is optimized, and whether it is vacuumed.

    Attributes:
        cron: when the maintenance job runs (``OPTIMIZE``, then ``VACUUM`` if ``vacuum``).
        timezone: the IANA zone of the cron (default: UTC).
        vacuum: whether the job vacuums after optimizing.
        retain_hours: the ``VACUUM`` retention (``None``: the table's restore window).
    """

    cron: str
    timezone: Optional[str] = None
    vacuum: bool = False
    retain_hours: Optional[int] = None
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class CatalogSpec:
    """How the asset is listed in Dagster's catalog: the catalog lines, bundled.

    Attributes:
        group: the ``-- group`` line (the translator falls back to the schema).
        owners: the ``-- owner`` lines, in file order.
        tags: the ``-- tags`` pairs, in file order.
        description: the ``-- description`` lines, joined by a space.
        kinds: the ``-- kinds`` items, in file order (beside the kinds every asset has).
        deprecated: the ``-- deprecated`` lines, joined by a space: why the table is on its
            way out and what to read instead.

    Example:
        >>> CatalogSpec(group="sales", owners=("team:data-eng",)).group
        'sales'
    """

    group: Optional[str] = None
    owners: tuple[str, ...] = ()
    tags: tuple[tuple[str, str], ...] = ()
    description: Optional[str] = None
    kinds: tuple[str, ...] = ()
    deprecated: Optional[str] = None


@dataclass(frozen=True)
class PublishGroupSpec:
    """The ``-- publish_with <name>`` line: the tables of every file naming ``name`` are
    staged and audited together and committed one after the other in one run; if any audit
    fails none commits, and a failed commit restores those already made
    (:mod:`assetlake_dagster.run.publish_group`).

    Example:
        >>> PublishGroupSpec("daily_sales").name
        'daily_sales'
    """

    name: str
    location: Optional[SourceLocation] = field(default=None, compare=False)


@dataclass(frozen=True)
class ForeignTable:
    """A ``catalog.schema.table`` the SQL reads from a catalog assetlake does not manage (a
    Spark catalog plugin configured by ``spark.sql.catalog.<catalog>``): no asset, no
    dependency, read by Spark as written.

    Example:
        >>> ForeignTable("uc", "sales", "orders").name
        'uc.sales.orders'
    """

    catalog: str
    schema: str
    table: str
    location: Optional[SourceLocation] = field(default=None, compare=False)
    span: int = field(default=1, compare=False)

    @property
    def name(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.table}"


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
        catalog: the catalog lines (group, owners, tags, description, kinds).
        layout: the table's layout lines (``cluster_by``, ``properties``).
        maintain: the ``-- maintain`` line, if any.
        schedule: the ``-- schedule`` line, if any.
        automation: the ``-- automation`` line, if any.
        columns: the ``-- column`` lines, one entry per output column named, in file order.
        code_version: sha256 of the file contents.
        freshness: the ``-- freshness`` line, if any.
        foreign_tables: ``catalog.schema.table`` names read from other catalogs, in file order.
        publish_with: the ``-- publish_with`` line, if any: the group of tables published together.
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
    catalog: CatalogSpec = CatalogSpec()
    layout: LayoutSpec = LayoutSpec()
    maintain: Optional[MaintainSpec] = None
    schedule: Optional[ScheduleSpec] = None
    automation: Optional[AutomationSpec] = None
    columns: tuple[ColumnSpec, ...] = ()
    code_version: str = ""
    freshness: Optional[FreshnessSpec] = None
    foreign_tables: tuple[ForeignTable, ...] = ()
    publish_with: Optional[PublishGroupSpec] = None

    @property
    def uri(self) -> TableUri:
        return self.materialize.uri
