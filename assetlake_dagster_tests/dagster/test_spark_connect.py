"""Layer 4/5 over Spark Connect: Dagster runs against a real local Spark Connect server.

The server is the suite's warm engine (its own JVM, PySpark's Spark Connect server with the
Delta jars, :mod:`assetlake_dagster.spark.engine`) named as a remote URL, as
``ASSETLAKE_SPARK_REMOTE`` would; this process holds only Connect client sessions, beside
the classic session other modules use. Never skipped: if the server cannot start, the
fixture fails with the server's log tail.
"""

import datetime as dt
import gc
import json
import os

import dagster as dg
import deltalake
import pytest

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.spark.engine import EngineError
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.defs.io_manager import DeltaIOManager
from assetlake_dagster.defs.write_contract import managed_write
from assetlake_dagster.defs.partitions import with_partition_key
from assetlake_dagster.spec import PARTITION_COLUMN
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.spark.session import (
    connect_session,
    driver_on_this_machine,
    is_connect_session,
    local_checkpoint,
    release_checkpoint,
)
from assetlake_dagster_tests.helpers import PROJECTS, c1_only_engine, env_restored, python_local_zone

PROJECT = os.path.join(PROJECTS, "pipeline")
ALL = ["src/people", "mart/people_clean", "mart/scores", "mart/score_log", "mart/manual_copy"]
SERVER_APP_NAME = "assetlake Spark Connect server"


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    """The suite's warm engine, used as a remote Spark Connect server (as
    ``ASSETLAKE_SPARK_REMOTE`` would name it): the subprocess tests share it too."""
    # Creating a Connect session flags the whole process as a Connect client (as PySpark's
    # own builder does); later modules expect a classic process, so the flag is restored.
    with env_restored("SPARK_CONNECT_MODE_ENABLED"):
        lake_root = str(tmp_path_factory.mktemp("connect-lake"))
        try:
            with c1_only_engine():  # the first test to use the suite's engine may start it
                state = SparkDeltaResource(mode="engine", lake_root=lake_root).engine_state()
        except EngineError as exc:
            pytest.fail(str(exc), pytrace=False)
        try:
            yield state.url
        finally:
            connect_session(state.url).stop()


@pytest.fixture
def remote(connect_url, lake_root):
    """The resource pointed at the server, and its session (checked to be Connect)."""
    resource = SparkDeltaResource(remote=connect_url, lake_root=lake_root)
    session = resource.get_session()
    assert is_connect_session(session)
    # The settings come from the server's JVM, not from any session in this process.
    assert session.conf.get("spark.app.name") == SERVER_APP_NAME
    # A server on loopback: the metadata's row counts come from the lake's checksum files.
    assert driver_on_this_machine(session)
    return resource, session


def run(defs, selection, instance, raise_on_error=True, tags=None):
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance,
        asset_selection=[dg.AssetKey(s.split("/")) for s in selection],
        raise_on_error=raise_on_error,
        tags=tags,
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
    return [(r.version, r.operation, _run_stamp(r.userMetadata)) for r in rows]


def _run_stamp(user_metadata):
    """The commit's stamp without the asset's code version (a file hash, checked elsewhere)
    and its writer (this process: the runs execute in it); ``None`` for a commit without one."""
    if user_metadata is None:
        return None
    stamp = json.loads(user_metadata)
    stamp["assetlake"].pop("code_version", None)
    assert stamp["assetlake"].pop("writer").split(":")[-2] == str(os.getpid())
    return json.dumps(stamp)


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
    # people_clean's `-- description` is its table comment from its one first commit.
    assert clean["delta/operation"].value == "CREATE TABLE AS SELECT"
    assert clean["dagster/row_count"].value == 3
    assert clean["assetlake/upstream_versions"].value == {"delta://src/people": 0}
    assert first["mart/scores"]["assetlake/upstream_versions"].value == {
        "delta://ext/weights": 0,
        "delta://mart/people_clean": 0,
    }

    # Second run, forced, as in classic mode: merges find nothing to change (no version),
    # replace rewrites, append appends, the manual file inserts again.
    second_run, second = run(defs, ALL, instance, tags={"assetlake/force": "true"})
    assert second_run.success
    for merged, current in (("src/people", 0), ("mart/people_clean", 0)):
        assert second[merged]["delta/committed"].value is False
        assert second[merged]["delta/version"].value == current
    assert second["mart/scores"]["delta/version"].value == 1
    assert second["mart/score_log"]["dagster/row_count"].value == 2
    assert second["mart/manual_copy"]["delta/version"].value == 2  # CREATE, INSERT, INSERT
    assert second["mart/manual_copy"]["dagster/row_count"].value == 6

    a, b = first_run.run_id, second_run.run_id
    assert history(spark, lake_root, "src/people") == [(0, "WRITE", stamp(a, "src/people"))]
    assert history(spark, lake_root, "mart/people_clean") == [
        (0, "CREATE TABLE AS SELECT", stamp(a, "mart/people_clean")),
    ]
    assert history(spark, lake_root, "mart/scores") == [
        (1, "WRITE", stamp(b, "mart/scores")),
        (0, "WRITE", stamp(a, "mart/scores")),
    ]
    assert history(spark, lake_root, "mart/score_log") == [
        (1, "WRITE", stamp(b, "mart/score_log")),
        (0, "WRITE", stamp(a, "mart/score_log")),
    ]

    # Third run, not forced: nothing the SQL files read changed, so no write reaches the server.
    third_run, third = run(defs, ALL[1:4], instance)
    assert third_run.success
    for table in ("mart/people_clean", "mart/scores", "mart/score_log"):
        assert "inputs unchanged since version" in third[table]["assetlake/skipped"].value
    assert [v for v, _, _ in history(spark, lake_root, "mart/scores")] == [1, 0]

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


BATCH_PROJECT = os.path.join(PROJECTS, "connect_batch")
AUDITED_PROJECT = os.path.join(PROJECTS, "connect_audited")
DAYS = [f"2024-01-0{d}" for d in range(1, 6)]


def day_events(spark, lake_root):
    """``raw/events``: day N of January 2024 has N events, ids ``N*100+i``."""
    rows = [
        (d * 100 + i, dt.date(2024, 1, d), float(i))
        for d in range(1, len(DAYS) + 1)
        for i in range(d)
    ]
    spark.createDataFrame(rows, "event_id BIGINT, day DATE, amount DOUBLE").write.format("delta").save(
        os.path.join(lake_root, "raw", "events")
    )
    return {f"2024-01-0{d}": sorted(r[0] for r in rows if r[1].day == d) for d in range(1, len(DAYS) + 1)}


def by_partition(spark, lake_root, table):
    """``{partition key: rows}`` of a lake table, read through the server."""
    rows = spark.read.format("delta").load(os.path.join(lake_root, *table.split("/"))).collect()
    grouped = {}
    for r in rows:
        grouped.setdefault(r[PARTITION_COLUMN], []).append(r)
    return grouped


def test_a_checkpoint_is_released_by_its_writer_never_by_the_garbage_collector(remote):
    """PySpark releases a checkpoint's server-side rows from ``__del__``: a gRPC call on
    whatever thread the garbage collector happens to run. Run inside gRPC's own start of a
    thread, such a call deadlocked a merge of this suite (the run hung, both cores idle). Ours
    are released by the write that made them, on its own thread, or with their session."""
    resource, _ = remote
    session = resource.new_session()
    calls = []
    request = session.client._execute_plan_request_with_metadata
    session.client._execute_plan_request_with_metadata = lambda *a, **k: calls.append(1) or request(*a, **k)
    try:
        collected = local_checkpoint(session.range(3))
        assert collected.count() == 3
        calls.clear()
        del collected
        gc.collect()
        assert calls == []  # no request from the finalizer

        released = local_checkpoint(session.range(4))
        relation_id = released._plan._relation_id
        calls.clear()
        release_checkpoint(released)
        assert len(calls) == 1  # the release itself, from this thread
        # The server no longer has the rows: a DataFrame naming them fails.
        again = session._create_remote_dataframe(relation_id)
        again._plan._spark_session = None  # no release of its own when collected
        with pytest.raises(Exception, match="No DataFrame with id"):
            again.count()
    finally:
        resource.release_session(session)


def test_with_partition_key_binds_the_key_over_spark_connect(remote):
    """The ``rows=`` DataFrame argument and the bound key both travel to the server."""
    _, spark = remote
    rows = spark.createDataFrame([(1,), (2,)], "id INT")
    # A payload that would change the query if it were spliced into the SQL text.
    key = "a\\' OR 1=1 --"
    keyed = with_partition_key(spark, rows, key)
    assert is_connect_session(keyed)
    assert sorted(tuple(r) for r in keyed.collect()) == [(1, key), (2, key)]


def test_spark_conf_over_spark_connect_sets_sql_settings_and_names_server_settings(connect_url, lake_root):
    """``spark_conf`` reaches each new session; a server setting it cannot change is a clear
    error naming the setting and the fix, while the server's own value is accepted."""
    resource = SparkDeltaResource(
        remote=connect_url, lake_root=lake_root, spark_conf={"spark.sql.shuffle.partitions": "7"}
    )
    session = resource.new_session()
    try:
        assert session.conf.get("spark.sql.shuffle.partitions") == "7"
    finally:
        resource.release_session(session)
    static = "spark.sql.warehouse.dir"
    same = resource.get_session().conf.get(static)
    accepted = SparkDeltaResource(remote=connect_url, lake_root=lake_root, spark_conf={static: same})
    accepted.release_session(accepted.new_session())
    refused = SparkDeltaResource(remote=connect_url, lake_root=lake_root, spark_conf={static: "/elsewhere"})
    with pytest.raises(ConfigError) as err:
        refused.new_session()
    message = str(err.value)
    assert f"spark_conf {static}='/elsewhere' cannot be set" in message
    assert f"the server has {same!r}" in message
    # The server's URL without its token (the engine's, here).
    token = connect_url.split(";token=", 1)[1]
    assert f"Set it on the server ({connect_url.replace(token, '***')}) instead." in message
    assert token not in message


def test_a_refused_secret_setting_is_redacted_in_its_error(connect_url, lake_root):
    """A secret-named setting the server refuses (a Spark core setting) fails the session
    with its name and ``***``: its value, the server's and the server's token appear in no
    text of the error or of its causes (Dagster's event log records the whole chain)."""
    value = "hunter2-5ecret-value"
    refused = SparkDeltaResource(remote=connect_url, lake_root=lake_root, spark_conf={"spark.authenticate.secret": value})
    with pytest.raises(ConfigError) as err:
        refused.new_session()
    texts, exc = [], err.value
    while exc is not None:
        texts.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    message = texts[0]
    assert "spark_conf spark.authenticate.secret=*** cannot be set" in message, message
    token = connect_url.split(";token=", 1)[1]
    assert not any(value in text or token in text for text in texts), texts


def test_partition_batch_over_spark_connect_keeps_each_partitions_temp_views(remote, lake_root):
    """A backfill batch re-creates the file's temp views per partition; over Connect the
    parts are lazy client-side plans, and each must still read its own partition's views.

    Two files with the same views run in the batch: one written as is, one audited first
    (its custom test binds ``{partition}`` and runs once per partition of the batch).
    """
    resource, spark = remote
    expected = day_events(spark, lake_root)
    defs = build_definitions(BATCH_PROJECT, spark=resource)
    instance = dg.DagsterInstance.ephemeral()
    tables = ["mart/day_view", "mart/day_view_audited"]
    assets = [dg.AssetKey(t.split("/")) for t in tables]
    job = defs.resolve_implicit_job_def_def_for_assets(assets)

    batch = job.execute_in_process(
        instance=instance,
        asset_selection=assets,
        tags={"dagster/asset_partition_range_start": DAYS[0], "dagster/asset_partition_range_end": DAYS[-1]},
        raise_on_error=False,
    )
    evaluations = [e.asset_check_evaluation_data for e in batch.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert {c.check_name for c in evaluations} == {"unique_event_id", "custom_own_day"}
    assert [c.check_name for c in evaluations if not c.passed] == []
    # The {partition}-bound test ran on every partition's own rows: 1 + 2 + ... + 5 in all.
    own_day = [c.metadata["rows_tested"].value for c in evaluations if c.check_name == "custom_own_day"]
    assert sum(own_day) == sum(len(ids) for ids in expected.values())
    assert batch.success
    parts = {table: by_partition(spark, lake_root, table) for table in tables}
    for table in tables:
        assert sorted(parts[table]) == DAYS, table
        for day in DAYS:
            rows = parts[table][day]
            # Its own events (not the last day's), each with its own day's view-of-view count.
            assert sorted(r.event_id for r in rows) == expected[day], (table, day)
            assert {(str(r.day), r.day_rows) for r in rows} == {(day, len(expected[day]))}, (table, day)
        counts = {
            e.materialization.partition: e.materialization.metadata["dagster/partition_row_count"].value
            for e in batch.get_asset_materialization_events()
            if e.asset_key.to_user_string() == table
        }
        assert counts == {day: len(expected[day]) for day in DAYS}, table
        # The whole batch is one Delta commit, stamped with the run and the slice (the
        # file's description, the table's comment, in it).
        ((version, operation, user_metadata),) = history(spark, lake_root, table)
        assert (version, operation) == (0, "CREATE TABLE AS SELECT"), table
        assert json.loads(user_metadata)["assetlake"]["run_id"] == batch.run_id
        assert json.loads(user_metadata)["assetlake"]["partition"] == f"{DAYS[0]}...{DAYS[-1]}"

    # One partition again (the single-partition path, forced: its inputs did not change):
    # replaced alone, the others untouched.
    single = job.execute_in_process(
        instance=instance, asset_selection=assets, partition_key=DAYS[1], tags={"assetlake/force": "true"}
    )
    assert single.success
    for table in tables:
        assert [v for v, _, _ in history(spark, lake_root, table)] == [1, 0], table
        again = by_partition(spark, lake_root, table)
        assert {d: sorted(map(tuple, again[d])) for d in DAYS} == {d: sorted(map(tuple, parts[table][d])) for d in DAYS}



def test_an_audited_batch_of_a_quarter_goes_over_spark_connect(remote, lake_root):
    """91 partitions in one audited batch: the parts' union is one plan, copied into the
    Spark Connect checkpoint command before the audit. A left-deep union of 91 nests past
    protobuf's limit of 100 levels and failed with "DecodeError: Error parsing message with
    type 'spark.connect.Relation'" (the demo's staging/payments in "Materialize all")."""
    resource, spark = remote
    defs = build_definitions(os.path.join(PROJECTS, "connect_wide_batch"), spark=resource)
    key = dg.AssetKey(["mart", "wide_batch"])
    job = defs.resolve_implicit_job_def_def_for_assets([key])
    days = [str(dt.date(2024, 1, 1) + dt.timedelta(days=i)) for i in range(91)]
    batch = job.execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        asset_selection=[key],
        tags={"dagster/asset_partition_range_start": days[0], "dagster/asset_partition_range_end": days[-1]},
        raise_on_error=False,
    )
    failures = [e.event_specific_data.error.message for e in batch.all_events if e.event_type_value == "STEP_FAILURE"]
    assert batch.success, failures
    rows = spark.read.format("delta").load(os.path.join(lake_root, "mart", "wide_batch")).collect()
    assert sorted(r[PARTITION_COLUMN] for r in rows) == days
    assert all(str(r.day) == r[PARTITION_COLUMN] for r in rows)

GOOD_ORDERS = [(1, 10, 5.0), (2, 11, 7.5), (3, 10, 1.0)]
#: One bad row per blocking test: the row, the check it trips, and what the message says.
BAD_ORDERS = [
    ((1, 12, 2.0), "unique_order_id", "1 failing value, e.g. 1 x2"),
    ((4, None, 2.0), "not_null_customer_id", "1 failing row, e.g. {order_id: 4"),
    ((4, 12, -2.0), "custom_no_negative_amounts", "1 failing row, e.g. {order_id: 4, amount: -2.0}"),
]


def test_data_tests_over_spark_connect_audit_before_the_commit(remote, lake_root):
    """Built-in and custom (``{this}``) tests run on the server against the staged rows;
    a blocking failure names the test, writes nothing and skips downstream."""
    resource, spark = remote
    orders_path = os.path.join(lake_root, "raw", "orders")

    def source(rows):
        df = spark.createDataFrame(rows, "order_id INT, customer_id INT, amount DOUBLE")
        df.write.format("delta").mode("overwrite").save(orders_path)

    selection = ["mart/orders", "mart/order_totals"]
    # A retry policy, so "not retried" is something the run could get wrong.
    retrying = dg.define_asset_job(
        "audited", selection=[dg.AssetKey(s.split("/")) for s in selection], op_retry_policy=dg.RetryPolicy(max_retries=2)
    )
    defs = dg.Definitions.merge(build_definitions(AUDITED_PROJECT, spark=resource), dg.Definitions(jobs=[retrying]))
    instance = dg.DagsterInstance.ephemeral()

    source(GOOD_ORDERS)
    passed, metadata = run(defs, selection, instance)
    assert passed.success and set(metadata) == set(selection)
    checks = {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data
        for e in passed.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    assert {name: c.passed for name, c in checks.items()} == {
        "unique_order_id": True,
        "not_null_customer_id": True,
        "custom_no_negative_amounts": True,
    }
    assert checks["custom_no_negative_amounts"].metadata["rows_tested"].value == 3
    assert [v for v, _, _ in history(spark, lake_root, "mart/orders")] == [0]
    assert [v for v, _, _ in history(spark, lake_root, "mart/order_totals")] == [0]

    for bad_row, test, expected in BAD_ORDERS:
        source(GOOD_ORDERS + [bad_row])
        failed = defs.resolve_job_def("audited").execute_in_process(instance=instance, raise_on_error=False)
        assert not failed.success, test
        (failure,) = failed.get_step_failure_events()
        message = failure.step_failure_data.user_failure_data.description
        assert f"data test {test} (" in message and expected in message, message
        assert "Nothing was written: the table stays at version 0" in message, message
        assert failure.step_failure_data.user_failure_data.metadata["failed_tests"].value == [test]
        checks = {
            e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data.passed
            for e in failed.all_events
            if e.event_type_value == "ASSET_CHECK_EVALUATION"
        }
        assert [name for name, ok in checks.items() if not ok] == [test]
        # Not retried despite the policy; the table keeps its version; downstream never started.
        assert [e for e in failed.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"] == [], test
        assert failed.get_asset_materialization_events() == [], test
        assert [v for v, _, _ in history(spark, lake_root, "mart/orders")] == [0], test
        assert [v for v, _, _ in history(spark, lake_root, "mart/order_totals")] == [0], test
        started = [e.step_key for e in failed.all_events if e.event_type_value == "STEP_START"]
        assert started == ["sql__mart__orders"], test

    rows = spark.read.format("delta").load(os.path.join(lake_root, "mart", "orders")).collect()
    assert sorted(tuple(r) for r in rows) == GOOD_ORDERS


def test_a_terminated_first_write_stops_the_engines_write_and_deletes_nothing(remote, lake_root):
    """Dagster's terminate raises DagsterExecutionInterruptedError in the run's thread while
    the server goes on writing: the write's operation is interrupted, and the folder the
    engine was writing into is not deleted under it (that cleanup is for failed writes)."""
    import ctypes
    import threading
    import time

    from dagster._core.errors import DagsterExecutionInterruptedError

    from assetlake_dagster.writes.commit import first_write_cleanup

    _, session = remote
    path = os.path.join(os.path.realpath(lake_root), "term", "t")
    outcome = []

    def write():
        try:
            with first_write_cleanup(session, path):
                rows = session.range(0, 10**10, 1, 64).selectExpr("id", "sha2(CAST(id AS STRING), 256) AS h")
                rows.write.format("delta").save(path)
        except BaseException as exc:  # noqa: BLE001 - what the thread ended with is the result
            outcome.append(exc)

    def data_files():
        return sorted(n for _, _, names in os.walk(path) for n in names if n.endswith(".parquet"))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        deadline = time.monotonic() + 240
        while not data_files() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert data_files(), "the engine wrote no data file"
        # What Dagster's terminate does to the run's thread (delivered at the client's next
        # Python step: the server reports progress every 2 s).
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(writer.ident), ctypes.py_object(DagsterExecutionInterruptedError)
        )
        writer.join(120)
        assert not writer.is_alive() and isinstance(outcome[0], DagsterExecutionInterruptedError), outcome
        # The engine's write stops: its files stop changing, and it never commits.
        deadline, seen = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            now = data_files()
            if now == seen:
                break
            seen = now
            time.sleep(3)
        assert now == seen, "the engine went on writing after the terminate"
        assert now, "the files the engine wrote were deleted under it"
        assert not any(n.endswith(".json") for n in os.listdir(os.path.join(path, "_delta_log")))
    finally:
        session.interruptAll()  # never leave a 10-billion-row write running in the shared engine


def test_registering_a_table_over_spark_connect_reads_none_of_its_rows(remote, lake_root):
    # spark.catalog.createTable over Spark Connect also fetched the table's rows to the
    # client: a first write of 8M+ rows failed after its commit (TaskResultLost). With its
    # data files gone, any read of the rows fails, while registering reads only the log.
    from assetlake_dagster.lake.root import Lake
    from assetlake_dagster.lake.registration import forget_registrations, register_table
    from assetlake_dagster.spec import TableUri

    _, spark = remote
    lake, uri = Lake(lake_root), TableUri("reg", "no_rows_read")
    path = lake.table_path(uri)
    spark.range(1000).write.format("delta").save(path)
    data_files = [name for name in os.listdir(path) if name.endswith(".parquet")]
    assert data_files
    for name in data_files:
        os.remove(os.path.join(path, name))
    spark.sql(f"DROP TABLE IF EXISTS {uri.sql_name}")
    forget_registrations(spark)

    register_table(spark, lake, uri)

    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {uri.sql_name}").collect()
    location = next(r["data_type"] for r in rows if r["col_name"] == "Location")
    assert location.removeprefix("file:").rstrip("/") == path
    assert [f.name for f in spark.table(uri.sql_name).schema.fields] == ["id"]


@pytest.fixture
def in_tokyo():
    """This (client) process's local zone set to Asia/Tokyo while the test runs; restored after."""
    with python_local_zone("Asia/Tokyo"):
        yield


def test_naive_timestamps_are_session_wall_times_over_spark_connect(remote, lake_root, tmp_path, in_tokyo):
    """As spark/test_session_time_zone.py, from a Connect client in Tokyo: a seed, a pandas
    output and a SQL unit test's rows load the instants of the session's zone (UTC)."""
    import pandas as pd

    from assetlake_dagster.lake.delta_sql import path_identifier
    from assetlake_dagster.cli.sql_test_run import assert_sql_tests_pass

    resource, session = remote
    assert session.conf.get("spark.sql.session.timeZone") == "UTC"
    project = tmp_path / "project"
    (project / "ref").mkdir(parents=True)
    (project / "ref" / "events.csv").write_text("-- seed delta://ref/events key=id\nid,at\n1,2024-01-02 09:30:00\n")

    @dg.asset(key=["raw", "pandas_events"])
    def pandas_events() -> pd.DataFrame:
        return pd.DataFrame({
            "id": [1],
            "at": pd.to_datetime(["2024-01-02 09:30:00"]),
            "boxed": pd.Series([dt.datetime(2024, 1, 2, 9, 30)], dtype=object),
        })

    defs = build_definitions(str(project), spark=resource, python_assets=[pandas_events])
    run(defs, ["ref/events", "raw/pandas_events"], dg.DagsterInstance.ephemeral())
    for table, column in (("ref/events", "at"), ("raw/pandas_events", "at"), ("raw/pandas_events", "boxed")):
        path = path_identifier(os.path.join(lake_root, *table.split("/")))
        row = session.sql(f"SELECT CAST({column} AS STRING) AS text, unix_micros({column}) AS micros FROM {path}").collect()[0]
        assert (row.text, row.micros) == ("2024-01-02 09:30:00", 1704187800 * 10**6), (table, column)

    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "recent.sql").write_text("-- materialize delta://mart/recent\n\nSELECT id, at, CAST(at AS STRING) AS at_text FROM raw.events\n")
    (tests / "recent.tests.yml").write_text(
        "tests:\n"
        "  - name: inferred_rows\n"
        "    given:\n"
        "      raw.events: [{id: 1, at: 2024-01-02 09:30:00}]\n"
        "    expect: [{id: 1, at: 2024-01-02 09:30:00, at_text: '2024-01-02 09:30:00'}]\n"
    )
    assert [r.passed for r in assert_sql_tests_pass(str(tests), session)] == [True]


def test_a_merge_reads_its_upstreams_change_feed_over_spark_connect(remote, lake_root):
    """`projects/change_feed` over the server: the feed read, staged and merged by Connect sessions."""
    resource, session = remote
    path = os.path.join(os.path.realpath(lake_root), "raw", "orders")
    session.createDataFrame(
        [(1, 1, "new", 2.0), (2, 2, "paid", 3.0), (4, 3, "new", 1.0), (5, 3, "new", 1.0)],
        "order_id INT, customer_id INT, status STRING, amount DOUBLE",
    ).write.format("delta").option("delta.enableChangeDataFeed", "true").save(path)
    defs = build_definitions(os.path.join(PROJECTS, "change_feed"), spark=resource)
    instance = dg.DagsterInstance.ephemeral()
    selection = ["staging/orders_clean", "mart/customer_totals", "staging/orders_open", "mart/repeat_customers"]
    run(defs, selection, instance)

    def rows(table):
        return sorted(tuple(r) for r in session.read.format("delta").load(os.path.join(os.path.realpath(lake_root), *table.split("/"))).collect())

    assert rows("mart/repeat_customers") == [(3, 2.0, 2)]
    session.sql(f"INSERT INTO delta.`{path}` VALUES (3, 2, 'new', 4.0)")
    session.sql(f"UPDATE delta.`{path}` SET amount = 5.0 WHERE order_id = 1")
    session.sql(f"DELETE FROM delta.`{path}` WHERE order_id IN (2, 5)")
    _, metadata = run(defs, selection, instance)
    clean, totals, opened, repeat = (metadata[s]["assetlake/read"].value for s in selection)
    assert (clean["mode"], clean["rows_gained"], clean["rows_lost"]) == ("change_feed", 2, 3)
    assert opened["mode"] == repeat["mode"] == "change_feed"
    assert (totals["mode"], totals["groups"]) == ("change_feed", 3)

    # A merge never deletes: orders 2 and 5 keep their rows, as a full read's merge would leave them.
    assert rows("staging/orders_clean") == [
        (1, 1, "NEW", 10.0), (2, 2, "PAID", 6.0), (3, 2, "NEW", 8.0), (4, 3, "NEW", 2.0), (5, 3, "NEW", 2.0)
    ]
    assert rows("mart/customer_totals") == [(1, 5.0, 1, "new"), (2, 4.0, 1, "new"), (3, 1.0, 1, "new")]
    # deletes=delete, through the marked change set over Connect: the deleted orders' keys go,
    # and customer 3, left with one order, leaves the repeat customers (HAVING count(*) > 1).
    assert rows("staging/orders_open") == [(1, 1, "new", 5.0), (3, 2, "new", 4.0), (4, 3, "new", 1.0)]
    assert rows("mart/repeat_customers") == []
