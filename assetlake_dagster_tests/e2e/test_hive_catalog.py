"""A persistent catalog (``ASSETLAKE_CATALOG=hive``) across real processes and a client that is not ours.

One lake and its embedded Hive metastore, in order:

1. concurrent ``dagster asset materialize`` runs on the warm engine register their tables
   (different tables at once, then the same table at once): one entry each, at the lake path;
2. a table committed without its registration (a run killed in between) is registered by
   ``assetlake catalog sync``; a name pointing at another location is refused, not re-pointed;
   an engine on the other catalog is refused;
3. the engine also serves JDBC (``ASSETLAKE_JDBC_PORT`` where the runs start; ``assetlake jdbc``
   holds it): a client that is not ours (impyla, over the HiveServer2 protocol) reads a table in
   a loop while a ``dagster asset materialize`` run merges into it, and sees the version before
   the run's commit, then the one after, never a mix; ``beeline`` lists the tables;
4. after ``assetlake engine stop``: the standalone Thrift JDBC server on loopback, and Hive's
   ``beeline``, list the tables and read them with their comments and the ``_current`` view;
5. a fresh PySpark process with only the metastore configured sees the same.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.spark.engine import EngineError, WarmEngine
from assetlake_dagster.spark.connect_server import free_port
from assetlake_dagster_tests.helpers import cli_env, env_restored

DAGSTER = os.path.join(os.path.dirname(sys.executable), "dagster")
ASSETLAKE = os.path.join(os.path.dirname(sys.executable), "assetlake")

FILES = {
    "customers.sql": """\
        -- materialize delta://raw/customers key=id
        -- description Customers as the shop knows them.
        -- column tier "Loyalty tier: gold or silver."

        SELECT * FROM VALUES (1, 'ann', 'gold'), (2, 'bob', 'silver') AS t(id, name, tier)
        """,
    "orders.sql": """\
        -- materialize delta://raw/orders append

        SELECT * FROM VALUES (10, 1, 5.0), (11, 2, 7.5) AS t(order_id, customer_id, amount)
        """,
    "dim_customer.sql": """\
        -- materialize delta://dim/customer key=id history track=name,tier
        -- description Customer dimension with full change history.

        SELECT id, name, tier FROM raw.customers
        """,
    # Every run rewrites every row's `round` in one merge: a reader sees one round, never two.
    "wide.sql": """\
        -- materialize delta://mart/wide key=id
        -- $round (int) = 1

        SELECT id, :round AS round, repeat('x', 100) AS pad FROM range(0, 200000)
        """,
    # Never run here: its table is written by hand, as a run killed after its commit leaves it.
    "late.sql": """\
        -- materialize delta://raw/late

        SELECT 1 AS x
        """,
}


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hive")
    project = folder / "project"
    project.mkdir()
    for name, text in FILES.items():
        (project / name).write_text(textwrap.dedent(text))
    engine_dir = str(folder / "engine")
    env = cli_env(
        ASSETLAKE_CATALOG="hive",
        ASSETLAKE_JDBC_PORT=str(free_port()),  # the engine the first run starts serves JDBC too
        ASSETLAKE_ENGINE_DIR=engine_dir,
        ASSETLAKE_LAKE_ROOT=str(folder / "lake"),
        ASSETLAKE_PROJECT_DIR=str(project),
        DAGSTER_HOME=str(folder / "home"),
    )
    os.makedirs(env["DAGSTER_HOME"])
    # Connect sessions made here mark this process as a Connect client, and the worker's later
    # tests use classic sessions: the mark goes with this module (as in dagster/test_spark_connect.py).
    with env_restored("SPARK_CONNECT_MODE_ENABLED"):
        try:
            yield env
        finally:
            WarmEngine(engine_dir).stop()


def _run(env, *args):
    proc = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{args}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def _materialize_at_once(env, *selections):
    """One ``dagster asset materialize`` process per selection, all started together."""
    failures = []

    def one(index, selection):
        # A Dagster home each: two CLI processes creating one SQLite storage at once race.
        home = os.path.join(env["DAGSTER_HOME"], f"run-{index}")
        os.makedirs(home, exist_ok=True)
        try:
            _run({**env, "DAGSTER_HOME": home}, DAGSTER, "asset", "materialize", "-m", "assetlake_dagster.definitions", "--select", selection)
        except AssertionError as exc:
            failures.append(str(exc))

    threads = [threading.Thread(target=one, args=(i, s)) for i, s in enumerate(selections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[0]


def _engine_session(env):
    from assetlake_dagster.defs.resources import SparkDeltaResource

    resource = SparkDeltaResource(lake_root=env["ASSETLAKE_LAKE_ROOT"], catalog="hive", mode="engine")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASSETLAKE_ENGINE_DIR", env["ASSETLAKE_ENGINE_DIR"])
        return resource, resource.new_session()


def _location(session, name):
    rows = session.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    return next(r.data_type for r in rows if r.col_name == "Location").removeprefix("file:")


def test_runs_register_their_tables_in_the_metastore_at_once(lake):
    _materialize_at_once(lake, "raw/customers", "raw/orders")  # different tables at once
    _materialize_at_once(lake, "dim/customer", "dim/customer")  # the same table at once
    resource, session = _engine_session(lake)
    root = resource.lake.root
    try:
        assert session.catalog.currentCatalog() == "spark_catalog"
        assert session.conf.get("spark.sql.catalogImplementation") == "hive"
        tables = {(r.namespace, r.tableName) for r in session.sql("SHOW TABLES IN raw").collect()}
        tables |= {(r.namespace, r.tableName) for r in session.sql("SHOW TABLES IN dim").collect()}
        assert tables == {("raw", "customers"), ("raw", "orders"), ("dim", "customer"), ("dim", "customer_current")}
        for name, folder in [("raw.customers", "raw/customers"), ("raw.orders", "raw/orders"), ("dim.customer", "dim/customer")]:
            assert _location(session, name) == f"{root}/{folder}"
            assert session.catalog.getTable(name).tableType == "EXTERNAL"
        assert session.table("dim.customer_current").count() == 2
    finally:
        resource.release_session(session)


def test_sync_registers_a_table_committed_without_its_registration_and_never_re_points(lake, tmp_path):
    resource, session = _engine_session(lake)
    try:
        # What a run killed between its Delta commit and its registration leaves behind.
        session.sql("SELECT 1 AS x").write.format("delta").save(f"{resource.lake.root}/raw/late")
        assert not session.catalog.tableExists("raw.late")
        out = _run(lake, ASSETLAKE, "catalog", "sync")
        assert "registered         raw.late" in out
        assert "already registered dim.customer (and dim.customer_current)" in out
        assert session.table("raw.late").first().x == 1

        from assetlake_dagster.lake.registration import register_table
        from assetlake_dagster.spec import TableUri

        # A name someone registered at another location: the lake's table of that name is
        # refused, and the name keeps pointing where it did.
        elsewhere = str(tmp_path / "elsewhere" / "moved")
        session.sql("SELECT 2 AS x").write.format("delta").save(elsewhere)
        session.sql(f"CREATE TABLE raw.moved USING DELTA LOCATION '{elsewhere}'")
        moved = TableUri("raw", "moved")
        session.sql("SELECT 3 AS x").write.format("delta").save(resource.lake.table_path(moved))
        with pytest.raises(ConfigError) as refused:
            register_table(session, resource.lake, moved)
        message = str(refused.value)
        assert elsewhere in message and resource.lake.table_path(moved) in message
        assert "DROP TABLE raw.moved" in message
        assert session.table("raw.moved").first().x == 2

        # Another lake's schema of the same name: refused too, nothing moved.
        other = Lake(str(tmp_path / "other-lake"))
        session.sql("SELECT 4 AS x").write.format("delta").save(other.table_path(TableUri("raw", "late")))
        with pytest.raises(ConfigError, match="schema raw is in the Hive metastore at"):
            register_table(session, other, TableUri("raw", "late"))
        assert session.table("raw.late").first().x == 1
        session.sql("DROP TABLE raw.moved")
    finally:
        resource.release_session(session)

    # The engine of this lake runs the Hive catalog: asking it for the session catalog is refused.
    with pytest.raises(EngineError, match="registers tables in the 'hive' catalog, not 'in-memory'"):
        WarmEngine(lake["ASSETLAKE_ENGINE_DIR"], master="local[*]").ensure()


WIDE_ROWS = 200000
READ_WIDE = "SELECT count(*), min(round), max(round) FROM mart.wide"


def _read_until(cursor, stop, reads):
    """Read ``mart.wide`` back to back until ``stop`` is set: (started, ended, row) each."""
    while not stop.is_set():
        started = time.time()
        cursor.execute(READ_WIDE)
        reads.append((started, time.time(), tuple(cursor.fetchall()[0])))


def _commit_window(table_path, version):
    """When commit ``version`` of a Delta table ran (epoch seconds): from its MERGE's start to its commit."""
    with open(os.path.join(table_path, "_delta_log", f"{version:020d}.json"), encoding="utf-8") as f:
        info = next(json.loads(line)["commitInfo"] for line in f if line.startswith('{"commitInfo"'))
    assert info["operation"] == "MERGE", info
    committed = info["timestamp"] / 1000
    return committed - int(info["operationMetrics"]["executionTimeMs"]) / 1000, committed


def test_a_jdbc_client_reads_a_table_while_a_run_merges_into_it(lake):
    from impala.dbapi import connect

    from assetlake_dagster.spark.thrift_server import beeline_path

    port = int(lake["ASSETLAKE_JDBC_PORT"])
    wide = os.path.join(lake["ASSETLAKE_LAKE_ROOT"], "mart", "wide")
    _materialize_at_once(lake, "mart/wide")  # round 1 (the engine runs already, with JDBC)
    status = _run(lake, ASSETLAKE, "engine", "status")
    assert f"jdbc:         jdbc:hive2://127.0.0.1:{port}/default" in status, status
    # As docs/catalog.md runs it: `assetlake jdbc` finds the engine serving JDBC and holds it until stopped.
    holder = subprocess.Popen([ASSETLAKE, "jdbc"], env=lake, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = holder.stdout.readline()
        assert banner.startswith(f"JDBC at jdbc:hive2://127.0.0.1:{port}/default, served by the lake's warm engine"), (
            banner + holder.stderr.read() if holder.poll() is not None else banner
        )
        # Closed here, not left to the cursor's __del__ (network calls from whatever garbage
        # collection comes): left to it, this module run alone ended twice in CPython 3.11.7's
        # "AST constructor recursion depth mismatch" as pytest compiled a module afterwards.
        connection = connect(host="127.0.0.1", port=port, auth_mechanism="PLAIN", user="bi", password="any")
        cursor = connection.cursor()
        stop, reads = threading.Event(), []
        reader = threading.Thread(target=_read_until, args=(cursor, stop, reads))
        reader.start()
        try:
            while not reads:  # the reader is under way before the run starts
                time.sleep(0.1)
            second = json.dumps({"ops": {"sql__mart__wide": {"config": {"round": 2}}}})
            _run({**lake, "DAGSTER_HOME": os.path.join(lake["DAGSTER_HOME"], "run-0")}, DAGSTER, "asset", "materialize",
                 "-m", "assetlake_dagster.definitions", "--select", "mart/wide", "--config-json", second)
            settled = len(reads)
            while len(reads) < settled + 2:
                time.sleep(0.1)
        finally:
            stop.set()
            reader.join(timeout=300)
        cursor.execute("SHOW TABLES IN mart")
        tables = cursor.fetchall()
        cursor.close()
        connection.close()
        assert ("mart", "wide", False) in tables
    finally:
        holder.terminate()
        assert holder.wait(timeout=60) == 0, holder.stderr.read()

    rows = [row for _, _, row in reads]
    before, after = (WIDE_ROWS, 1, 1), (WIDE_ROWS, 2, 2)
    assert set(rows) <= {before, after}, f"a read saw neither whole version: {sorted(set(rows) - {before, after})}"
    flipped = rows.index(after)
    assert rows[:flipped] == [before] * flipped and rows[flipped:] == [after] * (len(rows) - flipped), rows
    merge_started, committed = _commit_window(wide, 1)
    during = [read for read in reads if read[0] < committed and read[1] > merge_started]
    assert during, f"no read overlapped the merge ({merge_started:.3f}..{committed:.3f}): {reads}"
    assert all(row == before for started, ended, row in reads if ended < committed)
    assert all(row == after for started, ended, row in reads if started > committed + 1)

    # A JDBC driver proper (Hive's, in beeline) lists the same tables from the engine.
    client = subprocess.run(
        [beeline_path(), "-u", f"jdbc:hive2://127.0.0.1:{port}/default", "-n", "reader", "--silent=true",
         "--outputformat=tsv2", "-e", "SHOW TABLES IN mart; SELECT count(*) FROM mart.wide WHERE round = 2;"],
        env=lake, capture_output=True, text=True, timeout=300,
    )
    assert client.returncode == 0, client.stderr[-3000:]
    lines = [line.rstrip("\t").split("\t") for line in client.stdout.splitlines()]
    assert ["mart", "wide", "false"] in lines and lines[-1] == [str(WIDE_ROWS)], lines

    # An engine that serves JDBC elsewhere is not taken for this one.
    with pytest.raises(EngineError, match="serves JDBC at jdbc:hive2://127.0.0.1:"):
        from assetlake_dagster.spark.jdbc_endpoint import JdbcEndpoint

        WarmEngine(lake["ASSETLAKE_ENGINE_DIR"], spark_conf={"spark.sql.catalogImplementation": "hive"},
                   jdbc=JdbcEndpoint(free_port())).ensure()


BEELINE_SQL = (
    "SHOW TABLES IN raw; SHOW TABLES IN dim; DESCRIBE TABLE EXTENDED raw.customers; "
    "SELECT id, tier FROM dim.customer_current ORDER BY id;"
)

FRESH_SESSION = """
    import json, os
    from assetlake_dagster.lake.catalog import CatalogSettings
    from assetlake_dagster.spark.session import build_spark_session
    catalog = CatalogSettings.resolve("hive", lake_root=os.environ["ASSETLAKE_LAKE_ROOT"])
    spark = build_spark_session(master="local[1]", spark_conf=catalog.spark_conf())
    rows = spark.sql("DESCRIBE TABLE EXTENDED raw.customers").collect()
    print(json.dumps({
        "tables": sorted(r.tableName for r in spark.sql("SHOW TABLES IN raw").collect()),
        "comment": next(r.data_type for r in rows if r.col_name == "Comment"),
        "tier": next(r.comment for r in rows if r.col_name == "tier"),
        "current": spark.table("dim.customer_current").count(),
    }))
"""


def test_a_jdbc_client_and_a_fresh_spark_session_see_the_tables_after_the_engine_stops(lake):
    from assetlake_dagster.defs.resources import SparkDeltaResource
    from assetlake_dagster.cli.jdbc import start_thrift_server
    from assetlake_dagster.spark.thrift_server import beeline_path

    resource = SparkDeltaResource(lake_root=lake["ASSETLAKE_LAKE_ROOT"], catalog="hive")
    with pytest.MonkeyPatch.context() as patch, pytest.raises(ConfigError, match="assetlake engine stop"):
        patch.setenv("ASSETLAKE_ENGINE_DIR", lake["ASSETLAKE_ENGINE_DIR"])
        start_thrift_server(resource, free_port())  # the engine still holds the embedded metastore
    assert "stopped the warm engine" in _run(lake, ASSETLAKE, "engine", "stop")

    # As docs/catalog.md runs it: the command line, then `kill`.
    port = free_port()
    server = subprocess.Popen(
        [ASSETLAKE, "jdbc", "--standalone", "--port", str(port)],
        env=lake, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        banner = server.stdout.readline()  # printed once the server listens (or the error)
        assert f"at jdbc:hive2://127.0.0.1:{port}/default" in banner, banner + server.stdout.read()
        client = subprocess.run(
            [beeline_path(), "-u", f"jdbc:hive2://127.0.0.1:{port}/default", "-n", "reader", "--silent=true",
             "--outputformat=tsv2", "-e", BEELINE_SQL],
            env=lake, capture_output=True, text=True, timeout=300,
        )
    finally:
        server.terminate()
        assert server.wait(timeout=120) == 0
    # The server's JVM went with it: the port is free again (an orphan would keep it).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))
    assert client.returncode == 0, client.stderr[-3000:]
    lines = [line.rstrip("\t").split("\t") for line in client.stdout.splitlines()]
    assert ["raw", "customers", "false"] in lines and ["raw", "orders", "false"] in lines and ["raw", "late", "false"] in lines
    assert ["dim", "customer", "false"] in lines and ["dim", "customer_current", "false"] in lines
    assert ["tier", "string", "Loyalty tier: gold or silver."] in lines
    assert ["Comment", "Customers as the shop knows them."] in lines
    assert ["Type", "EXTERNAL"] in lines
    assert lines[-2:] == [["1", "gold"], ["2", "silver"]]

    fresh = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FRESH_SESSION)], env=lake, capture_output=True, text=True, timeout=600
    )
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert json.loads(fresh.stdout.strip().splitlines()[-1]) == {
        "tables": ["customers", "late", "orders"],
        "comment": "Customers as the shop knows them.",
        "tier": "Loyalty tier: gold or silver.",
        "current": 2,
    }
