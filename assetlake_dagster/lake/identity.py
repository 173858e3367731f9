"""A lake's identity: its root in one canonical spelling.

One place of storage can be written many ways: ``s3a://b/lake``, ``s3://b/lake``,
``S3A://B//lake/``, ``s3a://b/old/../lake``. Everything kept per lake on this machine is
keyed by the canonical form, so every spelling is the same lake: the warm engine's state
folder (one Spark driver per lake, the single writer Delta's S3 log store needs), the
embedded Hive metastore, and every table path (so the tables' locks and commit stamps).
:class:`~assetlake_dagster.lake.root.Lake` holds its root in this form.

===========================  ==============================================================
local folder                 absolute, ``~`` expanded, symlinks resolved (``realpath``)
``s3a://bucket/prefix``      ``s3://`` and ``s3n://`` are aliases (Hadoop's S3A serves all)
``gs://``, ``abfss://``,     scheme and bucket (container, account, host) in lower case
``abfs://``, ``hdfs://``
``file:///path``             ``file:/path`` and ``file://localhost/path`` are aliases
``dbfs:/path``               ``dbfs:///path`` is an alias
===========================  ==============================================================

In every URL: no empty, ``.`` or trailing segment, and ``..`` removes the segment before it.
Refused: credentials before the host (``s3a://KEY:SECRET@bucket``, ``user@``), a ``..``
above the bucket, percent-encoded dot segments, a query or fragment, and schemes assetlake
does not know. Object keys are case-sensitive: the path keeps its case.
"""

from __future__ import annotations

import hashlib
import os
import re
from urllib.parse import unquote

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.storage import AZURE_SCHEMES, GCS_SCHEMES, S3_SCHEMES, is_s3_bucket_name, url_scheme

#: The one scheme of an S3 lake (Spark's S3A); the others are its aliases.
CANONICAL_S3_SCHEME = "s3a"
#: Schemes whose URL names a host (bucket, container@account, namenode) after ``//``.
_HOST_SCHEMES = (CANONICAL_S3_SCHEME, *GCS_SCHEMES, *AZURE_SCHEMES, "hdfs")
#: Schemes whose URL is a path on one implied filesystem.
_PATH_SCHEMES = ("file", "dbfs")
#: Schemes where ``user@``/``user:password@`` is the only meaning of an ``@`` in the host.
_NO_USER_SCHEMES = (CANONICAL_S3_SCHEME, *GCS_SCHEMES, "hdfs")
_EXAMPLES = {
    CANONICAL_S3_SCHEME: "s3a://my-bucket/lake",
    "gs": "gs://my-bucket/lake",
    "abfss": "abfss://container@account.dfs.core.windows.net/lake",
    "abfs": "abfs://container@account.dfs.core.windows.net/lake",
    "hdfs": "hdfs://namenode:8020/lake",
    "file": "file:///data/lake",
    "dbfs": "dbfs:/lake",
}
_CREDENTIALS_FIX = {
    CANONICAL_S3_SCHEME: "give them to the AWS SDK instead: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
    "(AWS_SESSION_TOKEN), AWS_PROFILE or ~/.aws, or an instance role; the S3 settings (AWS_ENDPOINT_URL, "
    "AWS_REGION, s3_endpoint, s3_region) take the endpoint and region, never a key",
}
_DEFAULT_CREDENTIALS_FIX = "give them to the store's connector instead (its settings in the environment or spark_conf)"
#: The digest length of :func:`lake_key` (hex characters).
_KEY_LENGTH = 16


def canonical_lake_root(root: str) -> str:
    """The canonical form of a lake root: every spelling of one place gives one string.

    A local folder becomes its real absolute path. A URL gets one scheme per store (``s3://``
    and ``s3n://`` become ``s3a://``), its scheme and host in lower case, no empty, ``.`` or
    trailing segment, and each ``..`` applied. The result is a fixed point.

    Args:
        root: the lake root as configured (``lake_root``, ``ASSETLAKE_LAKE_ROOT``).

    Returns:
        The canonical root.

    Raises:
        ConfigError: credentials in the URL (never repeated in the message), a ``..``
            above the bucket, a bad bucket name, a query or fragment, an unknown scheme, or
            an empty root; each says how to write it.

    Example:
        >>> canonical_lake_root("S3://My-Bucket//lake/./prod/")
        's3a://my-bucket/lake/prod'
        >>> canonical_lake_root("s3n://my-bucket/old/../lake") == canonical_lake_root("s3a://my-bucket/lake")
        True
        >>> canonical_lake_root("/data//lake/")
        '/data/lake'
        >>> canonical_lake_root("s3a://AKIAEXAMPLE:wJalrSECRET@my-bucket/lake")
        Traceback (most recent call last):
        ...
        assetlake_dagster.errors.ConfigError: the lake root's s3a:// URL has credentials before its bucket ('user@' or 'KEY:SECRET@'). Remove them from the URL and give them to the AWS SDK instead: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN), AWS_PROFILE or ~/.aws, or an instance role; the S3 settings (AWS_ENDPOINT_URL, AWS_REGION, s3_endpoint, s3_region) take the endpoint and region, never a key.
        >>> canonical_lake_root("s3a://my-bucket/../other")
        Traceback (most recent call last):
        ...
        assetlake_dagster.errors.ConfigError: the lake root 's3a://my-bucket/../other' climbs above the bucket with '..'. Write the prefix inside the bucket, e.g. s3a://my-bucket/lake.
    """
    if not root or not root.strip():
        raise ConfigError("the lake root is empty. Set ASSETLAKE_LAKE_ROOT or lake_root.")
    written = url_scheme(root)
    if written is None:
        return os.path.realpath(os.path.expanduser(root))
    scheme = CANONICAL_S3_SCHEME if written in S3_SCHEMES else written
    rest = root[len(written) + 1:]  # after "scheme:"
    if scheme in _HOST_SCHEMES:
        host, path = _split_host(root, written, scheme, rest)
        top = "the container" if scheme in AZURE_SCHEMES else "the namenode's root" if scheme == "hdfs" else "the bucket"
        return f"{scheme}://{host}{_join(_segments(root, scheme, path, top))}"
    if scheme in _PATH_SCHEMES:
        path = _path_of(root, scheme, rest)
        joined = _join(_segments(root, scheme, path, "the filesystem's root"))
        return f"file://{joined or '/'}" if scheme == "file" else f"dbfs:{joined or '/'}"
    known = ", ".join(f"{s}://" if s in _HOST_SCHEMES else f"{s}:/" for s in (*_HOST_SCHEMES, *_PATH_SCHEMES))
    raise ConfigError(
        f"the lake root {_shown(root)} has the scheme {written!r}, which assetlake does not know. "
        f"Use a local folder or a URL of {known} (s3:// and s3n:// are s3a://)."
    )


def lake_key(root: str) -> str:
    """A short digest of the canonical root: the name of what this machine keeps per lake
    outside it (``~/.cache/assetlake/engines/<key>``, ``…/metastores/<key>``).

    Example:
        >>> lake_key("s3://My-Bucket/lake/") == lake_key("s3a://my-bucket/lake")
        True
        >>> len(lake_key("s3a://my-bucket/lake"))
        16
    """
    return hashlib.sha256(canonical_lake_root(root).encode("utf-8")).hexdigest()[:_KEY_LENGTH]


def _split_host(root: str, written: str, scheme: str, rest: str) -> tuple[str, str]:
    """``(host in lower case, path)`` of a URL with a host, credentials refused."""
    if not rest.startswith("//"):
        raise _no_host(root, scheme)
    after = rest[2:]
    host = re.split(r"[/?#]", after, maxsplit=1)[0]
    # A secret may hold '/', '?' or '#' (cutting the host short): an '@' after a ':' in the
    # host still marks credentials on a store whose host has no port.
    if _has_credentials(scheme, host, after):
        fix = _CREDENTIALS_FIX.get(scheme, _DEFAULT_CREDENTIALS_FIX)
        place = "its bucket" if scheme in (CANONICAL_S3_SCHEME, *GCS_SCHEMES) else "its host"
        raise ConfigError(
            f"the lake root's {written}:// URL has credentials before {place} ('user@' or 'KEY:SECRET@'). "
            f"Remove them from the URL and {fix}."
        )
    if not host and scheme != "hdfs":  # hdfs:///path: the default namenode
        raise _no_host(root, scheme)
    if scheme == CANONICAL_S3_SCHEME and not is_s3_bucket_name(host.lower()):
        raise ConfigError(
            f"the lake root {_shown(root)} names {host!r}, which is not an S3 bucket name (3-63 characters: "
            f"letters, digits, dots, hyphens). Write it as {_EXAMPLES[scheme]}."
        )
    return host.lower(), after[len(host):]


def _has_credentials(scheme: str, host: str, after: str) -> bool:
    if scheme in AZURE_SCHEMES:  # container@account is the host; a password is not
        return ":" in host.split("@", 1)[0] or host.count("@") > 1
    if "@" in host:
        return scheme in _NO_USER_SCHEMES
    return scheme != "hdfs" and ":" in host and "@" in after


def _path_of(root: str, scheme: str, rest: str) -> str:
    """The path of a ``file:``/``dbfs:`` URL (``file://localhost/x`` is ``file:///x``)."""
    if rest.startswith("//"):
        authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
        if authority not in ("", "localhost") or scheme == "dbfs" and authority:
            raise ConfigError(
                f"the lake root {_shown(root)} names the host {authority!r}; a {scheme}: URL is a path on "
                f"{'this machine' if scheme == 'file' else 'DBFS'}. Write it as {_EXAMPLES[scheme]}."
            )
        return rest[2 + len(authority):]
    return rest


def _segments(root: str, scheme: str, path: str, top: str) -> list[str]:
    """The path's segments with empty and ``.`` ones dropped and ``..`` applied."""
    if "?" in path or "#" in path:
        raise ConfigError(
            f"the lake root {_shown(root)} has a query or fragment ('?', '#'). Write the prefix plainly, "
            f"e.g. {_EXAMPLES[scheme]}."
        )
    segments: list[str] = []
    for segment in path.split("/"):
        if segment != unquote(segment) and unquote(segment) in (".", ".."):
            raise ConfigError(
                f"the lake root {_shown(root)} has an encoded '.' or '..' segment ({segment!r}). "
                f"Write the prefix plainly, e.g. {_EXAMPLES[scheme]}."
            )
        if segment in ("", "."):
            continue
        if segment == "..":
            if not segments:
                raise ConfigError(
                    f"the lake root {_shown(root)} climbs above {top} with '..'. Write the prefix inside "
                    f"{top}, e.g. {_EXAMPLES[scheme]}."
                )
            segments.pop()
            continue
        segments.append(segment)
    return segments


def _join(segments: list[str]) -> str:
    return "".join(f"/{segment}" for segment in segments)


def _no_host(root: str, scheme: str) -> ConfigError:
    what = "bucket or container" if scheme != "hdfs" else "host"
    return ConfigError(f"the lake root {_shown(root)} names no {what}. Write it as {_EXAMPLES[scheme]}.")


def _shown(root: str) -> str:
    """The root for a message. Called only once credentials are ruled out; whatever stands
    before an '@' in the host of an S3, GCS or HDFS URL is masked all the same."""
    match = re.match(r"^([a-zA-Z][a-zA-Z0-9+.\-]*)(://)([^/?#]*)(.*)$", root, re.DOTALL)
    if match is None:
        return repr(root)
    scheme, sep, host, tail = match.groups()
    if "@" in host and scheme.lower() not in AZURE_SCHEMES:
        host = "***@" + host.rsplit("@", 1)[1]
    return repr(scheme + sep + host + tail)
