"""The concurrent writers' barrier (``concurrent_writers.meet``) fails fast when its peer is gone.

A CI run (bf12f10) showed why: one writer of ``e2e/test_concurrent_runs.py`` exited, and the other
waited at its barrier until the test's 1200 s limit, which also hid the first one's error.
"""

import threading
import time

import pytest

from assetlake_dagster_tests.concurrent_writers import meet


def test_the_barrier_returns_once_both_writers_reached_it(tmp_path):
    other = threading.Timer(0.2, lambda: (tmp_path / "h0.b").touch())
    other.start()
    meet(str(tmp_path), "h0", "a", "b", deadline_s=30)
    assert (tmp_path / "h0.a").exists()


def test_a_writer_whose_peer_has_gone_fails_at_once_naming_the_barrier(tmp_path):
    (tmp_path / "gone.b").touch()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="writer a: writer b exited before the barrier p2"):
        meet(str(tmp_path), "p2", "a", "b", deadline_s=600)
    assert time.monotonic() - started < 5


def test_a_writer_alone_gives_up_at_its_deadline(tmp_path):
    with pytest.raises(RuntimeError, match="writer b: writer a did not reach the barrier h1 in 0 s"):
        meet(str(tmp_path), "h1", "b", "a", deadline_s=0.1)
