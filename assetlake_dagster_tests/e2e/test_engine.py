"""The warm engine across real processes: one server for concurrent starters, isolated
sessions, a dead or hung server replaced with a message, idle stop, the CLI, and a run
that loses its engine failing clearly with the table at its prior version.

These tests start an engine of their own (not the suite's), so they may kill it.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from assetlake_dagster.spark.engine import WarmEngine, local_table_version
from assetlake_dagster.spark.install import C1_ONLY_OPTIONS
from assetlake_dagster_tests.helpers import alive, cli_env, stop_process_group



def _python(code: str, env: dict, timeout: float = 600) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen, timeout: float = 600) -> tuple[dict, str]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), err


CONNECT = """
    import json, os
    from assetlake_dagster.defs.resources import SparkDeltaResource
    resource = SparkDeltaResource(lake_root=os.environ["LAKE"], spark_conf=json.loads(os.environ["SPARK_CONF"]))
    state = resource.engine_state()
    mine, other = resource.new_session(), resource.new_session()
    mine.sql("SET spark.sql.shuffle.partitions=3")
    mine.sql("CREATE OR REPLACE TEMP VIEW only_mine AS SELECT 1 AS x")
    print(json.dumps({
        "pid": state.supervisor_pid, "port": state.port, "jvm": state.server_pid,
        "mine": mine.conf.get("spark.sql.shuffle.partitions"),
        "other": other.conf.get("spark.sql.shuffle.partitions"),
        "other_views": [r[1] for r in other.sql("SHOW VIEWS").collect()],
        "answer": mine.sql("SELECT x FROM only_mine").first()[0],
    }))
"""


@pytest.fixture(scope="module")
def engine_dir(tmp_path_factory):
    state_dir = str(tmp_path_factory.mktemp("own-engine"))
    yield state_dir
    WarmEngine(state_dir).stop()


#: Settings that must never reach a command line, the engine's log or an error text: every
#: engine of this module is started with them (harmless on a local lake).
SECRET_CONF = {
    "spark.hadoop.fs.s3a.secret.key": "s3a-secret-f00d1e",
    "spark.assetlake.test.token": "test-token-c0ffee",
}


@pytest.fixture
def env(engine_dir, tmp_path):
    return cli_env(ASSETLAKE_ENGINE_DIR=engine_dir, LAKE=str(tmp_path / "lake"), SPARK_CONF=json.dumps(SECRET_CONF))


def test_two_processes_at_once_get_one_engine_with_sessions_of_their_own(env, engine_dir):
    first, second = _python(CONNECT, env), _python(CONNECT, env)
    (a, err_a), (b, err_b) = _finish(first), _finish(second)
    assert (a["pid"], a["port"]) == (b["pid"], b["port"])
    assert (err_a + err_b).count("starting the warm Spark engine") == 1
    # A session's SET and temp views are its own.
    assert (a["mine"], a["other"], a["other_views"], a["answer"]) == ("3", "8", [], 1)
    state = json.load(open(os.path.join(engine_dir, "engine.json")))
    assert state["host"] == "127.0.0.1" and state["token"]
    assert oct(os.stat(os.path.join(engine_dir, "engine.json")).st_mode & 0o777) == "0o600"


def _engine_processes(state: dict) -> list[int]:
    """The supervisor and every process of the server's process group (spark-submit's JVM)."""
    pids = [state["supervisor_pid"]]
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                if os.getpgid(int(name)) == state["server_pid"]:
                    pids.append(int(name))
    return pids


def test_secret_settings_reach_the_engine_but_no_command_line_log_or_file(env, engine_dir):
    """``spark_conf`` settings named like secrets are the engine's (a session that never set
    them reads them from the server's own configuration), yet no process's command line (what
    ``ps`` shows every local user), no file of the engine's folder and not its log holds them."""
    _finish(_python(CONNECT, env))
    state = json.load(open(os.path.join(engine_dir, "engine.json")))
    pids = _engine_processes(state)
    assert state["server_pid"] in pids and len(pids) >= 2
    command_lines = b"\n".join(open(f"/proc/{pid}/cmdline", "rb").read() for pid in pids)
    assert b"spark.connect.grpc.binding.port" in command_lines  # what a setting looks like there
    for value in SECRET_CONF.values():
        assert value.encode() not in command_lines
    for folder, _, names in os.walk(engine_dir):
        for name in names:
            with open(os.path.join(folder, name), "rb") as f:
                assert not any(v.encode() in f.read() for v in SECRET_CONF.values()), name
    seen = _python(
        f"""
        import json
        from pyspark.sql.connect.session import SparkSession
        session = SparkSession.builder.remote({state_url(state)!r}).create()
        print(json.dumps({{key: session.conf.get(key, None) for key in {sorted(SECRET_CONF)!r}}}))
        """,
        env,
    )
    assert _finish(seen)[0] == SECRET_CONF


def state_url(state: dict) -> str:
    return f"sc://localhost:{state['port']}/;token={state['token']}"


LISTEN_V6 = """
    import errno, json, socket, sys
    port = int(sys.argv[1])
    sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    # What another local process would try: every way to share a port it has.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind(("::1", port))
        sock.listen()
    except OSError as exc:
        print(json.dumps({"listening": False, "errno": errno.errorcode[exc.errno]}), flush=True)
        sys.exit(0)
    print(json.dumps({"listening": True}), flush=True)
    sock.settimeout(float(sys.argv[2]))
    received = b""
    try:
        conn, _ = sock.accept()
        conn.settimeout(5)
        try:
            while chunk := conn.recv(65536):
                received += chunk
        except OSError:
            pass
        conn.close()
    except OSError:
        pass
    print(json.dumps({"received": received.decode("latin-1")}), flush=True)
"""


def test_no_other_process_receives_what_a_client_sends_to_the_engine(env, engine_dir):
    """PySpark sends the engine's token over a plain channel only to ``localhost``, and gRPC
    resolves ``localhost`` to ``::1`` first (c-ares, whatever /etc/hosts says) while the engine
    listens on 127.0.0.1: a process listening on ``[::1]:<engine port>`` would get the client's
    connection and its token. The engine holds that address: nobody else can listen there,
    and a client still reaches the engine."""
    _finish(_python(CONNECT, env))
    state = json.load(open(os.path.join(engine_dir, "engine.json")))
    listener = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(LISTEN_V6), str(state["port"]), "60"], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        first = json.loads(listener.stdout.readline())
        client = _python(CONNECT, env)
        answer, _ = _finish(client)
        out, err = listener.communicate(timeout=120)
    finally:
        if listener.poll() is None:
            listener.kill()
    received = json.loads(out.strip().splitlines()[-1])["received"] if first["listening"] else ""
    assert received == "", f"a listener on [::1]:{state['port']} received {received[:200]!r}"
    assert not first["listening"] and first["errno"] in ("EADDRINUSE", "EADDRNOTAVAIL"), (first, err)
    assert answer["port"] == state["port"] and answer["answer"] == 1


def test_the_engine_needs_its_token(env):
    state, _ = _finish(_python(CONNECT, env))
    probe = _python(
        f"""
        from pyspark.sql.connect.session import SparkSession
        try:
            SparkSession.builder.remote("sc://localhost:{state['port']}").create().sql("SELECT 1").collect()
            print("answered")
        except Exception as exc:
            print("refused", type(exc).__name__)
        """,
        env,
    )
    out, _ = probe.communicate(timeout=120)
    assert out.strip().startswith("refused"), out


def test_a_killed_engine_is_replaced_on_next_use_with_a_message(env):
    # The Spark server dies: its supervisor notices, and the next user hears why.
    before, _ = _finish(_python(CONNECT, env))
    os.killpg(before["jvm"], signal.SIGKILL)
    after, err = _finish(_python(CONNECT, env))
    assert after["pid"] != before["pid"]
    # Which process notices first is a race: the supervisor (its 2 s poll) or the next user.
    assert (
        "the last warm Spark engine stopped unexpectedly (the Spark server exited with code" in err
        or f"its server (pid {before['jvm']}) is gone" in err
    ), err
    # Supervisor and server die together (kill -9): the state file is stale, and found out.
    os.kill(after["pid"], signal.SIGKILL)
    os.killpg(after["jvm"], signal.SIGKILL)
    again, err = _finish(_python(CONNECT, env))
    assert again["pid"] not in (before["pid"], after["pid"])
    assert f"replacing the warm Spark engine at sc://localhost:{after['port']}: its supervisor" in err, err
    assert "is gone" in err, err


def test_a_hung_engine_is_replaced(env, engine_dir):
    before, _ = _finish(_python(CONNECT, env))
    os.killpg(before["jvm"], signal.SIGSTOP)  # alive, listening, never answering
    try:
        after, err = _finish(_python(CONNECT, {**env, "ASSETLAKE_ENGINE_HEALTH_TIMEOUT": "5"}))
    finally:
        with contextlib.suppress(ProcessLookupError):  # replacing it killed it
            os.killpg(before["jvm"], signal.SIGCONT)
    assert after["pid"] != before["pid"]
    assert "does not answer (no answer within 5 s)" in err, err


def _cli(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    cli = os.path.join(os.path.dirname(sys.executable), "assetlake")
    return subprocess.run([cli, "engine", *args], env=env, capture_output=True, text=True, timeout=timeout)


IDLE_S = 30


def test_the_cli_starts_and_shows_an_engine_that_stops_itself_when_idle(tmp_path):
    # One engine for both: `engine start` leaves it with no lease holder, so it idles out.
    # The idle clock runs from the moment it is ready, so it must outlast the next command's
    # start: with 8 s, `engine status` on CI's loaded 2 cores found it already gone.
    engine_dir = str(tmp_path / "engine")
    env = cli_env(ASSETLAKE_ENGINE_DIR=engine_dir, ASSETLAKE_ENGINE_IDLE_TIMEOUT=str(IDLE_S))
    lake = ["--lake-root", str(tmp_path / "lake")]
    start = _cli(env, "start", *lake, timeout=600)
    assert start.returncode == 0, start.stderr
    assert "warm engine at sc://localhost:" in start.stdout and "log:" in start.stdout
    status = _cli(env, "status", *lake)
    assert status.returncode == 0 and status.stdout == start.stdout
    engine = WarmEngine(engine_dir)
    supervisor = engine.status().supervisor_pid
    deadline = time.monotonic() + 120
    # The supervisor writes its last log line after the state is gone: wait for it to exit.
    while engine.status() is not None or alive(supervisor):
        assert time.monotonic() < deadline, "the idle engine did not stop"
        time.sleep(1)
    assert f"stopped: idle for {IDLE_S} s" in open(engine.log_path).read()
    gone = _cli(env, "status", *lake)
    assert gone.returncode == 3 and "no warm engine is running" in gone.stdout
    nothing = _cli(env, "stop", *lake)
    assert nothing.returncode == 0 and "no warm engine is running" in nothing.stdout


LOSE_ENGINE = """
    import json, os, signal, threading, time
    import dagster as dg
    from assetlake_dagster import build_definitions
    from assetlake_dagster.defs.resources import SparkDeltaResource

    lake, project = os.environ["LAKE"], os.environ["PROJECT"]
    def run(sql):
        with open(os.path.join(project, "t.sql"), "w") as f:
            f.write("-- materialize delta://s/t\\n\\n" + sql + "\\n")
        defs = build_definitions(project, lake_root=lake)
        job = defs.resolve_implicit_global_asset_job_def()
        return job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)

    assert run("SELECT id FROM range(5)").success
    state = SparkDeltaResource(lake_root=lake).engine_state()
    # Sessions of a resource pointed at the server as a remote one: used (a settings round
    # trip each), never stopped, so that this process's exit stops them after the server
    # is gone. (No query on them: PySpark releases a query's results from a thread pool of
    # its own, with its retries.)
    remote = SparkDeltaResource(remote=state.url, lake_root=lake)
    for session in (remote.get_session(), remote.new_session()):
        assert session.conf.get("spark.app.name")
    threading.Timer(6.0, lambda: os.killpg(state.server_pid, signal.SIGKILL)).start()
    result = run("SELECT id, java_method('java.lang.Thread', 'sleep', 60000L) AS z FROM range(5)")
    failure = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"][0]
    print(json.dumps({"success": result.success, "message": failure.event_specific_data.error.message}))
"""


def test_a_run_that_loses_its_engine_fails_clearly_the_table_stays_and_the_process_exits(env, tmp_path):
    """The engine's server is SIGKILLed mid-run: the run fails with a message, the table
    stays at its prior version, and the process still exits promptly. Stopping its Connect
    sessions at exit must not wait out Spark Connect's retries (minutes) for a server that
    is gone: the suite's own exit hung on it once."""
    project = tmp_path / "project"
    project.mkdir()
    proc = _python(LOSE_ENGINE, {**env, "PROJECT": str(project)})
    try:
        out, _ = _finish(proc, timeout=150)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out["success"]
    assert "the Spark engine went away" in out["message"], out["message"]
    assert "stays at its prior version 0" in out["message"], out["message"]
    assert local_table_version(os.path.join(env["LAKE"], "s", "t")) == 0


def _spark_class(*args: str, log, **env_vars: str) -> subprocess.Popen:
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    # The master, the worker and the executors the worker starts get the suite engines' JIT
    # options through JAVA_TOOL_OPTIONS: SPARK_SUBMIT_OPTS reaches none of them.
    env = cli_env(SPARK_HOME=home, SPARK_NO_DAEMONIZE="1", JAVA_TOOL_OPTIONS=C1_ONLY_OPTIONS, **env_vars)
    return subprocess.Popen(
        [os.path.join(home, "bin", "spark-class"), *args], env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_for_port(port: int, proc: subprocess.Popen, what: str, log_path, timeout: float = 180) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"{what} exited: " + open(log_path).read()[-3000:]
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        assert time.monotonic() < deadline, f"{what} did not listen on {port}: " + open(log_path).read()[-3000:]
        time.sleep(0.5)


def test_a_materialization_runs_on_a_standalone_spark_cluster_with_its_lake_in_a_bucket(tmp_path):
    """ASSETLAKE_SPARK_MASTER points the engine at a standalone master with one worker, and
    the lake is in a bucket (moto's S3 server): what a cluster needs, since its executors
    share no local disk with the driver. The executors get S3A's jars from the driver and
    their credentials from the worker's environment, as on a real cluster."""
    from assetlake_dagster.spark.connect_server import free_port
    from assetlake_dagster.lake.storage import S3Settings
    from assetlake_dagster_tests.s3_server import running_s3_server

    port, log_path = free_port(), tmp_path / "cluster.log"
    master_url = f"spark://127.0.0.1:{port}"
    with running_s3_server(str(tmp_path / "moto.log")) as s3, open(log_path, "w") as log:
        s3.create_bucket("cluster")
        master = _spark_class(
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
            "--webui-port", str(free_port()), log=log,
        )
        worker = None
        try:
            _wait_for_port(port, master, "the master", log_path)
            worker = _spark_class(
                "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1", "--cores", "1",
                "--memory", "2g", "--webui-port", str(free_port()), "--work-dir", str(tmp_path / "work"), log=log,
                **s3.env,
            )
            lake, project = "s3a://cluster/lake", tmp_path / "project"
            project.mkdir()
            (project / "t.sql").write_text("-- materialize delta://s/t\n\nSELECT id, id * 2 AS twice FROM range(100)\n")
            env = cli_env(
                ASSETLAKE_ENGINE_DIR=str(tmp_path / "engine"), ASSETLAKE_SPARK_MASTER=master_url,
                ASSETLAKE_PROJECT_DIR=str(project), ASSETLAKE_LAKE_ROOT=lake, DAGSTER_HOME=str(tmp_path / "home"),
                **s3.env,
            )
            os.makedirs(env["DAGSTER_HOME"])
            dagster = os.path.join(os.path.dirname(sys.executable), "dagster")
            run = subprocess.run(
                [dagster, "asset", "materialize", "-m", "assetlake_dagster.definitions", "--select", "s/t"],
                env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
            )
            assert run.returncode == 0, run.stderr[-3000:]
            state = WarmEngine(env["ASSETLAKE_ENGINE_DIR"]).status()
            assert state is not None and state.master == master_url
            import deltalake

            options = S3Settings.from_env(s3.env).storage_options(s3.env)
            rows = deltalake.DeltaTable("s3://cluster/lake/s/t", storage_options=options).to_pyarrow_table().to_pylist()
            assert len(rows) == 100 and sum(r["twice"] for r in rows) == 9900
            # The executors ran on the worker (it made an application folder for the engine)
            # and wrote the table's files into the bucket.
            assert any((tmp_path / "work").iterdir())
            assert any(key.endswith(".parquet") for key in s3.keys("cluster", "lake/s/t/"))
        finally:
            WarmEngine(str(tmp_path / "engine")).stop()
            # The cluster's own shutdown is Spark's: a worker still stopping its executor after
            # a minute (seen once on two loaded cores) is killed, not waited for.
            for proc in (worker, master):
                if proc is not None:
                    stop_process_group(proc, timeout=60)


def test_the_cli_stops_a_running_engine(env):
    # Last in the module: it reuses the module's engine when still up (no JVM start).
    lake = ["--lake-root", env["LAKE"]]
    assert _cli(env, "start", *lake, timeout=600).returncode == 0
    stop = _cli(env, "stop", *lake)
    assert stop.returncode == 0 and "stopped the warm engine" in stop.stdout, stop.stderr
    assert _cli(env, "status", *lake).returncode == 3
