"""Which process wrote a commit, and whether that process still lives.

Every managed commit's stamp names its writer, ``<host>:<boot id>:<pid>:<start time>``: the
machine, the boot of it, the process and the process's start time (clock ticks after boot,
from ``/proc``). A later run on the same machine and boot can then tell for sure that the
writer of a commit is gone: its pid no longer runs, or runs a process that started at another
time (the pid was reused). A run killed with SIGKILL stays ``STARTED`` in Dagster when no
daemon watches it (``dagster asset materialize``); its gone writer is how the next run of
its asset finds its commit and marks it failed
(:mod:`assetlake_dagster.writes.orphans`). On another machine nothing is known (``False``):
Dagster's run monitoring, where a daemon runs, is the judge there.

Example:
    >>> writer = this_writer()
    >>> writer_is_gone(writer)
    False
    >>> writer_is_gone(None), writer_is_gone("another-host:b00t:1:1")
    (False, False)
"""

from __future__ import annotations

import functools
import os
import socket
from typing import Optional

_BOOT_ID = "/proc/sys/kernel/random/boot_id"


@functools.lru_cache(maxsize=1)
def _boot_id() -> str:
    try:
        with open(_BOOT_ID) as handle:
            return handle.read().strip().replace("-", "")[:12]
    except OSError:  # not Linux: a pid is then judged without its boot
        return ""


def _start_time(pid: int) -> Optional[str]:
    """The process's start time in clock ticks after boot (``/proc/<pid>/stat`` field 22);
    ``None`` when no such process runs (or ``/proc`` is not there)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def this_writer() -> str:
    """This process as a commit's writer: ``host:boot:pid:start``."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{_boot_id()}:{pid}:{_start_time(pid) or ''}"


def writer_is_gone(writer: Optional[str]) -> bool:
    """Whether the process ``writer`` names is known to be gone; ``False`` when it may live
    (it runs, it is on another machine, or the stamp names no writer)."""
    if not writer:
        return False
    parts = writer.rsplit(":", 3)
    if len(parts) != 4 or parts[0] != socket.gethostname() or not parts[2].isdigit():
        return False
    _, boot, pid, started = parts
    if boot and _boot_id() and boot != _boot_id():
        return True  # the machine restarted since
    now = _start_time(int(pid))
    if now is None:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except OSError:  # it runs, as another user
            return False
        return False  # it runs (no /proc to tell a reused pid)
    return bool(started) and now != started
