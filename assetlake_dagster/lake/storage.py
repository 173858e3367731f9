"""Object-store settings: where a lake on S3 (or ADLS, GCS) is and how to reach it.

One place turns the standard AWS variables and the resource's typed fields into what
each reader of the lake needs, so Spark (``spark.hadoop.fs.s3a.*``), delta-rs
(``storage_options``) and PyArrow (``pyarrow.fs``) all reach the same bucket the same way:

==========================  ======================================================
``AWS_ENDPOINT_URL_S3``,    the S3 endpoint (``http://127.0.0.1:9000``); unset means
``AWS_ENDPOINT_URL``        AWS itself. An IP address or ``localhost`` implies
                            path-style addressing and allows plain HTTP, as the AWS
                            SDKs and delta-rs do.
``AWS_REGION``,             the bucket's region (``us-east-1`` when an endpoint is
``AWS_DEFAULT_REGION``      set and no region is).
``ASSETLAKE_S3_PATH_STYLE`` ``true``/``false``: force path-style addressing either way.
==========================  ======================================================

Credentials are never settings here: every reader takes them from the standard AWS chain
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and
``~/.aws``, web identity, instance roles), so they never appear in a Spark command line,
the engine's state file or a log.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional
from urllib.parse import urlsplit

from assetlake_dagster.errors import ConfigError

if TYPE_CHECKING:  # PyArrow loads when a reader needs it
    import pyarrow.fs

PATH_STYLE_ENV = "ASSETLAKE_S3_PATH_STYLE"
#: Object-store URL schemes by store. ``s3://`` and ``s3n://`` are served by Hadoop's S3A like
#: ``s3a://``; a lake root is always written ``s3a://`` (:mod:`~assetlake_dagster.lake.identity`).
S3_SCHEMES = ("s3a", "s3", "s3n")
AZURE_SCHEMES = ("abfss", "abfs")
GCS_SCHEMES = ("gs",)
OBJECT_STORE_SCHEMES = S3_SCHEMES + AZURE_SCHEMES + GCS_SCHEMES
#: S3's bucket naming rules (lower case, digits, dots, hyphens; 3-63 characters).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
#: The SDK's full default chain (environment, profile, web identity, container, instance).
DEFAULT_CREDENTIALS_PROVIDER = "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
_FALLBACK_REGION = "us-east-1"


def url_scheme(root: str) -> Optional[str]:
    """The scheme of a lake root URL (``s3a``), or ``None`` for a local folder.

    Example:
        >>> url_scheme("s3a://bucket/lake"), url_scheme("/data/lake")
        ('s3a', None)
    """
    match = re.match(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):/", root)
    return match.group(1).lower() if match else None


def is_s3(root: str) -> bool:
    """Whether the lake root is an S3 URL (``s3a://``, or its aliases ``s3://``, ``s3n://``)."""
    return url_scheme(root) in S3_SCHEMES


def is_s3_bucket_name(name: str) -> bool:
    """Whether ``name`` follows S3's bucket naming rules (lower case, digits, dots, hyphens;
    3-63 characters). A lake root's URL is checked by
    :func:`~assetlake_dagster.lake.identity.canonical_lake_root`.

    Example:
        >>> is_s3_bucket_name("my-bucket"), is_s3_bucket_name("My_Bucket")
        (True, False)
    """
    return bool(_BUCKET.match(name))


@dataclass(frozen=True)
class S3Settings:
    """How to reach S3 (or an S3-compatible server): endpoint, region, addressing.

    Attributes:
        endpoint: the endpoint URL, or ``None`` for AWS.
        region: the region, or ``None`` to let each SDK find it.
        path_style: ``True``/``False`` to force the addressing style; ``None`` to imply it
            from the endpoint (path-style for an IP address or ``localhost``).

    Example:
        >>> s = S3Settings(endpoint="http://127.0.0.1:9000")
        >>> s.uses_path_style, s.allows_http
        (True, True)
        >>> s.spark_conf()["spark.hadoop.fs.s3a.path.style.access"]
        'true'
    """

    endpoint: Optional[str] = None
    region: Optional[str] = None
    path_style: Optional[bool] = None

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None, **fields: Any) -> "S3Settings":
        """Settings from the standard AWS variables; non-``None`` ``fields`` win.

        Example:
            >>> S3Settings.from_env({"AWS_ENDPOINT_URL": "http://localhost:9000", "AWS_REGION": "eu-west-1"})
            S3Settings(endpoint='http://localhost:9000', region='eu-west-1', path_style=None)
        """
        env = os.environ if env is None else env
        raw_style = (env.get(PATH_STYLE_ENV) or "").strip().lower()
        if raw_style and raw_style not in ("true", "false"):
            raise ConfigError(f"{PATH_STYLE_ENV}={raw_style!r} is not true or false. Set {PATH_STYLE_ENV}=true or unset it.")
        settings = cls(
            endpoint=env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            path_style={"true": True, "false": False}.get(raw_style),
        )
        chosen = {k: v for k, v in fields.items() if v is not None}
        settings = cls(**{**settings.__dict__, **chosen})
        settings.check()
        return settings

    def check(self) -> None:
        """Refuse an endpoint that is not an ``http(s)://host[:port]`` URL."""
        if self.endpoint is None:
            return
        parts = urlsplit(self.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"the S3 endpoint {self.endpoint!r} is not an http(s) URL. Set AWS_ENDPOINT_URL "
                "(or s3_endpoint) to e.g. http://127.0.0.1:9000 or https://s3.eu-west-1.amazonaws.com."
            )

    @property
    def _host(self) -> Optional[str]:
        return urlsplit(self.endpoint).hostname if self.endpoint else None

    @property
    def is_local_endpoint(self) -> bool:
        """An endpoint on an IP address or ``localhost`` (a self-hosted server)."""
        host = self._host
        if host is None:
            return False
        if host == "localhost":
            return True
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return False
        return True

    @property
    def uses_path_style(self) -> bool:
        return self.path_style if self.path_style is not None else self.is_local_endpoint

    @property
    def allows_http(self) -> bool:
        return bool(self.endpoint) and urlsplit(self.endpoint).scheme == "http"

    @property
    def effective_region(self) -> Optional[str]:
        # A custom endpoint has no region to discover; the SDKs still need one to sign.
        return self.region or (_FALLBACK_REGION if self.endpoint else None)

    def spark_conf(self) -> dict[str, str]:
        """Hadoop S3A settings for Spark (no credentials: S3A takes them from the chain)."""
        conf = {
            # s3:// served by S3A as well (Delta's S3 log store covers both schemes).
            "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.aws.credentials.provider": DEFAULT_CREDENTIALS_PROVIDER,
            "spark.hadoop.fs.s3a.path.style.access": "true" if self.uses_path_style else "false",
        }
        if self.endpoint:
            conf["spark.hadoop.fs.s3a.endpoint"] = self.endpoint
            conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = "false" if self.allows_http else "true"
        if self.effective_region:
            conf["spark.hadoop.fs.s3a.endpoint.region"] = self.effective_region
        return conf

    def storage_options(self, env: Optional[Mapping[str, str]] = None) -> dict[str, str]:
        """delta-rs (``deltalake``) ``storage_options``: the settings plus the environment's
        credentials, in memory only.

        Example:
            >>> S3Settings(endpoint="http://127.0.0.1:9000").storage_options({})["AWS_ALLOW_HTTP"]
            'true'
        """
        env = os.environ if env is None else env
        options = {
            key: env[key]
            for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")
            if env.get(key)
        }
        if self.endpoint:
            options["AWS_ENDPOINT_URL"] = self.endpoint
        if self.effective_region:
            options["AWS_REGION"] = self.effective_region
        if self.allows_http:
            options["AWS_ALLOW_HTTP"] = "true"
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if self.uses_path_style else "true"
        return options

    def filesystem(self) -> "pyarrow.fs.S3FileSystem":
        """A PyArrow S3 filesystem over the same endpoint (credentials from the chain)."""
        from pyarrow import fs

        kwargs: dict[str, Any] = {"force_virtual_addressing": not self.uses_path_style}
        if self.endpoint:
            parts = urlsplit(self.endpoint)
            kwargs["endpoint_override"] = parts.netloc
            kwargs["scheme"] = parts.scheme
        if self.effective_region:
            kwargs["region"] = self.effective_region
        return fs.S3FileSystem(**kwargs)


#: Delta's multi-driver-safe log store for S3 (commits arbitrated by a DynamoDB table).
MULTI_DRIVER_LOG_STORE = "io.delta.storage.S3DynamoDBLogStore"


def has_multi_driver_log_store(spark_conf: Mapping[str, str]) -> bool:
    """Whether ``spark_conf`` sets Delta's DynamoDB log store for S3 writes.

    Example:
        >>> has_multi_driver_log_store({"spark.delta.logStore.s3a.impl": MULTI_DRIVER_LOG_STORE})
        True
        >>> has_multi_driver_log_store({})
        False
    """
    # A lake's tables are s3a:// paths (its canonical root): ``…logStore.s3.impl`` covers none.
    keys = ("spark.delta.logStore.s3a.impl", "spark.delta.logStore.class")
    return any(spark_conf.get(key) == MULTI_DRIVER_LOG_STORE for key in keys)


def single_driver_rule(root: str, setup: str) -> str:
    """The error for a Spark driver per run writing an S3 lake without a multi-driver log store.

    Delta's default S3 log store is mutually exclusive only inside one JVM: two drivers
    committing the same version to one table both "succeed", and one commit is lost.
    """
    return (
        f"the lake root {root} is on S3, and {setup} gives each run its own Spark driver; Delta's default S3 "
        "log store is safe only when every writer of a table goes through one driver, so two runs at once "
        "could silently lose a commit. Either unset it (the default warm engine, or one Spark Connect server "
        "in ASSETLAKE_SPARK_REMOTE, is that one driver), or configure Delta's multi-driver log store: "
        f"spark_conf spark.delta.logStore.s3a.impl={MULTI_DRIVER_LOG_STORE} with "
        "spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName and .ddb.region, and the "
        "io.delta:delta-storage-s3-dynamodb jar (untested by assetlake, and history tables then need a lock "
        "shared by the drivers: see 'Several drivers on one S3 lake' in docs/object-storage.md)."
    )
