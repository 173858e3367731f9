"""Helpers shared by the test modules (imported from here, never from another test module)."""

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request

from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster.spark.install import C1_ONLY_OPTIONS

#: The repository root and the fixture projects (one small folder per scenario).
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "projects")
#: The console scripts of this virtualenv.
DAGSTER = os.path.join(os.path.dirname(sys.executable), "dagster")
ASSETLAKE = os.path.join(os.path.dirname(sys.executable), "assetlake")
#: Every asset key of the bundled demo.
DEMO_KEYS = {
    "raw/customers",
    "raw/orders",
    "staging/orders",
    "analytics/customers",
    "analytics/dim_customer",
    "analytics/fct_orders",
    "analytics/customer_revenue",
    "analytics/top_customers",
    "ops/load_log",
    "analytics/monthly_revenue",
    "staging/payments",
    "analytics/payment_reconciliation",
    "landing/payments",
    "ref/countries",
}
#: The demo's external tables (read, produced by no file: nothing to materialize).
DEMO_EXTERNAL_KEYS = {"landing/payments"}


#: C1 alone (spark/install.py's C1_ONLY_OPTIONS) for the Spark JVMs the suite starts outside
#: its in-process session (the warm engines, the writers a test kills): they run tiny tables,
#: and C2 compiling the code they pass through was most of their CPU. The in-process session
#: keeps C2: C1 cost it more. Measured: docs/ci-time.md, "One Spark JVM per worker, and C1 for
#: the engines". Spark's launcher gives SPARK_SUBMIT_OPTS to the JVM it starts (`cli_env`
#: sets it).
C1_ONLY_JVM = {"SPARK_SUBMIT_OPTS": C1_ONLY_OPTIONS}


def cli_env(**overrides: str) -> dict[str, str]:
    """The environment for a subprocess that runs `dagster` or `assetlake` as a user would.

    It uses the warm engine (the product's default) in the suite's shared engine folder
    (``ASSETLAKE_ENGINE_DIR``, set by ``conftest.py``), so the suite's CLI calls, `dagster
    dev` runs and `dagster asset materialize` runs share one Spark JVM instead of each
    starting its own. The JVMs it starts compile with C1 alone (:data:`C1_ONLY_JVM`).
    """
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, ASSETLAKE_SPARK_MODE="engine")
    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "ASSETLAKE_SPARK_REMOTE"):
        env.pop(name, None)
    env.update(C1_ONLY_JVM)  # the engines it starts (C1_ONLY_JVM)
    env.update(overrides)
    return env


@contextlib.contextmanager
def env_restored(*names: str):
    """Put the environment variables ``names`` back as they were, whatever the block did to them.

    For marks a library sets by itself: PySpark sets ``SPARK_CONNECT_MODE_ENABLED`` once a Spark
    Connect session is made in this process, and the worker's later tests expect a classic one.
    """
    before = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def python_local_zone(zone: str):
    """This process's local time zone (``TZ``, ``time.tzset``) set to ``zone`` inside the
    block, restored after; Spark's JVM and session zone are not touched."""
    import time

    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield zone
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run the ``assetlake`` command line in this process: ``(exit code, stdout, stderr)``.

    The command-line behaviour is tested this way, on the suite's in-process Spark session;
    only the tests of the process boundary itself start ``assetlake`` as a subprocess.
    """
    from assetlake_dagster.cli.main import main

    capsys.readouterr()  # drop what came before
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def c1_only_engine():
    """A warm engine this process starts inside the block compiles with C1 alone
    (:data:`C1_ONLY_JVM`), as the engines of `cli_env`'s subprocesses do; the environment is
    put back after. For tests that start the suite's engine themselves (its first user may be
    such a test), not for the in-process session."""
    with env_restored(*C1_ONLY_JVM):
        os.environ.update(C1_ONLY_JVM)
        yield


def stop_process_group(process: subprocess.Popen, timeout: float) -> None:
    """SIGTERM the process group ``process`` leads (started with ``start_new_session=True``),
    SIGKILL it if the leader has not exited within ``timeout`` seconds, and reap the leader."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def graphql(port: int, query: str) -> dict:
    """POST a GraphQL query to the Dagster webserver on ``port``."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def delta_history(spark, path):
    """``[(version, operation), …]`` of a Delta table, newest first."""
    return [(r.version, r.operation) for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()]


def files_by_partition(spark, path):
    """``{partition key: {data file paths}}`` of a partitioned managed table."""
    rows = spark.sql(f"SELECT DISTINCT _metadata.file_path AS f, {PARTITION_COLUMN} AS p FROM delta.`{path}`").collect()
    found = {}
    for r in rows:
        found.setdefault(r.p, set()).add(r.f)
    return found


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not reaped, does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def load_script(name: str):
    """``scripts/<name>.py`` as a module (the scripts folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "scripts", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_fuzzer():
    """``scripts/fuzz_annotations.py`` as a module."""
    return load_script("fuzz_annotations")


#: The first line of a one-file header in the grammar tests.
MATERIALIZE_LINE = "-- materialize delta://a/t\n"


def parsed_header(lines: str):
    """The header of ``MATERIALIZE_LINE`` + ``lines``, asserted free of problems."""
    from assetlake_dagster.annotations import parse_header
    from assetlake_dagster.errors import SourceText

    header, problems = parse_header(SourceText.of("f.sql", MATERIALIZE_LINE + lines + "\n"))
    assert [p.render() for p in problems] == []
    return header


def header_errors(lines: str) -> list[str]:
    """The first line of each problem of the header ``MATERIALIZE_LINE`` + ``lines``."""
    from assetlake_dagster.annotations import parse_header
    from assetlake_dagster.errors import SourceText

    _, problems = parse_header(SourceText.of("f.sql", MATERIALIZE_LINE + lines + "\n"))
    return [p.render().splitlines()[0] for p in problems]


def spec_of(body: str, header: str = "-- materialize delta://s/t"):
    """The spec of a one-file project: ``header`` lines, a blank line, then ``body`` (asserted
    to parse)."""
    from assetlake_dagster.project.load import parse_file

    spec, diagnostics = parse_file("/p/t.sql", f"{header}\n\n{body}\n")
    assert spec is not None, diagnostics
    return spec
