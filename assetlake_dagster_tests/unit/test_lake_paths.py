"""The lake keeps each table in its own folder: symlinks inside the lake that alias one
table to another or nest one inside another's folder are refused before anything is
read or written (Lake.table_path is the one place every table path comes from)."""

import os

import pytest

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spec import TableUri


@pytest.fixture
def lake(tmp_path):
    root = tmp_path / "lake"
    (root / "b" / "t2" / "_delta_log").mkdir(parents=True)
    (root / "a").mkdir()
    return Lake(str(root))


def test_a_table_folder_is_its_own(lake):
    assert lake.table_path(TableUri("b", "t2")) == os.path.join(lake.root, "b", "t2")
    assert lake.table_path(TableUri("a", "new")) == os.path.join(lake.root, "a", "new")  # not created yet


def test_a_symlink_aliasing_one_table_to_another_is_refused(lake):
    os.symlink(os.path.join(lake.root, "b", "t2"), os.path.join(lake.root, "a", "t1"))
    with pytest.raises(ConfigError, match=r"delta://a/t1 resolves through a symlink to .*/b/t2, not its own folder .*/a/t1\. "):
        lake.table_path(TableUri("a", "t1"))
    assert lake.table_path(TableUri("b", "t2")).endswith("/b/t2")  # the link's target is still fine


def test_a_symlink_nesting_a_table_inside_another_is_refused(lake):
    os.symlink(os.path.join(lake.root, "b", "t2", "sub"), os.path.join(lake.root, "a", "t1"))
    with pytest.raises(ConfigError, match=r"resolves through a symlink to .*/b/t2/sub"):
        lake.table_path(TableUri("a", "t1"))


def test_a_schema_folder_linked_into_a_table_is_refused(lake):
    os.symlink(os.path.join(lake.root, "b", "t2"), os.path.join(lake.root, "c"))
    with pytest.raises(ConfigError, match="remove the symlink"):
        lake.table_path(TableUri("c", "x"))


def test_a_symlink_out_of_the_lake_is_still_refused(lake, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", os.path.join(lake.root, "a", "t1"))
    with pytest.raises(ConfigError, match="outside the lake root"):
        lake.table_path(TableUri("a", "t1"))


def test_a_lake_root_reached_through_a_symlink_is_fine(lake, tmp_path):
    os.symlink(lake.root, tmp_path / "link-to-lake")
    assert Lake(str(tmp_path / "link-to-lake")).table_path(TableUri("b", "t2")) == os.path.join(lake.root, "b", "t2")
