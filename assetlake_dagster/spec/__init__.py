"""The write contract and the typed form of an annotated SQL file: one home for both.

* :mod:`~assetlake_dagster.spec.names`: identifiers, ``delta://`` URIs, managed columns.
* :mod:`~assetlake_dagster.spec.model`: the frozen specs and ``str`` Enums, and
  :class:`MaterializeSpec`'s round trip through asset metadata.
* :mod:`~assetlake_dagster.spec.values`: parsing argument values and partition dates.
* :mod:`~assetlake_dagster.spec.outcomes`: what a data test found.

Parsing builds these; everything downstream only reads them.
"""

from assetlake_dagster.spec.names import (
    IDENTIFIER_RE as IDENTIFIER_RE,
    URI_SCHEME as URI_SCHEME,
    PARTITION_COLUMN as PARTITION_COLUMN,
    VALID_FROM as VALID_FROM,
    VALID_TO as VALID_TO,
    IS_CURRENT as IS_CURRENT,
    HISTORY_COLUMNS as HISTORY_COLUMNS,
    RESERVED_COLUMNS as RESERVED_COLUMNS,
    RESERVED_TABLE_SUFFIX as RESERVED_TABLE_SUFFIX,
    is_identifier as is_identifier,
    quote_identifier as quote_identifier,
    TableUri as TableUri,
)
from assetlake_dagster.spec.model import (
    WRITE_METADATA_KEY as WRITE_METADATA_KEY,
    TABLE_METADATA_KEY as TABLE_METADATA_KEY,
    READ_VERSION_KEY as READ_VERSION_KEY,
    COLUMN_DESCRIPTIONS_KEY as COLUMN_DESCRIPTIONS_KEY,
    TABLE_COMMENT_KEY as TABLE_COMMENT_KEY,
    WriteStrategy as WriteStrategy,
    PartitionKind as PartitionKind,
    PARTITION_PARAMETERS as PARTITION_PARAMETERS,
    THIS_PLACEHOLDER as THIS_PLACEHOLDER,
    THIS_MARKER as THIS_MARKER,
    TIME_WINDOW_PARAMETERS as TIME_WINDOW_PARAMETERS,
    DEFAULT_BACKFILL_BATCH as DEFAULT_BACKFILL_BATCH,
    WINDOW_UNITS as WINDOW_UNITS,
    AutomationKind as AutomationKind,
    DataTestKind as DataTestKind,
    ArgumentType as ArgumentType,
    MaterializeSpec as MaterializeSpec,
    MergeOptions as MergeOptions,
    contract_table as contract_table,
    write_contract as write_contract,
    PartitionSpec as PartitionSpec,
    ScheduleSpec as ScheduleSpec,
    AutomationSpec as AutomationSpec,
    FreshnessSpec as FreshnessSpec,
    WindowSpec as WindowSpec,
    DataTestSpec as DataTestSpec,
    UpstreamSpec as UpstreamSpec,
    ArgumentSpec as ArgumentSpec,
    SqlStatement as SqlStatement,
    ColumnSourceSpec as ColumnSourceSpec,
    ColumnSpec as ColumnSpec,
    CatalogSpec as CatalogSpec,
    PublishGroupSpec as PublishGroupSpec,
    ClusterColumn as ClusterColumn,
    LayoutSpec as LayoutSpec,
    ForeignTable as ForeignTable,
    TableComments as TableComments,
    MaintainSpec as MaintainSpec,
    LAYOUT_METADATA_KEY as LAYOUT_METADATA_KEY,
    MAX_CLUSTER_COLUMNS as MAX_CLUSTER_COLUMNS,
    UPSTREAM_VERSIONS_KEY as UPSTREAM_VERSIONS_KEY,
    PUBLISH_GROUP_KEY as PUBLISH_GROUP_KEY,
    SqlAssetSpec as SqlAssetSpec,
)
from assetlake_dagster.spec.outcomes import (
    SAMPLE_SIZE as SAMPLE_SIZE,
    TestOutcome as TestOutcome,
    blocking_failures as blocking_failures,
)
from assetlake_dagster.spec.values import (
    convert_value as convert_value,
    interval_hours as interval_hours,
    parse_partition_datetime as parse_partition_datetime,
    typed_value as typed_value,
)
