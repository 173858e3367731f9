"""Spec -> ``dagster.AssetSpec``, one overridable method per attribute.

Like ``DagsterDbtTranslator``: subclass and override one method to change one attribute
for every SQL asset, e.g. a group naming rule, without touching the rest.
"""

import copy
import os
import warnings
from collections.abc import Mapping
from typing import Any, Optional

import dagster as dg

from assetlake_dagster.defs.automation_conditions import automation_condition
from assetlake_dagster.errors import display_path
from assetlake_dagster.defs.freshness_checks import freshness_policy, is_partition_lag
from assetlake_dagster.defs.partitions import partition_mapping, partitions_definition
from assetlake_dagster.spec import COLUMN_DESCRIPTIONS_KEY, TABLE_COMMENT_KEY, SqlAssetSpec, TableUri

BASE_KINDS = ("spark", "delta", "sql")
#: The tag of a ``-- deprecated`` asset, shown as a badge in the asset catalog.
DEPRECATED_TAG = "deprecated"


class AssetlakeTranslator:
    """Decides the Dagster attributes of each SQL asset and external table.

    Example:
        >>> class MyTranslator(AssetlakeTranslator):
        ...     def get_group_name(self, spec):
        ...         return "lakehouse"
        >>> defs = build_definitions("pipelines/", translator=MyTranslator())  # doctest: +SKIP
    """

    #: The asset key of every table of the definitions being built (:meth:`bound_to`).
    _keys_by_table: Mapping[TableUri, dg.AssetKey] = {}

    def bound_to(self, keys_by_table: Mapping[TableUri, dg.AssetKey]) -> "AssetlakeTranslator":
        """A copy of this translator that knows the asset key of every table of the
        definitions, so that :meth:`get_upstream_key` finds them (``build_definitions`` binds
        its translator once it has asked it, and the Python assets, for every table's key).

        Example:
            >>> t = AssetlakeTranslator().bound_to({TableUri("raw", "events"): dg.AssetKey(["landing", "events"])})
            >>> t.get_upstream_key(TableUri("raw", "events")).path, t.get_upstream_key(TableUri("raw", "x")).path
            (['landing', 'events'], ['raw', 'x'])
        """
        bound = copy.copy(self)
        bound._keys_by_table = dict(keys_by_table)
        return bound

    def get_asset_key(self, spec: SqlAssetSpec) -> dg.AssetKey:
        return dg.AssetKey(spec.uri.asset_key_path)

    def get_external_asset_key(self, uri: TableUri) -> dg.AssetKey:
        return dg.AssetKey(uri.asset_key_path)

    def get_group_name(self, spec: SqlAssetSpec) -> str:
        """The ``group`` annotation, else the schema name."""
        return spec.catalog.group or spec.uri.schema

    def get_description(self, spec: SqlAssetSpec) -> str:
        """The ``-- description`` lines (else the file's name), a ``-- deprecated`` note first,
        and the SQL."""
        text = spec.catalog.description or f"Materialized by {os.path.basename(spec.path)}."
        if spec.catalog.deprecated:
            text = f"**Deprecated:** {spec.catalog.deprecated}\n\n{text}"
        if spec.select is not None:
            text += f"\n\n```sql\n{spec.select.written or spec.select.sql}\n```"
        return text

    def get_owners(self, spec: SqlAssetSpec) -> list[str]:
        return list(spec.catalog.owners)

    def get_tags(self, spec: SqlAssetSpec) -> dict[str, str]:
        """The ``-- tags`` pairs; ``deprecated`` (empty value: a badge in the catalog) on a
        ``-- deprecated`` file."""
        tags = dict(spec.catalog.tags)
        if spec.catalog.deprecated:
            tags[DEPRECATED_TAG] = ""
        return tags

    def get_kinds(self, spec: SqlAssetSpec) -> set[str]:
        return {*BASE_KINDS, *spec.catalog.kinds}

    def get_code_version(self, spec: SqlAssetSpec) -> str:
        """The file's content hash, so the UI marks downstream assets stale on edits."""
        return spec.code_version

    def get_upstream_key(self, uri: TableUri) -> dg.AssetKey:
        """The asset key of a table a SQL file reads: the key the definitions give that table
        (this translator's :meth:`get_asset_key` of the file that writes it, its
        :meth:`get_external_asset_key`, or a Python asset's or another project's own key),
        else the table's default key ``[schema, table]``."""
        return self._keys_by_table.get(uri) or dg.AssetKey(uri.asset_key_path)

    def get_deps(self, spec: SqlAssetSpec) -> list[dg.AssetDep]:
        """Upstream tables, by :meth:`get_upstream_key`; ``window=`` upstreams carry their
        partition mapping."""
        return [dg.AssetDep(self.get_upstream_key(u.uri), partition_mapping=partition_mapping(u)) for u in spec.upstreams]

    def get_partitions_def(self, spec: SqlAssetSpec) -> Optional[dg.PartitionsDefinition]:
        """The ``-- partitioned`` line as a Dagster partitions definition."""
        return partitions_definition(spec.partitions) if spec.partitions else None

    def get_automation_condition(self, spec: SqlAssetSpec) -> Optional[dg.AutomationCondition]:
        """The asset's declarative automation condition: the ``-- automation`` line, else none.

        ``eager`` also updates older time partitions, and every condition waits until the
        upstreams' blocking data tests have passed (see :mod:`assetlake_dagster.defs.automation_conditions`).
        Whenever an asset has a condition, the definitions include a running
        ``assetlake_automation_sensor`` that evaluates it.

        Args:
            spec: the parsed SQL file.

        Returns:
            The condition, or ``None`` for an asset that runs only when asked (or scheduled).

        Example:
            Every asset of the ``marts`` group eager, whatever its file says:

            >>> class EagerMarts(AssetlakeTranslator):
            ...     def get_automation_condition(self, spec):
            ...         if self.get_group_name(spec) == "marts":
            ...             return dg.AutomationCondition.eager()
            ...         return super().get_automation_condition(spec)
            >>> defs = build_definitions("pipelines/", translator=EagerMarts())  # doctest: +SKIP
        """
        return automation_condition(spec.automation) if spec.automation else None

    def get_freshness_policy(self, spec: SqlAssetSpec) -> Optional[dg.FreshnessPolicy]:
        """The asset's freshness policy: the ``-- freshness`` line, else none. On a time-partitioned
        asset the window form (``fail=``, ``warn=``) is each partition's lag, a check, not a policy.

        Example:
            Every asset of the ``marts`` group fresh within a day, unless its file says otherwise:

            >>> from datetime import timedelta
            >>> class FreshMarts(AssetlakeTranslator):
            ...     def get_freshness_policy(self, spec):
            ...         policy = super().get_freshness_policy(spec)
            ...         if policy is None and self.get_group_name(spec) == "marts":
            ...             return dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=24))
            ...         return policy
            >>> defs = build_definitions("pipelines/", translator=FreshMarts())  # doctest: +SKIP
        """
        if spec.freshness is None or is_partition_lag(spec):
            return None  # on time partitions, fail=/warn= is each partition's lag: a check (freshness_checks.py)
        return freshness_policy(spec.freshness)

    def get_metadata(self, spec: SqlAssetSpec) -> dict[str, Any]:
        """Catalog metadata: table name, file, code reference, the table's and columns' descriptions.

        The write contract (``assetlake/write``) is not part of it: the assets attach it
        after the translator has run, so an override of this method (with or without
        ``super()``) can neither drop nor change how the table is written.
        """
        line = spec.materialize.location.line if spec.materialize.location else 1
        with warnings.catch_warnings():
            # Code references are "beta" in Dagster 1.13; the warning would print per file.
            warnings.simplefilter("ignore", dg.BetaWarning)
            code_references = dg.CodeReferencesMetadataValue(
                code_references=[
                    dg.LocalFileCodeReference(file_path=spec.path, line_number=line, label="SQL file")
                ]
            )
        metadata: dict[str, Any] = {
            "dagster/table_name": spec.uri.qualified_name,
            "assetlake/table": str(spec.uri),
            "assetlake/file": display_path(spec.path),
            "dagster/code_references": code_references,
        }
        descriptions = {c.name: c.description for c in spec.columns if c.description}
        if descriptions:
            metadata[COLUMN_DESCRIPTIONS_KEY] = descriptions
        if spec.catalog.description:
            metadata[TABLE_COMMENT_KEY] = spec.catalog.description
        return metadata

    def get_asset_spec(self, spec: SqlAssetSpec) -> dg.AssetSpec:
        """All of the above, as one ``AssetSpec``."""
        return dg.AssetSpec(
            key=self.get_asset_key(spec),
            deps=self.get_deps(spec),
            description=self.get_description(spec),
            metadata=self.get_metadata(spec),
            group_name=self.get_group_name(spec),
            code_version=self.get_code_version(spec),
            owners=self.get_owners(spec),
            tags=self.get_tags(spec),
            kinds=self.get_kinds(spec),
            partitions_def=self.get_partitions_def(spec),
            automation_condition=self.get_automation_condition(spec),
            freshness_policy=self.get_freshness_policy(spec),
        )

    def get_external_asset_spec(self, uri: TableUri, referenced_by: Optional[list[str]] = None) -> dg.AssetSpec:
        """A table the SQL reads but no file produces: an external (observable) asset."""
        users = ", ".join(sorted(referenced_by or []))
        return dg.AssetSpec(
            key=self.get_external_asset_key(uri),
            description=f"External Delta table {uri}, produced outside this project"
            + (f"; read by {users}." if users else "."),
            group_name="external",
            kinds={"delta"},
            metadata={"dagster/table_name": uri.qualified_name, "assetlake/table": str(uri)},
        )
