"""Shared fixtures: one real local Spark + Delta session for the whole test run.

There is no skip path: if Spark or Delta cannot start, every test that needs them errors
and the suite fails loudly.
"""

import os
import uuid

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from assetlake_dagster.spark_session import build_spark_session

    warehouse = tmp_path_factory.mktemp("warehouse")
    session = build_spark_session(master="local[2]", warehouse_dir=str(warehouse))
    # Fail loudly, here, if Delta is not on the classpath.
    probe = str(tmp_path_factory.mktemp("probe") / "t")
    session.range(1).write.format("delta").save(probe)
    assert session.read.format("delta").load(probe).count() == 1
    yield session
    session.stop()


@pytest.fixture
def lake_root(tmp_path):
    root = tmp_path / "lake"
    root.mkdir()
    return str(root)


@pytest.fixture
def run_id():
    return uuid.uuid4().hex
