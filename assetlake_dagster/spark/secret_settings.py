"""Secret Spark settings: which ``spark_conf`` names hold secrets, and how they are kept secret.

A process's command line is readable by every local user (``ps``, ``/proc/<pid>/cmdline``),
so a Spark setting that holds a credential never goes there as ``--conf key=value``: the
warm engine's supervisor gets its secret settings in a file only its owner can read (mode
0600, removed once read), and ``spark-submit`` gets them in a private ``--properties-file``
(removed once the server listens). The other settings stay on the command line, where they
help whoever reads ``ps``.

A setting is secret when :func:`is_secret_setting` says so: its name holds ``secret``,
``token``, ``password``, ``credential`` or ``key`` (in any case), or it configures a store's
authentication (``fs.azure.*``, ``google.cloud.auth.*``, ``fs.gs.auth.*``). Erring towards
secret costs nothing: such a setting still reaches Spark, only by another way. Texts that may
hold a secret value (error messages, log lines) go through :func:`redact`, and a Spark Connect
URL through :func:`redact_url`: the value becomes :data:`REDACTED`.

What this does not cover: a secret inside the value of a setting whose name says nothing
(a password inside a JDBC URL, a ``-D`` option in ``spark.driver.extraJavaOptions``, which
the JVM's own command line shows). Give credentials to the connectors' own providers (the
AWS chain, a keyfile) where they have one.
"""

import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from typing import Union

#: What a secret value is replaced with in texts.
REDACTED = "***"
#: Words that make a setting secret wherever they appear in its name (any case).
SECRET_WORDS = ("secret", "token", "password", "credential", "key")
#: Settings under these prefixes (after an optional ``spark.hadoop.``) are all secret: they
#: configure a store's authentication, where ids, tenants and key files go together.
SECRET_PREFIXES = ("fs.azure.", "google.cloud.auth.", "fs.gs.auth.")
_HADOOP_PREFIX = "spark.hadoop."
_URL_SECRET = re.compile(r"(;\s*token\s*=)[^;]*", re.IGNORECASE)


def is_secret_setting(name: str) -> bool:
    """Whether a Spark setting's value must be kept secret.

    Example:
        >>> is_secret_setting("spark.hadoop.fs.s3a.secret.key"), is_secret_setting("spark.sql.catalog.uc.TOKEN")
        (True, True)
        >>> is_secret_setting("spark.hadoop.fs.azure.account.auth.type")
        True
        >>> is_secret_setting("spark.hadoop.fs.s3a.endpoint"), is_secret_setting("spark.sql.shuffle.partitions")
        (False, False)
    """
    lowered = name.lower()
    if any(word in lowered for word in SECRET_WORDS):
        return True
    bare = lowered[len(_HADOOP_PREFIX):] if lowered.startswith(_HADOOP_PREFIX) else lowered
    return bare.startswith(SECRET_PREFIXES)


def split_secret_settings(conf: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``conf`` as ``(public, secret)`` settings, each in ``conf``'s order.

    Example:
        >>> split_secret_settings({"spark.sql.shuffle.partitions": "4", "spark.hadoop.fs.s3a.access.key": "AK"})
        ({'spark.sql.shuffle.partitions': '4'}, {'spark.hadoop.fs.s3a.access.key': 'AK'})
    """
    public: dict[str, str] = {}
    secret: dict[str, str] = {}
    for key, value in conf.items():
        (secret if is_secret_setting(key) else public)[key] = value
    return public, secret


def redacted_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` to show: each secret setting's value replaced by :data:`REDACTED`.

    Example:
        >>> redacted_conf({"spark.sql.catalog.uc.token": "t0k3n", "spark.sql.catalog.uc.uri": "http://uc"})
        {'spark.sql.catalog.uc.token': '***', 'spark.sql.catalog.uc.uri': 'http://uc'}
    """
    return {key: REDACTED if is_secret_setting(key) else value for key, value in conf.items()}


def redact(text: str, secrets: Union[Mapping[str, str], Iterable[str]]) -> str:
    """``text`` with every secret value in it replaced by :data:`REDACTED`.

    Args:
        text: a message or a log line.
        secrets: settings (only the values of the secret ones are redacted) or the secret
            values themselves.

    Example:
        >>> redact("403 for key AKIA123", {"spark.hadoop.fs.s3a.access.key": "AKIA123", "spark.x.n": "403"})
        '403 for key ***'
    """
    if isinstance(secrets, Mapping):
        values = [v for k, v in secrets.items() if is_secret_setting(k)]
    else:
        values = list(secrets)
    # Longest first: a secret that contains another is redacted whole.
    for value in sorted({v for v in values if v}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def redact_url(url: str) -> str:
    """A Spark Connect URL without its token, for messages.

    Example:
        >>> redact_url("sc://localhost:15002/;token=abc;user_id=me")
        'sc://localhost:15002/;token=***;user_id=me'
    """
    return _URL_SECRET.sub(lambda m: m.group(1) + REDACTED, url)


def properties_text(conf: Mapping[str, str]) -> str:
    """``conf`` in Java's ``.properties`` syntax, as Spark's ``--properties-file`` reads it
    (``java.util.Properties`` over UTF-8): separators, comment marks, backslashes and line
    breaks escaped. Spark trims each value it reads, so a value's outer spaces are kept by
    escaping them.

    Example:
        >>> properties_text({"spark.a.token": "x=y\\\\z"})
        'spark.a.token=x\\\\=y\\\\\\\\z\\n'
    """
    return "".join(f"{_escape(key, key=True)}={_escape(value, key=False)}\n" for key, value in conf.items())


def _escape(text: str, *, key: bool) -> str:
    out = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif char == "\f":
            out.append("\\f")
        elif char in "=:#!":
            out.append("\\" + char)
        elif char == " " and (key or i == 0 or i == len(text) - 1):
            out.append("\\ ")
        else:
            out.append(char)
    return "".join(out)


def write_private_file(folder: str, prefix: str, suffix: str, text: str) -> str:
    """Write ``text`` to a new file in ``folder`` that only its owner can read (mode 0600,
    created exclusively: nobody can have opened it before), and return its path.

    Example:
        >>> path = write_private_file(tempfile.gettempdir(), "doc", ".properties", "spark.a.token=x\\n")
        >>> oct(os.stat(path).st_mode & 0o777)
        '0o600'
        >>> os.remove(path)
    """
    os.makedirs(folder, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=folder)  # O_EXCL, mode 0600
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path
