"""``build_definitions`` pauses Python's cyclic garbage collector while it builds (its
objects are all kept, so the collector's passes only cost time) and leaves it as it was."""

import gc

import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.errors import ProjectError

SQL = "-- materialize delta://s/t\nSELECT 1 AS id\n"
# Imported by the load (a project's *.py files are): what the collector was doing meanwhile.
PROBE = "import gc\nimport builtins\nbuiltins.gc_running_during_load = gc.isenabled()\n"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "t.sql").write_text(SQL)
    (tmp_path / "probe.py").write_text(PROBE)
    return tmp_path


@pytest.fixture
def restore_gc():
    was_running = gc.isenabled()
    yield
    (gc.enable if was_running else gc.disable)()


def test_paused_during_the_build_and_running_again_after(project, tmp_path, restore_gc):
    import builtins

    gc.enable()
    build_definitions(project, lake_root=str(tmp_path / "lake"))
    assert builtins.gc_running_during_load is False
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off(project, tmp_path, restore_gc):
    gc.disable()
    build_definitions(project, lake_root=str(tmp_path / "lake"))
    assert not gc.isenabled()


def test_running_again_after_a_load_error(tmp_path, restore_gc):
    (tmp_path / "bad.sql").write_text("-- materialize delta://s/t nonsense=1\nSELECT 1\n")
    gc.enable()
    with pytest.raises(ProjectError):
        build_definitions(tmp_path, lake_root=str(tmp_path / "lake"))
    assert gc.isenabled()
