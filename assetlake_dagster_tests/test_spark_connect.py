"""Layer 4/5 over Spark Connect: Dagster runs against a real local Spark Connect server.

The server is its own JVM, started from the installed PySpark with the Delta jars
(:mod:`assetlake_dagster.connect_server`); this process holds only a Connect client
session, beside the classic session other modules use. Never skipped: if the server
cannot start, the fixture fails with the server's log tail.
"""

import json
import os

import dagster as dg
import deltalake
import pytest

from assetlake_dagster.build import build_definitions
from assetlake_dagster.connect_server import ConnectServerError, free_port, start_connect_server
from assetlake_dagster.io_manager import DeltaIOManager, managed_write
from assetlake_dagster.resources import SparkDeltaResource
from assetlake_dagster.spark_session import connect_session, is_connect_session

PROJECT = os.path.join(os.path.dirname(__file__), "projects", "pipeline")
ALL = ["src/people", "mart/people_clean", "mart/scores", "mart/score_log", "mart/manual_copy"]
SERVER_APP_NAME = "assetlake Spark Connect"


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    """A Spark Connect server with Delta on a free loopback port, for this module."""
    # Creating a Connect session flags the whole process as a Connect client (as PySpark's
    # own builder does); later modules expect a classic process, so the flag is restored.
    mode_before = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    try:
        server = start_connect_server(
            free_port(),
            master="local[2]",
            warehouse_dir=str(tmp_path_factory.mktemp("connect-warehouse")),
            log_path=str(tmp_path_factory.mktemp("connect-log") / "server.log"),
        )
    except ConnectServerError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server.url
    finally:
        connect_session(server.url).stop()
        server.stop()
        if mode_before is None:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        else:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = mode_before


@pytest.fixture
def remote(connect_url, lake_root):
    """The resource pointed at the server, and its session (checked to be Connect)."""
    resource = SparkDeltaResource(remote=connect_url, lake_root=lake_root)
    session = resource.get_session()
    assert is_connect_session(session)
    # The settings come from the server's JVM, not from any session in this process.
    assert session.conf.get("spark.app.name") == SERVER_APP_NAME
    return resource, session


def run(defs, selection, instance, raise_on_error=True):
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance,
        asset_selection=[dg.AssetKey(s.split("/")) for s in selection],
        raise_on_error=raise_on_error,
    )
    metadata = {
        e.asset_key.to_user_string(): e.step_materialization_data.materialization.metadata
        for e in result.get_asset_materialization_events()
    }
    return result, metadata


def history(spark, lake_root, table):
    """``(version, operation, userMetadata)`` newest first, read through the server."""
    path = os.path.join(os.path.realpath(lake_root), *table.split("/"))
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return [(r.version, r.operation, r.userMetadata) for r in rows]


def stamp(run_id, table):
    return json.dumps(
        {"assetlake": {"run_id": run_id, "root_run_id": run_id, "asset": table, "partition": None}}
    )


def test_materialize_all_twice_over_spark_connect(remote, lake_root):
    resource, spark = remote
    spark.createDataFrame([(1, 0.5), (2, 1.0), (3, 2.0)], "id BIGINT, weight DOUBLE").write.format(
        "delta"
    ).save(os.path.join(lake_root, "ext", "weights"))
    defs = build_definitions(PROJECT, spark=resource)
    instance = dg.DagsterInstance.ephemeral()

    first_run, first = run(defs, ALL, instance)
    assert first_run.success and set(first) == set(ALL)
    clean = first["mart/people_clean"]
    assert clean["delta/version"].value == 0
    assert clean["delta/operation"].value == "WRITE"
    assert clean["dagster/row_count"].value == 3
    assert clean["assetlake/upstream_versions"].value == {"delta://src/people": 0}
    assert first["mart/scores"]["assetlake/upstream_versions"].value == {
        "delta://ext/weights": 0,
        "delta://mart/people_clean": 0,
    }

    # Second run, as in classic mode: merges find nothing to change (no version), replace
    # rewrites, append appends, the manual file inserts again.
    second_run, second = run(defs, ALL, instance)
    assert second_run.success
    for merged in ("src/people", "mart/people_clean"):
        assert second[merged]["delta/committed"].value is False
        assert second[merged]["delta/version"].value == 0
    assert second["mart/scores"]["delta/version"].value == 1
    assert second["mart/score_log"]["dagster/row_count"].value == 2
    assert second["mart/manual_copy"]["delta/version"].value == 2  # CREATE, INSERT, INSERT
    assert second["mart/manual_copy"]["dagster/row_count"].value == 6

    a, b = first_run.run_id, second_run.run_id
    assert history(spark, lake_root, "src/people") == [(0, "WRITE", stamp(a, "src/people"))]
    assert history(spark, lake_root, "mart/people_clean") == [(0, "WRITE", stamp(a, "mart/people_clean"))]
    assert history(spark, lake_root, "mart/scores") == [
        (1, "WRITE", stamp(b, "mart/scores")),
        (0, "WRITE", stamp(a, "mart/scores")),
    ]
    assert history(spark, lake_root, "mart/score_log") == [
        (1, "WRITE", stamp(b, "mart/score_log")),
        (0, "WRITE", stamp(a, "mart/score_log")),
    ]

    # Readable through the server and by an independent Delta reader on the same folder.
    people = spark.read.format("delta").load(os.path.join(lake_root, "mart", "people_clean"))
    assert sorted((r.id, r.display_name) for r in people.collect()) == [(1, "ann"), (2, "unknown"), (3, "cy")]
    scores = deltalake.DeltaTable(os.path.join(lake_root, "mart", "scores")).to_pyarrow_table()
    assert sorted(scores.column("id").to_pylist()) == [1, 2, 3]
    assert set(scores.column("label").to_pylist()) == {"scored"}


def test_merge_over_spark_connect_rejects_duplicates_and_merges_changes(remote, lake_root):
    resource, spark = remote
    batches = {
        1: [(1, "a"), (2, "b")],
        2: [(1, "a"), (1, "again"), (3, "c")],  # duplicate key 1: nothing may be written
        3: [(1, "a"), (2, "B"), (3, "c")],  # one update, one insert, one unchanged
    }
    state = {"batch": 1, "sessions": []}

    @dg.asset(key=["py", "things"], metadata=managed_write("merge", key=["id"]))
    def things(spark: SparkDeltaResource):
        session = spark.get_session()
        state["sessions"].append(is_connect_session(session))
        return session.createDataFrame(batches[state["batch"]], "id INT, v STRING")

    resources = {"spark": resource, "io_manager": DeltaIOManager(spark=resource)}
    instance = dg.DagsterInstance.ephemeral()
    path = os.path.join(lake_root, "py", "things")

    def materialize(batch):
        state["batch"] = batch
        return dg.materialize([things], resources=resources, instance=instance, raise_on_error=False)

    first = materialize(1)
    assert first.success
    assert history(spark, lake_root, "py/things") == [(0, "WRITE", stamp(first.run_id, "py/things"))]

    rejected = materialize(2)
    assert not rejected.success
    failure = rejected.get_step_failure_events()[0].event_specific_data.error
    assert "duplicate keys, e.g. (id=1) x2" in failure.message
    assert "Nothing was written." in failure.message
    assert [v for v, _, _ in history(spark, lake_root, "py/things")] == [0]

    merged = materialize(3)
    assert merged.success
    meta = merged.get_asset_materialization_events()[0].step_materialization_data.materialization.metadata
    assert meta["delta/version"].value == 1 and meta["delta/operation"].value == "MERGE"
    assert meta["assetlake/rows_written"].value == 2
    assert history(spark, lake_root, "py/things")[0] == (1, "MERGE", stamp(merged.run_id, "py/things"))
    rows = spark.read.format("delta").load(path).collect()
    assert sorted((r.id, r.v) for r in rows) == [(1, "a"), (2, "B"), (3, "c")]
    assert state["sessions"] == [True, True, True]


def test_spark_errors_over_spark_connect_name_the_file_and_line(remote, lake_root, tmp_path):
    resource, _ = remote
    (tmp_path / "broken.sql").write_text(
        "-- materialize delta://mart/broken\n\nSELECT id, no_such_function(id) AS x\nFROM VALUES (1), (2) AS v(id)\n"
    )
    defs = build_definitions(str(tmp_path), spark=resource)
    result, _ = run(defs, ["mart/broken"], dg.DagsterInstance.ephemeral(), raise_on_error=False)
    assert not result.success
    failure = result.get_step_failure_events()[0].event_specific_data.error
    assert "broken.sql:3: Spark rejected the statement" in failure.message
    assert "no_such_function" in failure.message
    assert not os.path.exists(os.path.join(lake_root, "mart", "broken"))


def test_history_over_spark_connect(remote, lake_root, tmp_path):
    """SCD2 over Connect: numbered loads, exact history rows, and the ``_current`` view."""
    resource, spark = remote
    project = tmp_path / "project"
    project.mkdir()
    (project / "dim_customer.sql").write_text(
        "-- materialize delta://dim/customer key=id history track=tier deletes=close\n\n"
        "SELECT id, name, tier FROM raw.customers\n"
    )
    # Read through the view's name, as a user writes it; it must resolve on the server.
    (project / "tier_counts.sql").write_text(
        "-- materialize delta://mart/tier_counts\n\n"
        "SELECT tier, count(*) AS customers FROM dim.customer_current GROUP BY tier\n"
    )
    defs = build_definitions(str(project), spark=resource)
    instance = dg.DagsterInstance.ephemeral()
    dim_path = os.path.join(os.path.realpath(lake_root), "dim", "customer")
    selection = ["dim/customer", "mart/tier_counts"]

    def load(rows):
        df = spark.createDataFrame(rows, "id INT, name STRING, tier STRING")
        df.write.format("delta").mode("overwrite").save(os.path.join(lake_root, "raw", "customers"))
        result, metadata = run(defs, selection, instance)
        assert result.success
        return result, metadata["dim/customer"]

    def table():
        query = (
            "SELECT id, name, tier, unix_micros(valid_from), unix_micros(valid_to), is_current "
            f"FROM delta.`{dim_path}`"
        )
        return sorted(tuple(r) for r in spark.sql(query).collect())

    def tier_counts():
        rows = spark.read.format("delta").load(os.path.join(lake_root, "mart", "tier_counts")).collect()
        return sorted(tuple(r) for r in rows)

    # load 1: initial
    first_run, first = load([(1, "ann", "gold"), (2, "bob", "silver"), (3, "cy", "bronze")])
    assert (first["delta/version"].value, first["delta/operation"].value) == (0, "WRITE")
    ((v1,),) = {(r[3],) for r in table()}
    assert table() == [
        (1, "ann", "gold", v1, None, True),
        (2, "bob", "silver", v1, None, True),
        (3, "cy", "bronze", v1, None, True),
    ]

    # load 2: 1 changes tier (tracked), 2 is gone (closed), 3 only renames (untracked), 4 is new
    second_run, second = load([(1, "ann", "platinum"), (3, "CY", "bronze"), (4, "di", "gold")])
    assert (second["delta/version"].value, second["delta/operation"].value) == (1, "MERGE")
    assert second["assetlake/rows_written"].value == 4  # 2 versions closed, 2 opened
    v2 = max(r[3] for r in table())
    assert v2 > v1
    after_2 = [
        (1, "ann", "gold", v1, v2, False),  # closed exactly where the new version opens
        (1, "ann", "platinum", v2, None, True),
        (2, "bob", "silver", v1, v2, False),
        (3, "cy", "bronze", v1, None, True),
        (4, "di", "gold", v2, None, True),
    ]
    assert table() == after_2
    current = spark.sql(f"SELECT id, count(*) FROM delta.`{dim_path}` WHERE is_current GROUP BY id").collect()
    assert sorted(tuple(r) for r in current) == [(1, 1), (3, 1), (4, 1)]
    # The companion view lives in the server's session catalog and holds the current rows.
    view = spark.sql("SELECT id, name, tier FROM dim.customer_current").collect()
    assert sorted(tuple(r) for r in view) == [(1, "ann", "platinum"), (3, "cy", "bronze"), (4, "di", "gold")]
    assert tier_counts() == [("bronze", 1), ("gold", 1), ("platinum", 1)]

    # load 3: the same snapshot again: no new version
    _, third = load([(1, "ann", "platinum"), (3, "CY", "bronze"), (4, "di", "gold")])
    assert third["delta/committed"].value is False and third["delta/version"].value == 1
    assert table() == after_2
    assert history(spark, lake_root, "dim/customer") == [
        (1, "MERGE", stamp(second_run.run_id, "dim/customer")),
        (0, "WRITE", stamp(first_run.run_id, "dim/customer")),
    ]
