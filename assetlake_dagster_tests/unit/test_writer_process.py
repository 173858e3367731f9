"""Layer 1: a commit's writer process, and when it is known to be gone (writes/writer.py)."""

import subprocess

from assetlake_dagster.writes import writer
from assetlake_dagster.writes.writer import this_writer, writer_is_gone


def _host_and_boot() -> str:
    return this_writer().rsplit(":", 2)[0]


def test_a_living_writer_is_not_gone():
    assert not writer_is_gone(this_writer())


def test_an_exited_process_is_gone():
    child = subprocess.Popen(["sleep", "30"])
    stamp = f"{_host_and_boot()}:{child.pid}:{writer._start_time(child.pid)}"
    assert not writer_is_gone(stamp)
    child.kill()
    child.wait()
    assert writer_is_gone(stamp)


def test_a_reused_pid_is_another_process():
    host_and_boot, pid, started = this_writer().rsplit(":", 2)
    assert writer_is_gone(f"{host_and_boot}:{pid}:{int(started) - 1}")


def test_what_cannot_be_judged_here_is_not_gone():
    pid, started = this_writer().rsplit(":", 2)[1:]
    assert not writer_is_gone(None) and not writer_is_gone("") and not writer_is_gone("garbage")
    assert not writer_is_gone(f"another-host:{writer._boot_id()}:999999:1")  # another machine: its monitoring judges
    host = _host_and_boot().split(":")[0]
    assert writer_is_gone(f"{host}:0000000000ab:{pid}:{started}")  # this machine booted since
