"""Finding a project's files and reading them safely.

The SQL files, the custom data test files and the seeds are read through here: a file that
resolves outside the project folder (a symlink) is refused, and so is anything but a regular
file (a named pipe would block the loader, and ``assetlake validate``, for ever).
"""

import os
import stat
from typing import Optional

from assetlake_dagster.errors import Diagnostic, SourceLocation, display_path


def discover_files(root: str, suffix: str) -> list[str]:
    """Every file under ``root`` whose name ends in ``suffix``, recursively, sorted; hidden
    folders and ``__pycache__`` skipped.

    Example:
        >>> discover_files("/nonexistent", ".sql")
        []
    """
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        found.extend(os.path.join(folder, f) for f in files if f.endswith(suffix))
    return sorted(found)


def outside(path: str, real_root: str) -> bool:
    """Whether ``path`` resolves (symlinks followed) outside the project folder, whose real path
    is ``real_root`` (resolved once by the caller, not once per file)."""
    try:
        real = os.path.realpath(path)
    except ValueError:  # a NUL in a data_test path: no such file, reported as missing
        return False
    return os.path.commonpath([real, real_root]) != real_root


def escaping_link(path: str) -> Diagnostic:
    return Diagnostic(
        SourceLocation(display_path(path), 1, 1),
        f"the file is a symlink to {os.path.realpath(path)}, outside the project folder.",
        "Copy the file into the project, or point the link at a file inside the project.",
    )


def read_bytes(path: str, read_as: str = "SQL") -> tuple[Optional[bytes], Optional[Diagnostic]]:
    """The bytes of the regular file ``path``, or the problem (``read_as``: what the file
    was to be read as, for the message)."""
    shown = display_path(path)
    try:
        # Non-blocking open, then a check of what was opened: a named pipe would otherwise
        # block the loader for ever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        return None, Diagnostic(SourceLocation(shown, 1), f"cannot read the file: {err.strerror}.")
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            suffix = os.path.splitext(path)[1] or "its suffix"
            return None, Diagnostic(
                SourceLocation(shown, 1),
                f"the file is not a regular file ({_file_kind(mode)}), so it cannot be read as {read_as}.",
                f"Replace it with a regular file, or rename it so that its name does not end in {suffix}.",
            )
        try:
            return handle.read(), None
        except OSError as err:
            return None, Diagnostic(SourceLocation(shown, 1), f"cannot read the file: {err.strerror}.")


def decode_utf8(path: str, raw: bytes) -> tuple[str, Optional[Diagnostic]]:
    """``raw`` as UTF-8 text, or the problem located at the first bad byte."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        col = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        return "", Diagnostic(
            SourceLocation(display_path(path), line, col),
            f"the file is not valid UTF-8 (byte 0x{raw[err.start]:02x}).",
            "Save it as UTF-8.",
        )


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
    return next((name for test, name in kinds if test(mode)), "a special file")
