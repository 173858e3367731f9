"""Where the lake's JDBC server listens: loopback by default, elsewhere only when asked, and
the commands that refuse what cannot work before anything starts."""

import pytest

from assetlake_dagster.cli.main import main
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.spark.engine import EngineError, EngineState, WarmEngine
from assetlake_dagster.spark.jdbc_endpoint import JdbcEndpoint



def test_the_port_comes_from_the_field_else_the_environment_and_listens_on_loopback():
    assert JdbcEndpoint.resolve(env={}) is None
    assert JdbcEndpoint.resolve(env={"ASSETLAKE_JDBC_PORT": "10001"}) == JdbcEndpoint(10001, "127.0.0.1")
    assert JdbcEndpoint.resolve(10002, env={"ASSETLAKE_JDBC_PORT": "10001"}).url == "jdbc:hive2://127.0.0.1:10002/default"
    endpoint = JdbcEndpoint.resolve(10000, "0.0.0.0", env={"ASSETLAKE_JDBC_ALLOW_REMOTE": "1"})
    assert endpoint.host == "0.0.0.0" and endpoint.url == "jdbc:hive2://127.0.0.1:10000/default"
    assert "no authentication of its own" in endpoint.no_auth_warning()
    assert JdbcEndpoint(10000).no_auth_warning() is None
    assert JdbcEndpoint(10000, "10.1.2.3").hiveconf_args() == [
        "--hiveconf", "hive.server2.thrift.port=10000", "--hiveconf", "hive.server2.thrift.bind.host=10.1.2.3",
    ]


@pytest.mark.parametrize("port, source", [("abc", "ASSETLAKE_JDBC_PORT='abc'"), ("70000", "ASSETLAKE_JDBC_PORT='70000'")])
def test_a_port_that_is_not_one_is_refused_by_name(port, source):
    with pytest.raises(ConfigError, match=f"{source} is not a TCP port. Give one from 1 to 65535"):
        JdbcEndpoint.resolve(env={"ASSETLAKE_JDBC_PORT": port})
    with pytest.raises(ConfigError, match="jdbc_port=0 is not a TCP port"):
        JdbcEndpoint.resolve(0, env={})


def test_another_address_than_loopback_needs_an_explicit_allowance():
    for env in ({"ASSETLAKE_JDBC_HOST": "0.0.0.0"}, {"ASSETLAKE_JDBC_HOST": "0.0.0.0", "ASSETLAKE_JDBC_ALLOW_REMOTE": "no"}):
        with pytest.raises(ConfigError, match=r"would listen on 0\.0\.0\.0:10000, and Spark's Thrift server has no authentication"):
            JdbcEndpoint.resolve(10000, env=env)
    # The field says no even when the environment says yes: the resource's own value wins.
    with pytest.raises(ConfigError, match="jdbc_allow_remote"):
        JdbcEndpoint.resolve(10000, "10.0.0.7", False, env={"ASSETLAKE_JDBC_ALLOW_REMOTE": "1"})
    assert JdbcEndpoint.resolve(10000, "localhost", env={}).is_loopback


def test_the_resource_gives_the_endpoint_to_the_warm_engine_only(tmp_path, monkeypatch):
    monkeypatch.delenv("ASSETLAKE_JDBC_PORT", raising=False)
    resource = SparkDeltaResource(lake_root=str(tmp_path), catalog="hive", jdbc_port=10005)
    assert resource.engine().jdbc == JdbcEndpoint(10005)
    assert resource.sessions("remote").jdbc is None
    assert SparkDeltaResource(lake_root=str(tmp_path)).engine().jdbc is None


def test_an_engine_asked_for_jdbc_without_the_hive_catalog_is_refused_before_it_starts(tmp_path):
    engine = WarmEngine(str(tmp_path / "engine"), jdbc=JdbcEndpoint(10000))
    with pytest.raises(EngineError, match="lists the tables of the lake's Hive metastore.*ASSETLAKE_CATALOG=hive"):
        engine.ensure()
    assert not (tmp_path / "engine").exists()


def test_a_running_engine_serves_what_is_asked_for_or_says_why_not(tmp_path):
    state = EngineState(host="127.0.0.1", port=1, token="t", supervisor_pid=1, server_pid=1, master="local[*]",
                        log_path="engine.log", started_at=0.0, idle_timeout=1.0, catalog="hive")
    served = EngineState(**{**state.__dict__, "jdbc_host": "127.0.0.1", "jdbc_port": 10000})
    assert state.jdbc is None and served.jdbc == JdbcEndpoint(10000)
    assert WarmEngine(str(tmp_path)).accepts(state)  # no JDBC asked for: any engine does
    asking = WarmEngine(str(tmp_path), jdbc=JdbcEndpoint(10000))
    assert asking.accepts(served) and not asking.accepts(state)
    with pytest.raises(EngineError, match="serves no JDBC, and jdbc:hive2://127.0.0.1:10000/default was asked for"):
        asking._check_jdbc(state)  # noqa: SLF001 - the message, without a live engine


def test_the_commands_refuse_an_open_address_and_a_jdbc_flag_where_it_means_nothing(tmp_path, monkeypatch, capsys):
    lake = str(tmp_path / "lake")
    monkeypatch.setenv("ASSETLAKE_ENGINE_DIR", str(tmp_path / "engine"))
    monkeypatch.setenv("ASSETLAKE_CATALOG", "hive")
    assert main(["jdbc", "--host", "0.0.0.0", "--lake-root", lake]) == 1
    refused = capsys.readouterr().err
    assert "would listen on 0.0.0.0:10000" in refused and "--allow-remote" in refused
    assert main(["engine", "status", "--jdbc", "--lake-root", lake]) == 1
    assert "--jdbc applies to `assetlake engine start`, not `status`." in capsys.readouterr().err
    monkeypatch.setenv("ASSETLAKE_CATALOG", "session")
    assert main(["jdbc", "--port", "10007", "--lake-root", lake]) == 1
    assert "Set ASSETLAKE_CATALOG=hive" in capsys.readouterr().err
    assert not (tmp_path / "engine").exists()  # no engine was started
