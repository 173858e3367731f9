"""The lake: where each ``delta://schema/table`` lives.

The Delta table of ``delta://s/t`` lives at ``<lake_root>/s/t``. Identifiers are
allow-listed by :class:`~assetlake_dagster.spec.TableUri`, and every resolved path is
checked to stay inside the lake root, so no URI, symlink or setting can point a write
elsewhere. A table's path never goes through a symlink inside the lake either: such a link
could alias two tables or nest one inside another's folder.

A lake holds its root in canonical form (:func:`~assetlake_dagster.lake.identity.canonical_lake_root`):
``s3://B//lake/`` and ``s3a://b/lake`` are one lake, with one engine and one path per table.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from assetlake_dagster.lake.delta_sql import is_delta_table
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.files import LakeFiles, lake_files
from assetlake_dagster.spark.session import is_connect_session
from assetlake_dagster.lake.identity import canonical_lake_root
from assetlake_dagster.lake.storage import S3Settings, is_s3, url_scheme
from assetlake_dagster.spec import TableUri

if TYPE_CHECKING:  # PySpark loads when a run needs it, not with the definitions
    from pyspark.sql import SparkSession

DEFAULT_LAKE_ROOT = os.path.join(".assetlake", "lake")
LAKE_ROOT_ENV = "ASSETLAKE_LAKE_ROOT"
#: The environment variable naming the prod lake a dev lake defers to (run/defer.py).
DEFER_ENV = "ASSETLAKE_DEFER_TO"


def default_lake_root() -> str:
    """``$ASSETLAKE_LAKE_ROOT``, else ``.assetlake/lake`` under the current directory."""
    return os.environ.get(LAKE_ROOT_ENV) or DEFAULT_LAKE_ROOT


@dataclass(frozen=True)
class Lake:
    """A lake root: a local folder or an object-store URL, held in canonical form (two
    spellings of one place are equal lakes).

    Example:
        >>> lake = Lake("/data/lake")
        >>> lake.table_path(TableUri("analytics", "orders"))
        '/data/lake/analytics/orders'
        >>> Lake("S3://My-Bucket//lake/").root
        's3a://my-bucket/lake'
        >>> Lake("s3://my-bucket/lake") == Lake("s3a://my-bucket/x/../lake")
        True
    """

    root: str
    #: How to reach an ``s3a://`` root; ``None``: from the standard AWS variables.
    s3_settings: Optional[S3Settings] = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", canonical_lake_root(self.root))

    @property
    def is_url(self) -> bool:
        return url_scheme(self.root) is not None

    @property
    def is_s3(self) -> bool:
        """Whether the lake is on S3 (its root is ``s3a://…``; ``s3://``, ``s3n://`` are spellings of it)."""
        return is_s3(self.root)

    @property
    def s3(self) -> S3Settings:
        """The S3 settings this lake is reached with."""
        return self.s3_settings if self.s3_settings is not None else S3Settings.from_env()

    @property
    def files(self) -> LakeFiles:
        """The lake's files, for what reads them without Spark (the Delta log reader).

        ``os`` on a local root; ``pyarrow.fs`` on an object store, reached with :attr:`s3`.

        Example:
            >>> Lake("/data/lake").files.is_local
            True
        """
        return lake_files(self.root, self.s3_settings)

    def table_path(self, uri: TableUri) -> str:
        """The storage location of a table, guaranteed to be inside the lake root."""
        if self.is_url:
            # Segments are allow-listed identifiers and the root is canonical: nothing to normalise.
            return f"{self.root.rstrip('/')}/{uri.schema}/{uri.table}"
        own = os.path.join(self.root, uri.schema, uri.table)
        path = os.path.realpath(own)
        if os.path.commonpath([path, self.root]) != self.root or path == self.root:
            raise ConfigError(
                f"{uri} resolves to {path}, outside the lake root {self.root}. "
                "Remove the symlink that points out of the lake."
            )
        if path != own:
            # A link inside the lake could make two URIs one table, or put one table inside
            # another's folder (whose VACUUM or overwrite would then delete it): refused.
            raise ConfigError(
                f"{uri} resolves through a symlink to {path}, not its own folder {own}. "
                "Each table has its own folder in the lake; remove the symlink (move the table there instead)."
            )
        return path

    @property
    def warehouse_dir(self) -> str:
        """The session catalog's warehouse: a dot-folder no table identifier can name."""
        return f"{self.root.rstrip('/')}/.spark-warehouse"

    def table_exists(self, spark: SparkSession, uri: TableUri) -> bool:
        path = self.table_path(uri)
        if not self.is_url and not is_connect_session(spark):
            return os.path.isdir(os.path.join(path, "_delta_log"))
        # A Spark Connect server may not see this machine's disk: ask the server.
        return is_delta_table(spark, path)
