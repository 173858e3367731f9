"""The lake's files outside Spark: a local folder through ``os``, an object store through ``pyarrow.fs``.

Whatever reads the lake without Spark (the Delta log reader, and through it the watch
sensor, "Observe" of external tables, version look-ups) asks a :class:`LakeFiles` for the
few operations it needs: list a folder, read a file, a file's modification time, open a
Parquet file. Paths stay what the lake calls them (``/data/lake/s/t``,
``s3a://bucket/lake/s/t``), so every message names the table as the user wrote it.

- A local path uses plain ``os`` calls: one ``listdir`` per listing, a ``stat`` only for
  the files read.
- ``s3a://`` and ``s3://`` use PyArrow's ``S3FileSystem`` from
  :meth:`~assetlake_dagster.lake.storage.S3Settings.filesystem` (the endpoint, region and
  addressing Spark and delta-rs use; credentials from the standard AWS chain). A listing
  is one paginated ``ListObjectsV2`` and carries each object's size and time.
- ``abfss://``/``abfs://``, ``gs://`` (and any scheme PyArrow knows) use
  ``pyarrow.fs.FileSystem.from_uri``: ``AzureFileSystem`` (PyArrow 16+; credentials from
  the Azure environment, e.g. ``AZURE_STORAGE_ACCOUNT_KEY``) and ``GcsFileSystem``
  (Google's default credentials). Only S3 is tested, against a real S3 server (moto).

Object stores have no folders: a prefix without objects lists as missing, the same as a
local folder that does not exist (``FileNotFoundError``).

Example:
    >>> files = lake_files("/data/lake")
    >>> files.join("/data/lake/s/t", "_delta_log")
    '/data/lake/s/t/_delta_log'
    >>> store_path("s3a://bucket/lake/s/t")
    'bucket/lake/s/t'
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional
from urllib.parse import urlsplit

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.storage import S3_SCHEMES, S3Settings, url_scheme

if TYPE_CHECKING:  # PyArrow loads when a store or a checkpoint is read
    import pyarrow.fs
    import pyarrow.parquet

#: The folder of a table's Delta log.
LOG_FOLDER = "_delta_log"


@dataclass(frozen=True)
class FileEntry:
    """One name in a folder listing.

    Attributes:
        name: the file's (or sub-folder's) name, without its folder.
        is_dir: a sub-folder (on a store: a common prefix of deeper keys).
        size: bytes, when the listing carries it (``None`` on local disk).
        mtime_ms: modification time in epoch milliseconds, when the listing carries it
            (``None`` on local disk: a ``stat`` per entry would cost one system call each,
            so only the files read are ``stat``-ed, with :meth:`LakeFiles.mtime_ms`).
    """

    name: str
    is_dir: bool = False
    size: Optional[int] = None
    mtime_ms: Optional[int] = None


class LakeFiles(ABC):
    """The file operations a reader of the lake needs, on one kind of storage.

    Every method takes the lake's own paths (a local path, or the URL of the store). They
    raise ``FileNotFoundError`` for a missing file or folder (on a store: a prefix with no
    object) and another ``OSError`` (or ``pyarrow.ArrowException``) when the storage
    refuses (permissions, no such bucket, the endpoint unreachable).
    """

    #: Whether the paths are on this machine's disk.
    is_local: bool = False

    @abstractmethod
    def join(self, folder: str, *names: str) -> str:
        """``folder/name/...`` in this storage's path syntax."""

    @abstractmethod
    def list_folder(self, folder: str) -> list[FileEntry]:
        """The names directly inside ``folder`` (not recursive), in no particular order.

        Raises:
            FileNotFoundError: no such folder (on a store: no object under the prefix).
            OSError: it cannot be listed (on local disk: also a file, not a folder).
        """

    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """The whole content of a file."""

    @abstractmethod
    def mtime_ms(self, path: str) -> int:
        """A file's modification time, in epoch milliseconds."""

    @abstractmethod
    def parquet_file(self, path: str) -> pyarrow.parquet.ParquetFile:
        """A Parquet file opened for reading (column chunks are fetched as they are read).

        INT96 timestamps (Spark's default encoding) read at microseconds, Spark's precision,
        so that years past 2262 (``9999-12-31`` as "no end") do not overflow nanoseconds.
        """

    def has_delta_log(self, table_path: str) -> bool:
        """Whether the table at ``table_path`` has a ``_delta_log`` (no commit needed in it).

        Example:
            >>> lake_files("/no/such/lake").has_delta_log("/no/such/lake/s/t")
            False
        """
        try:
            return bool(self.list_folder(self.join(table_path, LOG_FOLDER)))
        except OSError:
            return False


class LocalFiles(LakeFiles):
    """A local folder, through ``os`` (the behaviour the lake always had on local disk)."""

    is_local = True

    def join(self, folder: str, *names: str) -> str:
        return os.path.join(folder, *names)

    def list_folder(self, folder: str) -> list[FileEntry]:
        # listdir, not scandir: the names are all a log reader needs of most entries.
        return [FileEntry(name) for name in os.listdir(folder)]

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def mtime_ms(self, path: str) -> int:
        return int(os.stat(path).st_mtime * 1000)

    def parquet_file(self, path: str) -> pyarrow.parquet.ParquetFile:
        import pyarrow.parquet as pq

        return pq.ParquetFile(path, coerce_int96_timestamp_unit="us")


class StoreFiles(LakeFiles):
    """An object store (S3, ADLS, GCS), through a ``pyarrow.fs`` filesystem.

    Args:
        filesystem: the PyArrow filesystem of the store.
        is_local: the URLs are ``file:`` ones (PyArrow's local filesystem).

    Example:
        >>> from pyarrow import fs  # doctest: +SKIP
        >>> files = StoreFiles(fs.S3FileSystem(region="us-east-1"))  # doctest: +SKIP
        >>> [e.name for e in files.list_folder("s3a://bucket/lake/s/t/_delta_log")]  # doctest: +SKIP
        ['00000000000000000000.json']
    """

    def __init__(self, filesystem: pyarrow.fs.FileSystem, is_local: bool = False):
        self.filesystem = filesystem
        self.is_local = is_local

    def join(self, folder: str, *names: str) -> str:
        return "/".join([folder.rstrip("/"), *names])

    def list_folder(self, folder: str) -> list[FileEntry]:
        from pyarrow import fs

        # allow_not_found=False: a missing prefix raises FileNotFoundError, while a missing
        # bucket stays an error of its own (with allow_not_found both list as empty).
        infos = self.filesystem.get_file_info(fs.FileSelector(store_path(folder), allow_not_found=False))
        return [
            FileEntry(
                name=info.base_name,
                is_dir=info.type == fs.FileType.Directory,
                size=info.size,
                mtime_ms=info.mtime_ns // 1_000_000 if info.mtime_ns is not None else None,
            )
            for info in infos
        ]

    def read_bytes(self, path: str) -> bytes:
        with self.filesystem.open_input_stream(store_path(path)) as stream:
            return stream.read()

    def mtime_ms(self, path: str) -> int:
        from pyarrow import fs

        (info,) = self.filesystem.get_file_info([store_path(path)])
        if info.type == fs.FileType.NotFound:
            raise FileNotFoundError(2, "No such file or object", path)
        if info.mtime_ns is None:
            raise OSError(f"the store reports no modification time for {path}")
        return info.mtime_ns // 1_000_000

    def parquet_file(self, path: str) -> pyarrow.parquet.ParquetFile:
        import pyarrow.parquet as pq

        # A random-access file: only the footer and the columns read are fetched (ranged
        # GETs), not a checkpoint of a big table whole.
        return pq.ParquetFile(self.filesystem.open_input_file(store_path(path)), coerce_int96_timestamp_unit="us")


def store_path(url: str) -> str:
    """PyArrow's path of an object-store URL: ``bucket/key`` (ADLS: ``container/key``;
    ``file:`` URLs: the absolute path).

    Example:
        >>> store_path("s3a://bucket/lake/s/t/")
        'bucket/lake/s/t'
        >>> store_path("abfss://lake@account.dfs.core.windows.net/prefix/s/t")
        'lake/prefix/s/t'
        >>> store_path("file:///data/lake/s/t")
        '/data/lake/s/t'
    """
    parts = urlsplit(url)
    bucket = parts.netloc.split("@")[0] if url_scheme(url) in ("abfss", "abfs") else parts.netloc
    key = parts.path.strip("/")
    return f"{bucket}/{key}" if key else bucket


def lake_files(path: str, s3: Optional[S3Settings] = None) -> LakeFiles:
    """The files of the lake (or table) at ``path``: local, or the store its URL names.

    Args:
        path: a local path, or a store URL (``s3a://bucket/lake``).
        s3: how to reach S3 for an ``s3a://``/``s3://`` URL; ``None``: from the standard
            AWS variables (:meth:`S3Settings.from_env`).

    Raises:
        ConfigError: a URL scheme PyArrow cannot read (or bad S3 settings), with the fix.

    Example:
        >>> lake_files("/data/lake").is_local
        True
        >>> lake_files("s3a://bucket/lake", S3Settings(endpoint="http://127.0.0.1:9000")).is_local  # doctest: +SKIP
        False
    """
    scheme = url_scheme(path)
    if scheme is None:
        return LocalFiles()
    if scheme == "file":
        from pyarrow import fs

        return StoreFiles(fs.LocalFileSystem(), is_local=True)
    if scheme in S3_SCHEMES:
        settings = s3 if s3 is not None else S3Settings.from_env()
        return StoreFiles(_s3_filesystem(settings, os.getpid()))
    return StoreFiles(_uri_filesystem(scheme, urlsplit(path).netloc, os.getpid()))


# One filesystem per settings and process: the first S3FileSystem costs ~0.6 s (the AWS
# SDK starting) and each keeps its connections open for the next listing. The process id
# is in the key because the SDK's clients do not survive a fork.
@functools.lru_cache(maxsize=8)
def _s3_filesystem(settings: S3Settings, pid: int) -> pyarrow.fs.FileSystem:
    return settings.filesystem()


@functools.lru_cache(maxsize=8)
def _uri_filesystem(scheme: str, netloc: str, pid: int) -> pyarrow.fs.FileSystem:
    from pyarrow import fs

    url = f"{scheme}://{netloc}/"
    try:
        filesystem, _ = fs.FileSystem.from_uri(url)
    except (ValueError, NotImplementedError, ImportError, OSError) as exc:  # ArrowInvalid is a ValueError
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]  # hdfs:// lists every libjvm tried
        raise ConfigError(
            f"cannot read {scheme}:// lakes without Spark: PyArrow says {reason}. Upgrade pyarrow "
            "(pip install -U pyarrow: ADLS needs 16 or later), or use an s3a:// or local lake root."
        ) from None
    return filesystem
