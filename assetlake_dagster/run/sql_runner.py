"""Running one SQL file in Spark: resolve upstream tables, run the SQL with its arguments bound.

Values are never spliced into SQL text: arguments are bound as Spark named parameter
markers (``spark.sql(query, args={...})``); :mod:`assetlake_dagster.defs.run_config` turns the
run config into those values.
"""

import hashlib
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Optional

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from assetlake_dagster.errors import AssetlakeError, display_path
from assetlake_dagster.defs.partitions import PartitionSlice, event_time_range, with_event_time_partitions, with_partition_key
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.lake.registration import is_history_table, register_current_view, register_table, register_view
from assetlake_dagster.spark.error_logs import errors_reported_by_caller
from assetlake_dagster.spark.session import is_connect_session
from assetlake_dagster.spec import (
    RESERVED_TABLE_SUFFIX,
    SqlAssetSpec,
    SqlStatement,
    TableUri,
)
from assetlake_dagster.lake.versions import current_version

_TEMP_VIEW_RE = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+VIEW\s+"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+AS\s+(?P<query>.*)$",
    re.IGNORECASE | re.DOTALL,
)


def resolve_upstreams(
    spark: SparkSession,
    lake: Lake,
    spec: SqlAssetSpec,
    elsewhere: Collection[TableUri] = (),
    external: Collection[TableUri] = (),
    views: Mapping[TableUri, SqlAssetSpec] = {},
) -> dict[str, Optional[int]]:
    """Register each upstream table in the session catalog; return the versions read.

    ``elsewhere``: upstreams read from another lake (a dev run's prod inputs), left alone.
    ``external``: upstreams no asset of the project produces (observable sources): a missing
    one is landed, not materialized (:func:`missing_upstreams_message`).
    ``views``: the project's views, by name: an upstream that is one is made in the catalog
    (its own upstreams first) unless it is there as its file says; it has no version.
    """
    versions: dict[str, Optional[int]] = {}
    missing = []
    for upstream in spec.upstreams:
        uri = upstream.uri
        if uri in elsewhere:
            continue
        if uri in views:
            ensure_view(spark, lake, views[uri], views)
            versions[str(uri)] = None
            continue
        if not lake.table_exists(spark, uri):
            base = _history_base(uri)
            if base is not None and lake.table_exists(spark, base):
                # `schema.t_current` of a history table produced outside this project.
                uri = base
            else:
                missing.append(uri)
                continue
        register_table(spark, lake, uri)
        if is_history_table(spark, uri):
            # SQL may read `<table>_current`; the view lives in the session catalog only.
            register_current_view(spark, lake, uri)
        versions[str(uri)] = current_version(spark, lake.table_path(uri))
    if missing:
        raise AssetlakeError(missing_upstreams_message(display_path(spec.path), spec.uri, lake, missing, external))
    return versions


def ensure_view(
    spark: SparkSession, lake: Lake, spec: SqlAssetSpec, views: Mapping[TableUri, SqlAssetSpec] = {}
) -> bool:
    """Make the view of the ``materialize view`` file ``spec`` in the catalog, its upstreams
    (tables, and views of ``views``) resolvable first, unless the catalog holds it as this
    content of the file made it; whether it was (re)created."""
    resolve_upstreams(spark, lake, spec, views=views)
    described = {c.name.lower(): c.description for c in spec.columns if c.description}
    column_comments = None
    if described and spec.output_columns is not None:
        column_comments = [(name, described.get(name.lower())) for name in spec.output_columns]
    return register_view(
        spark, lake, spec.uri, spec.select.sql, spec.code_version, spec.catalog.description, column_comments
    )


def missing_upstreams_message(
    where: str, target: TableUri, lake: Lake, missing: Sequence[TableUri], external: Collection[TableUri]
) -> str:
    """Why the run of the file ``where`` (writing ``target``) cannot start, and what to do:
    materialize the ``missing`` upstreams the project produces; land or create the
    ``external`` ones, which no run of the project can produce.

    Example:
        >>> payments = TableUri("landing", "payments")
        >>> print(missing_upstreams_message("staging/payments.sql", TableUri("staging", "payments"),
        ...                                 Lake("/lake"), [payments], {payments}))
        staging/payments.sql: external table delta://landing/payments has no Delta table at /lake/landing/payments. No asset of this project writes it, so materializing cannot create it: land it there with the job that loads it (or create it empty: CREATE TABLE landing.payments (<columns>) USING DELTA LOCATION '/lake/landing/payments'). Then "Observe" on its asset (or the watch sensor) records its version, and this asset can run.
    """
    produced = [u for u in missing if u not in external]
    sentences = []
    if produced:
        names = ", ".join(str(u) for u in produced)
        sentences.append(
            f"{where}: upstream table(s) {names} have no Delta table in the lake ({lake.root}). "
            f"Materialize them first (select the asset with its upstreams: '+{target.sql_name.replace('.', '/')}')."
        )
    for uri in missing:
        if uri in external:
            path = lake.table_path(uri)
            sentences.append(
                f"{where}: external table {uri} has no Delta table at {path}. No asset of this project writes it, "
                "so materializing cannot create it: land it there with the job that loads it (or create it empty: "
                f"CREATE TABLE {uri.sql_name} (<columns>) USING DELTA LOCATION '{path}'). Then \"Observe\" on its "
                "asset (or the watch sensor) records its version, and this asset can run."
            )
    return " ".join(sentences)


def _history_base(uri: TableUri) -> Optional[TableUri]:
    """``s.t_current`` -> ``s.t`` (the table whose companion view it would be)."""
    if not uri.table.lower().endswith(RESERVED_TABLE_SUFFIX) or len(uri.table) == len(RESERVED_TABLE_SUFFIX):
        return None
    return TableUri(uri.schema, uri.table[: -len(RESERVED_TABLE_SUFFIX)])


def run_statement(spark: SparkSession, spec: SqlAssetSpec, stmt: SqlStatement, args: Mapping[str, Any]) -> DataFrame:
    """Run one statement with only the arguments it references bound."""
    used = {name: args[name] for name in stmt.parameters if name in args}
    try:
        return _run_statement(spark, stmt, used)
    except PySparkException as exc:
        raise AssetlakeError(
            f"{display_path(spec.path)}:{stmt.line}: Spark rejected the statement: {exc}",
            allow_retries=False,
        ) from exc


def _run_statement(spark: SparkSession, stmt: SqlStatement, used: Mapping[str, Any]) -> DataFrame:
    # Spark's error is reported once, by the caller, with the file and line: PySpark does
    # not also log it with the JVM's stack trace.
    with errors_reported_by_caller():
        view = _TEMP_VIEW_RE.match(stmt.sql)
        if view:
            # Spark refuses parameter markers inside CREATE VIEW; binding the query and
            # registering its DataFrame gives the same view with the values bound. Always
            # replaced: a batch runs the setup once per partition, and one process may run
            # the asset again, where a second CREATE TEMP VIEW of the name would fail.
            df = spark.sql(view.group("query"), args=used or None)
            df.createOrReplaceTempView(view.group("name"))
            return df
        return spark.sql(stmt.sql, args=used or None)


def run_sql_slices(
    spark: SparkSession, spec: SqlAssetSpec, args: Mapping[str, Any], slices: Sequence[PartitionSlice]
) -> DataFrame:
    """The SELECT for each partition of the run, its key bound as ``:partition``.

    One partition: its rows (the IO manager adds ``_partition``). A backfill batch: each
    partition's rows with ``_partition`` set to its key, as one union, so the batch is
    one Spark job and one Delta commit. With ``event_time=``: one SELECT over the whole
    range, ``_partition`` computed from that column (one scan, however many partitions).
    """
    if spec.partitions is not None and spec.partitions.event_time:
        # One query over the run's whole range; each row's partition from its event time.
        rows = run_sql_file(spark, spec, {**args, **event_time_range(slices)})
        where = f"{display_path(spec.path)}:{spec.partitions.location.line if spec.partitions.location else 1}"
        return with_event_time_partitions(spark, rows, spec.partitions, [s.key for s in slices], where)
    if len(slices) == 1:
        return run_sql_file(spark, spec, {**args, **slices[0].bindings()})
    # Each partition re-runs the setup statements, so a temp view they create is
    # redefined for the next partition. Classic DataFrames are analyzed when created and
    # keep the definitions they were made with; Spark Connect DataFrames are client-side
    # plans that the server analyzes only when the write runs, by then against the last
    # partition's views, so every part would read the last partition's rows.
    pin = bool(spec.setup) and is_connect_session(spark)
    parts = []
    for index, piece in enumerate(slices):
        rows = run_sql_file(spark, spec, {**args, **piece.bindings()})
        part = with_partition_key(spark, rows, piece.key)
        parts.append(_pin_part(spark, spec, part, piece.key, index) if pin else part)
    return union_balanced(parts)


def union_balanced(parts: list[DataFrame]) -> DataFrame:
    """The union of ``parts`` as a balanced tree, ``log2(n)`` unions deep.

    A left-deep ``reduce(unionByName)`` nests one level per part. Spark Connect sends a
    plan as a protobuf message, and protobuf refuses messages nested past 100 levels
    (``DecodeError: Error parsing message with type 'spark.connect.Relation'``), so a
    batch of ~90 partitions failed; balanced, 1000 partitions nest 10 levels.

    Example:
        >>> union_balanced([spark.range(1), spark.range(2), spark.range(3)]).count()  # doctest: +SKIP
        6
    """
    while len(parts) > 1:
        paired = [a.unionByName(b) for a, b in zip(parts[0::2], parts[1::2])]
        parts = paired + parts[len(paired) * 2 :]
    return parts[0]


def _pin_part(spark: SparkSession, spec: SqlAssetSpec, part: DataFrame, key: str, index: int) -> DataFrame:
    """``part`` analyzed on the Connect server now, read back through a temp view.

    A temp view registered from a DataFrame stores the *analyzed* plan, so the setup
    views it reads are resolved at this point and later redefinitions cannot reach it.
    The view is a plan, not data: the batch stays one query and one commit. The name is
    per asset and batch position (not per run), so the next batch of the asset replaces
    these views instead of piling up plans that hold old Delta snapshots; the Connect
    session is per process, and one process never runs the same asset twice at once.
    """
    digest = hashlib.sha1(str(spec.uri).encode("utf-8")).hexdigest()[:12]
    name = f"_assetlake_part_{digest}_{index}"
    try:
        part.createOrReplaceTempView(name)
    except PySparkException as exc:
        raise AssetlakeError(
            f"{display_path(spec.path)}:{spec.select.line}: Spark rejected the statement for partition {key!r}: {exc}",
            allow_retries=False,
        ) from exc
    return spark.table(name)


def run_sql_file(spark: SparkSession, spec: SqlAssetSpec, args: Mapping[str, Any]) -> Optional[DataFrame]:
    """Run the setup statements and return the trailing SELECT as a lazy DataFrame.

    For ``manual`` files every statement runs (they write themselves) and ``None`` is
    returned.
    """
    for stmt in spec.setup:
        run_statement(spark, spec, stmt, args)
    if spec.select is None:
        return None
    return run_statement(spark, spec, spec.select, args)
