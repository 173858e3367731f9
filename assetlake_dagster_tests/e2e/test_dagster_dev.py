"""Layer 5: `dagster dev` as scripts/dev.sh starts it, with backfills launched the way the UI
launches them and run by its daemon, then stopped by SIGTERM.

`dagster dev` serves the `partitioned` fixture project (the bundled demo in `dagster dev`, as
`workspace.yaml` loads it, is CI's UI smoke test: scripts/ui_smoke.sh). The UI's "Materialize / Backfill" dialog calls the
`launchPartitionBackfill` GraphQL mutation (all partitions, a range, or the keys the "missing
and failed" filter picked); the daemon splits it into runs of at most `batch=` partitions.
Each run must write its partitions in one Delta commit, a failed run must not stop the
others, and the runs of both backfills share the lake's one warm engine side by side.
"""

import os
import signal
import subprocess
import sys
import time

import deltalake

from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster_tests.helpers import DAGSTER, REPO, alive, cli_env, free_port, graphql

LOCATION_MODULE = "assetlake_dagster_tests.projects.partitioned._location"
WORKSPACE = f"""
load_from:
  - python_module:
      module_name: {LOCATION_MODULE}
      location_name: partitioned
      working_directory: {REPO}
"""
LOCATIONS = """
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
LAUNCH = """
mutation {
  launchPartitionBackfill(backfillParams: {assetSelection: [{path: %s}], %s}) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
  }
}
"""
STATUS = '{ partitionBackfillOrError(backfillId: "%s") { ... on PartitionBackfill { status } } }'
ASSET_STATUS = """
{ assetNodes(assetKeys: [{path: %s}]) {
    partitionStats { numMaterialized numFailed numPartitions } } }
"""


def _gql_path(path):
    return str(path).replace("'", '"')


def _launch(port, path, selection):
    data = graphql(port, LAUNCH % (_gql_path(path), selection))
    result = data["data"]["launchPartitionBackfill"]
    assert result["__typename"] == "LaunchBackfillSuccess", data
    return result["backfillId"]


def _wait_all(port, backfill_ids, timeout=900):
    """The final status of each backfill (they run at the same time)."""
    deadline = time.monotonic() + timeout
    final = {}
    while len(final) < len(backfill_ids):
        assert time.monotonic() < deadline, f"backfills still running after {timeout} s: {final}"
        for backfill_id in set(backfill_ids) - set(final):
            status = graphql(port, STATUS % backfill_id)["data"]["partitionBackfillOrError"]["status"]
            if status != "REQUESTED":
                final[backfill_id] = status
        time.sleep(2)
    return [final[b] for b in backfill_ids]


def _stats(port, path):
    nodes = graphql(port, ASSET_STATUS % _gql_path(path))["data"]["assetNodes"]
    return nodes[0]["partitionStats"]


def _history(path) -> list[tuple[int, str]]:
    """``[(version, operation), …]`` of a Delta table, newest first, read by delta-rs: this
    file uses no in-process JVM (its worker runs only warm-engine files: conftest.py)."""
    return [(h["version"], h["operation"]) for h in deltalake.DeltaTable(str(path)).history()]


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


def _wait_for_locations(proc, port, log_path, count, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, log_path.read_text()[-3000:]
        try:
            entries = graphql(port, LOCATIONS)["data"]["workspaceOrError"]["locationEntries"]
            if len(entries) == count and all(e["locationOrLoadError"] for e in entries):
                return {e["name"]: e["locationOrLoadError"] for e in entries}
        except OSError:
            pass
        time.sleep(1)
    raise AssertionError(f"dagster dev did not serve {count} code locations within {timeout} s")


def test_dagster_dev_runs_ui_backfills_side_by_side_and_stops_on_sigterm(tmp_path):
    """scripts/dev.sh's wrapper, started as a background job starts (SIGINT ignored): both
    code location loads, two backfills run at once (batched commits; a failed run does not
    stop the others), and a SIGTERM stops dagster dev with its webserver, daemon and code
    servers, cleanly."""
    home, lake = tmp_path / "home", tmp_path / "lake"
    home.mkdir()
    with open(os.path.join(REPO, "scripts", "dagster.yaml")) as src:
        (home / "dagster.yaml").write_text(src.read())
    (tmp_path / "workspace.yaml").write_text(WORKSPACE)
    env = cli_env(DAGSTER_HOME=str(home), ASSETLAKE_LAKE_ROOT=str(lake))
    # The source table the backfills read, written on the warm engine before dagster dev starts.
    raw = subprocess.run([DAGSTER, "asset", "materialize", "-m", LOCATION_MODULE, "--select", "raw/events"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert raw.returncode == 0, raw.stderr[-3000:]
    port = free_port()
    log_path = tmp_path / "dagster_dev.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, os.path.join(REPO, "scripts", "dagster_dev.py"),
         "-w", str(tmp_path / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # As `cmd &` in a script: a background job starts with SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        locations = _wait_for_locations(proc, port, log_path, count=1)
        location = locations["partitioned"]
        assert location["__typename"] == "RepositoryLocation", location
        nodes = location["repositories"][0]["assetNodes"]
        assert {("mart", "daily_events"), ("mart", "bad_days")} <= {tuple(n["assetKey"]["path"]) for n in nodes}

        # Launched together, as two clicks would: all ten days with batch=5 (two runs, two
        # commits), and a range with a failing day with batch=2 (the run holding 2024-01-04
        # fails, the other two land).
        daily, bad = ["mart", "daily_events"], ["mart", "bad_days"]
        keys = '["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05", "2024-01-06"]'
        launched = [_launch(port, daily, "allPartitions: true"), _launch(port, bad, f"partitionNames: {keys}")]
        assert _wait_all(port, launched) == ["COMPLETED_SUCCESS", "COMPLETED_FAILED"]
        # Two commits, one per run; the first holds the file's description (the table's comment).
        daily_commits = _history(lake / "mart" / "daily_events")
        assert sorted(op for _, op in daily_commits) == ["CREATE TABLE AS SELECT", "WRITE"]
        assert daily_commits[-1] == (0, "CREATE TABLE AS SELECT")
        assert _stats(port, daily) == {"numMaterialized": 10, "numFailed": 0, "numPartitions": 10}
        assert _stats(port, bad) == {"numMaterialized": 4, "numFailed": 2, "numPartitions": 6}
        bad_days = deltalake.DeltaTable(str(lake / "mart" / "bad_days"))
        landed = set(bad_days.to_pyarrow_table(columns=[PARTITION_COLUMN]).column(PARTITION_COLUMN).to_pylist())
        assert landed == {"2024-01-01", "2024-01-02", "2024-01-05", "2024-01-06"}
        assert sorted(op for _, op in _history(lake / "mart" / "bad_days")) == ["CREATE TABLE AS SELECT", "WRITE"]

        services = _descendants(proc.pid)
        assert len(services) >= 3, services  # dagster dev, its webserver, daemon, a code server
        proc.send_signal(signal.SIGTERM)  # only to the wrapper, as `kill <pid>` would
        assert proc.wait(timeout=90) == 0
        deadline = time.monotonic() + 60
        while any(alive(p) for p in services):
            assert time.monotonic() < deadline, f"still running after SIGTERM: {[p for p in services if alive(p)]}"
            time.sleep(0.5)
        assert "Shutting down Dagster services" in log_path.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
