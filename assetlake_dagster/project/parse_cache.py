"""Each SQL file's parse, cached by content, so that a warm load skips sqlglot.

A code location loads in a fresh process whenever Dagster (re)loads it; reading and
analyzing 1000 files (sqlglot tokenizing and parsing, above all) was a third of that
load (``scripts/bench_load.py``). An entry is keyed by the file's path as messages show
it, the sha256 of its text and a fingerprint of the parser (this package's source files,
sqlglot's version, Python's), so an edited file, another working folder or another
parser never gets a stale result: changing one file reparses that file only.

The cache of a project folder is one pickle file under ``$ASSETLAKE_CACHE_DIR`` (default
``$XDG_CACHE_HOME/assetlake/parse``, ``~/.cache/assetlake/parse`` without it), named after
the folder. It is read once per load and
rewritten (atomically, by rename) only when an entry changed; entries of files no longer
in the folder are dropped. A cache that cannot be read or written is ignored: the load
parses. ``ASSETLAKE_PARSE_CACHE=0`` turns it off. The folder is the user's own, like
Python's ``__pycache__``: it is trusted the same way.

Example:
    >>> cache = ParseCache.open("pipelines/")  # doctest: +SKIP
    >>> spec, problems, src = cache.build(path, text, build_spec)  # doctest: +SKIP
    >>> cache.save()  # doctest: +SKIP
"""

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from typing import Any, Optional, TypeVar

from assetlake_dagster.errors import display_path

CACHE_DIR_ENV = "ASSETLAKE_CACHE_DIR"
ENABLED_ENV = "ASSETLAKE_PARSE_CACHE"
#: Cache files kept (one per project folder); the least recently written go first.
MAX_PROJECTS = 200
#: The package's root folder (this module lives in its ``project/``): all its sources count.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_fingerprint: Optional[str] = None

T = TypeVar("T")


def default_cache_dir() -> str:
    """``$ASSETLAKE_CACHE_DIR``, else ``$XDG_CACHE_HOME/assetlake/parse`` (``~/.cache/…``)."""
    if os.environ.get(CACHE_DIR_ENV):
        return os.environ[CACHE_DIR_ENV]
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache_home, "assetlake", "parse")


def parser_fingerprint() -> str:
    """What a cached parse depends on besides the file: this package's sources (by name,
    size and modification time: a change to a spec class is a change to its source, so no
    format number is kept by hand), sqlglot's version, Python's version."""
    global _fingerprint
    if _fingerprint is None:
        digest = hashlib.sha256(f"{metadata.version('sqlglot')}|{sys.version_info[:2]}".encode())
        for folder, dirs, files in sorted(os.walk(_PACKAGE_DIR)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                stat = os.stat(os.path.join(folder, name))
                digest.update(f"{os.path.relpath(os.path.join(folder, name), _PACKAGE_DIR)}|{stat.st_size}|{stat.st_mtime_ns}".encode())
        _fingerprint = digest.hexdigest()
    return _fingerprint


class ParseCache:
    """The cached parses of one project folder, for one load.

    Build it with :meth:`open`; :meth:`build` answers from the cache or parses, and
    :meth:`save` writes the entries this load used back, if any changed.
    """

    def __init__(self, file: Optional[str], entries: dict[str, Any]):
        self.file = file  # None: caching is off
        self._entries = entries
        self._used: dict[str, Any] = {}
        self.hits = 0
        self.misses = 0

    @classmethod
    def open(cls, project_root: str) -> "ParseCache":
        """The cache of ``project_root`` (empty when missing, unreadable or turned off)."""
        if os.environ.get(ENABLED_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
            return cls(None, {})
        name = hashlib.sha256(os.path.abspath(project_root).encode()).hexdigest()[:32]
        file = os.path.join(default_cache_dir(), f"{name}.pickle")
        try:
            with open(file, "rb") as f:
                stored = pickle.load(f)
            entries = stored["entries"] if stored.get("fingerprint") == parser_fingerprint() else {}
        # A missing, truncated or foreign file (or one written by another version): parse.
        except Exception:  # noqa: BLE001 - any unreadable cache is an empty one
            entries = {}
        return cls(file, entries)

    def build(self, path: str, text: str, parse: Callable[[str, str], T]) -> T:
        """``parse(path, text)``, or its cached result for this path as shown and this text."""
        key = hashlib.sha256(f"{display_path(path)}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
        if key in self._entries:
            self.hits += 1
            result = self._entries[key]
        else:
            self.misses += 1
            result = parse(path, text)
        self._used[key] = result
        return result

    def save(self) -> None:
        """Write this load's entries back when any was parsed or any file is gone."""
        if self.file is None or (not self.misses and self._used.keys() == self._entries.keys()):
            return
        folder = os.path.dirname(self.file)
        tmp = None
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                pickle.dump({"fingerprint": parser_fingerprint(), "entries": self._used}, f, pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.file)  # readers see the old file or the new one, never half
            _prune(folder)
        except Exception:  # noqa: BLE001 - a read-only or full disk: the next load parses again
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)


def _prune(folder: str) -> None:
    """Keep the :data:`MAX_PROJECTS` most recently written cache files."""
    files = [e for e in os.scandir(folder) if e.name.endswith(".pickle")]
    if len(files) > MAX_PROJECTS:
        files.sort(key=lambda e: e.stat().st_mtime_ns)
        for entry in files[: len(files) - MAX_PROJECTS]:
            os.unlink(entry.path)
