"""Shared fixtures: one real local Spark + Delta session for the in-process tests, and one
warm engine for every subprocess (CLI calls, `dagster asset materialize`, `dagster dev`).

There is no skip path: if Spark or Delta cannot start, every test that needs them errors
and the suite fails loudly.
"""

import os
import shutil
import tempfile
import uuid

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# In this process, resources use the classic in-process session (the `spark` fixture's
# JVM): the in-process tests read and write through one JVM, and the process never turns
# into a Spark Connect client (which would change `pyspark.sql.functions` for all tests).
# Subprocesses use the warm engine instead (helpers.cli_env).
os.environ["ASSETLAKE_SPARK_MODE"] = "local"
# One warm engine per test process (each pytest-xdist worker), whatever lake root each test
# uses; stopped at the end. Not one for all workers: an engine's catalog names are global,
# and two workers' tests re-pointing the same name (staging.orders) at their own lakes at
# once would race. A folder the caller chose in $ASSETLAKE_ENGINE_DIR is used as is.
_SUITE_ENGINE_PREFIX = "assetlake-test-engine-"
_chosen = os.environ.get("ASSETLAKE_ENGINE_DIR")
if _chosen is None or os.path.basename(_chosen).startswith(_SUITE_ENGINE_PREFIX):
    # None yet, or the controller's (a worker inherits its environment): one of our own.
    os.environ["ASSETLAKE_ENGINE_DIR"] = tempfile.mkdtemp(prefix=_SUITE_ENGINE_PREFIX)
# Up for the whole run (stopped at its end): a worker that spends ten minutes on in-process
# files would otherwise start its engine again for the next file that uses it (~30 CPU-s).
# The timeout only bounds an engine a killed run leaves behind.
os.environ.setdefault("ASSETLAKE_ENGINE_IDLE_TIMEOUT", "3600")
# The parse cache of the suite's loads (and its subprocesses'): its own, not the user's.
os.environ["ASSETLAKE_CACHE_DIR"] = tempfile.mkdtemp(prefix="assetlake-test-parse-cache-")


#: Test folders = layers = markers: `bash scripts/test.sh -m unit` runs in seconds.
LAYERS = ("unit", "spark", "dagster", "e2e")
#: The order files are handed to pytest-xdist's workers (scripts/test.sh runs two, a file
#: per worker): the layers with the longest files first, so that the run does not end with
#: one worker on a long file while the other idles.
RUN_ORDER = ("e2e", "spark", "dagster", "unit")


def _layer(item) -> str:
    parts = item.path.parts
    folders = parts[parts.index("assetlake_dagster_tests") + 1 : -1]
    return next((layer for layer in LAYERS if layer in folders), "unit")


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(getattr(pytest.mark, _layer(item)))
    items.sort(key=lambda item: RUN_ORDER.index(_layer(item)))  # stable: file order kept within a layer


#: e2e files that are a unit of their own, beside the other e2e files' one (see below).
E2E_APART = ("test_s3_lake.py",)


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist hands each worker a test file at a time, but the e2e files as one unit:
    each e2e test starts processes, JVMs and daemons of its own, and two at once on two
    cores slowed each by half or more (measured in CI: 84 s -> 147 s). The S3 lane is a
    unit apart, so that the e2e files' time (in CI, half an hour with the S3 lane) is shared
    by the two workers rather than all on one: the two e2e units start the run, one on each
    worker (xdist gives each worker two units at first, in this order), and the other
    layers' files fill in behind them."""
    from xdist.scheduler import LoadScopeScheduling

    class FilesWithE2ETogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if "/e2e/" not in f"/{path}" or os.path.basename(path) in E2E_APART:
                return path
            return "e2e"

    return FilesWithE2ETogether(config, log)


def pytest_sessionfinish(session, exitstatus):
    """Stop this process's warm engine at its end (each xdist worker has its own)."""
    from assetlake_dagster.spark.engine import WarmEngine

    state_dir = os.environ["ASSETLAKE_ENGINE_DIR"]
    WarmEngine(state_dir).stop()
    if os.path.basename(state_dir).startswith(_SUITE_ENGINE_PREFIX):
        shutil.rmtree(state_dir, ignore_errors=True)  # ours, not a folder the caller chose
    shutil.rmtree(os.environ["ASSETLAKE_CACHE_DIR"], ignore_errors=True)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from assetlake_dagster.spark.session import build_spark_session
    from assetlake_dagster_tests import arrow_rows

    # Input rows reach this process's JVM through Arrow, without a Python worker (arrow_rows).
    patches = pytest.MonkeyPatch()
    arrow_rows.install(patches)
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = build_spark_session(master="local[2]", warehouse_dir=str(warehouse))
    # Fail loudly, here, if Delta is not on the classpath.
    probe = str(tmp_path_factory.mktemp("probe") / "t")
    session.range(1).write.format("delta").save(probe)
    assert session.read.format("delta").load(probe).count() == 1
    yield session
    session.stop()
    patches.undo()


@pytest.fixture
def lake_root(tmp_path):
    root = tmp_path / "lake"
    root.mkdir()
    return str(root)


@pytest.fixture
def run_id():
    return uuid.uuid4().hex
