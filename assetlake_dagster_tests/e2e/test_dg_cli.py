"""Layer 5: the component through the real ``dg`` CLI, in a project ``create-dagster project``
made in a temp folder.

``dg`` finds ``AssetlakeProjectComponent`` through the package's registry-modules entry point,
scaffolds it, validates the project (``dg check defs``) and lists what it defines (``dg list
defs``) beside a plain ``@asset`` with its own IO manager and executor, all without Spark
(loading the definitions starts none); ``dg launch`` materializes two SQL assets into Delta
under the project's executor (Dagster's default: a process per step) on the suite's warm engine;
and ``dg dev`` serves the assets, their check, schedule and freshness policy in the webserver.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import deltalake
import pytest

from assetlake_dagster.spark.engine import WarmEngine
from assetlake_dagster_tests.helpers import cli_env, free_port, graphql, stop_process_group

TYPE = "assetlake_dagster.AssetlakeProjectComponent"
PLAIN = """\
import dagster as dg


@dg.asset
def plain():
    return 1


@dg.definitions
def defs():
    return dg.Definitions(assets=[plain], resources={"io_manager": dg.FilesystemIOManager()}, executor=dg.multiprocess_executor)
"""
TOTALS = """\
-- materialize delta://analytics/totals
-- data_test not_null n
-- schedule 0 6 * * *
-- freshness fail=26h warn=24h

SELECT count(*) AS n FROM analytics.example
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """One ``dg`` project for the module, made by ``create-dagster project`` (without its own
    virtualenv: the project runs in this interpreter's), with the component scaffolded by
    ``dg scaffold defs``, a second SQL file and a plain ``@asset`` beside it; and the
    environment ``dg`` runs in. One project, not one per test: each ``dg`` process loads
    Dagster anew (about 10 CPU-s), and the tests only read the project, except the last one,
    which adds a bad file."""
    tmp_path = tmp_path_factory.mktemp("dg")
    bin_dir = os.path.dirname(sys.executable)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    root = tmp_path / "lakeproj"
    env = cli_env(  # the suite's warm engine, as a user's CLI call would
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
        VIRTUAL_ENV=os.path.dirname(bin_dir),
        DAGSTER_HOME=str(home),
        PYTHONPATH=str(root / "src"),  # the project's package, as its editable install would
        ASSETLAKE_LAKE_ROOT=str(tmp_path / "lake"),
    )
    created = subprocess.run(
        [os.path.join(bin_dir, "create-dagster"), "project", "--no-uv-sync", str(root)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert created.returncode == 0, created.stdout + created.stderr
    assert (root / "src" / "lakeproj" / "definitions.py").is_file() and (root / "src" / "lakeproj" / "defs").is_dir()
    made = Project(root, env, tmp_path / "lake")
    dg(made, "scaffold", "defs", TYPE, "lake")
    made.scaffolded = sorted(p.name for p in made.component.rglob("*"))
    (made.component / "sql" / "totals.sql").write_text(TOTALS)
    (root / "src" / "lakeproj" / "defs" / "plain").mkdir()
    (root / "src" / "lakeproj" / "defs" / "plain" / "defs.py").write_text(PLAIN)
    return made


@dataclass
class Project:
    root: Path
    env: dict
    lake: Path
    scaffolded: list = field(default_factory=list)  # what ``dg scaffold defs`` made

    @property
    def component(self) -> Path:
        return self.root / "src" / "lakeproj" / "defs" / "lake"


def dg(project: Project, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    executable = os.path.join(os.path.dirname(sys.executable), "dg")
    proc = subprocess.run([executable, *args], cwd=project.root, env=project.env, capture_output=True, text=True,
                          timeout=300)
    if ok:
        assert proc.returncode == 0, f"dg {' '.join(args)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_scaffold_check_and_list_beside_a_plain_asset(project):
    assert project.scaffolded == ["defs.yaml", "example.sql", "sql"]
    assert f"type: {TYPE}" in (project.component / "defs.yaml").read_text()

    assert "All definitions loaded successfully" in dg(project, "check", "defs").stdout
    listed = json.loads(dg(project, "list", "defs", "--json").stdout)
    assert sorted(a["asset_key"] for a in listed["assets"]) == ["analytics/example", "analytics/totals", "plain"]
    assert [c["key"] for c in listed["asset_checks"]] == ["analytics/totals:not_null_n"]
    assert [s["name"] for s in listed["schedules"]] == ["analytics__totals_schedule"]
    assert sorted(r["name"] for r in listed["resources"]) == ["assetlake_io_manager", "io_manager", "spark"]
    # The component as dg lists and documents it: its one-line summary, every resource setting.
    components = json.loads(dg(project, "list", "components", "--json").stdout)
    ours = next(c for c in components["items"] if c["key"] == TYPE)
    assert ours["summary"] == "A folder of annotated Spark SQL files as Dagster assets with managed Delta writes."
    schema = dg(project, "utils", "inspect-component", TYPE, "--defs-yaml-json-schema").stdout
    assert '"defer_to"' in schema and '"hive_metastore_uris"' in schema and "Where tables are registered by name" in schema


def _error_lines(text: str) -> list[str]:
    """The ERROR-level lines of a log: Dagster's ``- ERROR -``, PySpark's ``"level": "ERROR"``,
    log4j's ``ERROR``; the first 300 characters of each."""
    return [line[:300] for line in text.splitlines() if re.search(r"\bERROR\b", line)]


def _engine_errors(text: str) -> list[str]:
    """The ERROR lines of the engine's log but Spark Connect's own response-stream race: a
    response sender displaced by the client's reattach logs ``INVALID_CURSOR.DISCONNECTED``
    and the client retries (SPARK-44835); nothing failed. Seen once in three identical runs."""
    lines = text.splitlines()
    return [
        line[:300] for i, line in enumerate(lines)
        if re.search(r"\bERROR\b", line)
        and not ("async-grpc-response-sender" in line and "INVALID_CURSOR.DISCONNECTED" in "".join(lines[i + 1 : i + 2]))
    ]


def test_launch_materializes_the_assets_into_delta(project):
    """The project's first run, as a new user's: both tables land, and its terminal output and
    the engine's log hold no ERROR line and no stack trace (a first write looks its table up
    before it exists; that is answered without an error being logged)."""
    engine_log = WarmEngine(os.environ["ASSETLAKE_ENGINE_DIR"]).log_path
    logged_before = os.path.getsize(engine_log) if os.path.exists(engine_log) else 0
    proc = dg(project, "launch", "--assets", "analytics/example,analytics/totals")
    output = proc.stdout + proc.stderr
    assert "RUN_SUCCESS" in output, output[-3000:]
    assert _error_lines(output) == [] and "Traceback" not in output, output[-3000:]
    with open(engine_log, encoding="utf-8", errors="replace") as f:
        f.seek(logged_before if os.path.getsize(engine_log) >= logged_before else 0)
        engine_output = f.read()
    assert _engine_errors(engine_output) == [], engine_output[-3000:]
    assert deltalake.DeltaTable(str(project.lake / "analytics" / "example")).to_pyarrow_table().to_pylist() == [
        {"id": 1, "greeting": "hello"}
    ]
    assert deltalake.DeltaTable(str(project.lake / "analytics" / "totals")).to_pyarrow_table().to_pylist() == [
        {"n": 1}
    ]


ASSET_NODES = """{ assetNodes { assetKey { path } hasAssetChecks
  internalFreshnessPolicy { ... on TimeWindowFreshnessPolicy { failWindowSeconds warnWindowSeconds } } } }"""
SCHEDULES = """{ schedulesOrError(repositorySelector: {repositoryLocationName: "lakeproj", repositoryName: "__repository__"})
  { ... on Schedules { results { name } } ... on PythonError { message } } }"""


def test_dg_dev_serves_the_assets_their_check_schedule_and_freshness(project, tmp_path):
    port = free_port()
    log_path = tmp_path / "dg_dev.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [os.path.join(os.path.dirname(sys.executable), "dg"), "dev", "--host", "127.0.0.1", "--port", str(port)],
            cwd=project.root, env=project.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        deadline, nodes = time.monotonic() + 180, []
        while time.monotonic() < deadline and not nodes:
            assert proc.poll() is None, log_path.read_text()[-3000:]
            try:
                nodes = graphql(port, ASSET_NODES)["data"]["assetNodes"]
            except (OSError, KeyError, TypeError):
                time.sleep(1)
        assert sorted("/".join(n["assetKey"]["path"]) for n in nodes) == ["analytics/example", "analytics/totals", "plain"]
        example, totals = sorted((n for n in nodes if n["assetKey"]["path"][0] == "analytics"),
                                 key=lambda n: n["assetKey"]["path"])
        assert (example["hasAssetChecks"], totals["hasAssetChecks"]) == (False, True)
        # What the UI's freshness badge shows: the '-- freshness' line's policy.
        assert example["internalFreshnessPolicy"] is None
        assert totals["internalFreshnessPolicy"] == {"failWindowSeconds": 26 * 3600, "warnWindowSeconds": 24 * 3600}
        schedules = graphql(port, SCHEDULES)["data"]["schedulesOrError"]
        assert [s["name"] for s in schedules["results"]] == ["analytics__totals_schedule"], schedules
    finally:
        stop_process_group(proc, timeout=60)


def test_check_defs_reports_a_located_sql_error(project):
    """Last in the module: it leaves a bad file in the shared project."""
    bad = project.component / "sql" / "bad.sql"
    bad.write_text(textwrap.dedent("""\
        -- materialize delta://sales/orders kye=id
        SELECT 1 AS id
    """))
    proc = dg(project, "check", "defs", ok=False)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "bad.sql:1:" in output and "kye=id" in output, output[-3000:]
