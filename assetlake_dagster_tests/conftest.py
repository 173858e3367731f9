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

#: Files outside e2e/ that use this process's warm engine (as a Connect server, or for client
#: processes) and not its in-process session: they run beside the e2e files (see `_unit`).
ENGINE_FILES = ("dagster/test_spark_connect.py", "spark/test_dead_client_write.py")
#: e2e files that start engines of their own and use neither of the worker's JVMs: units of
#: their own, which go to whichever worker is nearly done first, the longest first.
OWN_ENGINE_FILES = (
    "e2e/test_s3_lake.py",
    "e2e/test_engine.py",
    "e2e/test_hive_catalog.py",
    "e2e/test_pip_install.py",
)


def _layer(item) -> str:
    parts = item.path.parts
    folders = parts[parts.index("assetlake_dagster_tests") + 1 : -1]
    return next((layer for layer in LAYERS if layer in folders), "unit")


def _unit(path: str) -> str:
    """The xdist unit of a test file (a path relative to the repository, or a node id's).

    Each JVM pays its own warm-up, and half of a short-lived JVM's CPU is its JIT compiler
    (docs/ci-time.md), so each worker keeps to one of its two: every in-process spark and
    dagster file is one unit (one worker, one in-process JVM warmed once), and the files
    that use the worker's warm engine (the other e2e files and ENGINE_FILES) are another,
    whose worker never starts an in-process JVM. These two start the run, one on each
    worker. Then OWN_ENGINE_FILES and the unit lane's files, one at a time, fill in behind
    whichever worker is nearly done first.
    """
    relative = path.split("assetlake_dagster_tests/", 1)[-1]
    if relative in OWN_ENGINE_FILES:
        return relative
    if relative.startswith("e2e/") or relative in ENGINE_FILES:
        return "engine"
    if relative.startswith(("spark/", "dagster/")):
        return "in-process"
    return relative


def _unit_rank(unit: str) -> int:
    """The order xdist hands units out in (collection order: see pytest_collection_modifyitems)."""
    order = ("engine", "in-process", *OWN_ENGINE_FILES)
    return order.index(unit) if unit in order else len(order)


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(getattr(pytest.mark, _layer(item)))
    # Stable: file order kept within a unit. xdist hands units out in this order.
    items.sort(key=lambda item: _unit_rank(_unit(item.nodeid.split("::", 1)[0])))


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's load-by-scope scheduling with conftest's units (`_unit`): each worker
    gets a unit at first (xdist adds one more once a worker has two tests or fewer left).

    A run with no engine file (``-m spark``, a few files) has nothing to put beside the one
    in-process unit: its files are handed out one at a time then, to both workers."""
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        in_process_together = True

        def schedule(self) -> None:
            if self.collection is None and self.registered_collections:
                nodeids = next(iter(self.registered_collections.values()))
                self.in_process_together = any(_unit(n.split("::", 1)[0]) == "engine" for n in nodeids)
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            unit = _unit(path)
            return path if unit == "in-process" and not self.in_process_together else unit

    return ByUnit(config, log)


def pytest_sessionfinish(session, exitstatus):
    """Stop this process's warm engine at its end (each xdist worker has its own), after
    this process's Connect sessions of it (at exit, they could not be released any more)."""
    from assetlake_dagster.spark.engine import WarmEngine
    from assetlake_dagster.spark.session import close_connect_sessions

    close_connect_sessions()

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
    # A setting named like a secret: spark/test_secret_settings_local.py checks that it reached
    # the JVM and not its command line.
    secret = {"spark.assetlake.test.token": "suite-token-" + os.urandom(6).hex()}
    session = build_spark_session(master="local[2]", warehouse_dir=str(warehouse), spark_conf=secret)
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
