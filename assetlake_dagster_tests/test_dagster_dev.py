"""Layer 5: `dagster dev` serves the demo code location (webserver + GraphQL)."""

from assetlake_dagster_tests.helpers import cli_env
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from assetlake_dagster_tests.test_code_location import DEMO_KEYS, REPO

DAGSTER = os.path.join(os.path.dirname(sys.executable), "dagster")
QUERY = """
{
  workspaceOrError {
    ... on Workspace {
      locationEntries {
        name
        locationOrLoadError {
          __typename
          ... on PythonError { message }
          ... on RepositoryLocation { repositories { name assetNodes { assetKey { path } groupName } } }
        }
      }
    }
  }
}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def test_dagster_dev_serves_the_demo(tmp_path):
    port = _free_port()
    env = cli_env(
        DAGSTER_HOME=str(tmp_path / "home"),
        SPARK_LOCAL_IP="127.0.0.1",
        ASSETLAKE_LAKE_ROOT=str(tmp_path / "lake"),
    )
    env.pop("ASSETLAKE_PROJECT_DIR", None)
    os.makedirs(env["DAGSTER_HOME"])
    log = open(tmp_path / "dagster_dev.log", "w")
    proc = subprocess.Popen(
        [DAGSTER, "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        entries = None
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "dagster_dev.log").read_text()[-3000:]
            try:
                data = _graphql(port, QUERY)
                entries = data["data"]["workspaceOrError"]["locationEntries"]
                if entries and entries[0]["locationOrLoadError"]:
                    break
            except OSError:
                pass
            time.sleep(1)
        assert entries, "dagster dev did not answer within 180 s"
        (entry,) = entries
        assert entry["name"] == "assetlake_demo"
        location = entry["locationOrLoadError"]
        assert location["__typename"] == "RepositoryLocation", location
        nodes = location["repositories"][0]["assetNodes"]
        assert {"/".join(n["assetKey"]["path"]) for n in nodes} == DEMO_KEYS
        assert {n["groupName"] for n in nodes} == {"raw", "sales", "customers", "ops"}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
