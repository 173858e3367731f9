"""Layer 5: `dagster dev` serves the demo code location (webserver + GraphQL)."""

import os
import signal
import subprocess
import time

from assetlake_dagster_tests.helpers import DAGSTER, DEMO_KEYS, REPO, cli_env, free_port as _free_port, graphql as _graphql

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
