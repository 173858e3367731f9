"""`dagster dev` (as scripts/dev.sh starts it) serves the demo code location and stops cleanly."""

import os
import signal
import subprocess
import sys
import time

from assetlake_dagster_tests.helpers import DEMO_KEYS, REPO, alive, cli_env, free_port as _free_port, graphql as _graphql

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


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def test_dagster_dev_serves_the_demo_and_stops_on_sigterm_in_the_background(tmp_path):
    """scripts/dev.sh's wrapper, started as a background job starts (SIGINT ignored):
    the demo loads, and a SIGTERM stops dagster dev with its webserver, daemon and code
    server, cleanly."""
    port = _free_port()
    env = cli_env(
        DAGSTER_HOME=str(tmp_path / "home"),
        SPARK_LOCAL_IP="127.0.0.1",
        ASSETLAKE_LAKE_ROOT=str(tmp_path / "lake"),
    )
    env.pop("ASSETLAKE_PROJECT_DIR", None)
    os.makedirs(env["DAGSTER_HOME"])
    log = open(tmp_path / "dagster_dev.log", "w")
    wrapper = [sys.executable, os.path.join(REPO, "scripts", "dagster_dev.py")]
    proc = subprocess.Popen(
        [*wrapper, "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # As `cmd &` in a script: a background job starts with SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
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
        services = _descendants(proc.pid)
        assert len(services) >= 3, services  # dagster dev, its webserver, daemon, code server
        proc.send_signal(signal.SIGTERM)  # only to the wrapper, as `kill <pid>` would
        assert proc.wait(timeout=90) == 0
        deadline = time.monotonic() + 60
        while any(alive(p) for p in services):
            assert time.monotonic() < deadline, f"still running after SIGTERM: {[p for p in services if alive(p)]}"
            time.sleep(0.5)
        assert "Shutting down Dagster services" in (tmp_path / "dagster_dev.log").read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()

