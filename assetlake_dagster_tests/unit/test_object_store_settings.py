"""Object-store lakes without a bucket: settings, URL validation, the single-driver rule
and the S3A jars' message (no Spark, no server: these are decided before either starts)."""

import pytest

from assetlake_dagster.spark.engine import default_engine_dir
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.lake.storage import MULTI_DRIVER_LOG_STORE, S3Settings


def test_the_standard_aws_variables_configure_s3a_delta_rs_and_pyarrow_alike():
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-1",
           "AWS_ACCESS_KEY_ID": "key", "AWS_SECRET_ACCESS_KEY": "secret"}
    settings = S3Settings.from_env(env)
    conf = settings.spark_conf()
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"  # an IP address implies it
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    # Credentials never go into Spark's conf (a command line, the engine's log): S3A reads the chain.
    assert not any("key" == v or "secret" == v for v in conf.values())
    options = settings.storage_options(env)
    assert options["AWS_ALLOW_HTTP"] == "true" and options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "false"
    assert options["AWS_ACCESS_KEY_ID"] == "key" and options["AWS_REGION"] == "eu-west-1"
    filesystem = settings.filesystem()
    assert filesystem.region == "eu-west-1"


def test_a_service_endpoint_uses_virtual_hosts_and_https_unless_told_otherwise():
    aws = S3Settings.from_env({"AWS_ENDPOINT_URL_S3": "https://s3.eu-west-1.amazonaws.com",
                               "AWS_ENDPOINT_URL": "http://ignored:1"})
    assert aws.endpoint == "https://s3.eu-west-1.amazonaws.com"
    assert aws.spark_conf()["spark.hadoop.fs.s3a.path.style.access"] == "false"
    assert aws.spark_conf()["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "true"
    forced = S3Settings.from_env({"AWS_ENDPOINT_URL": "https://minio.internal", "ASSETLAKE_S3_PATH_STYLE": "true"})
    assert forced.uses_path_style
    field_wins = S3Settings.from_env({"AWS_ENDPOINT_URL": "http://localhost:1"}, endpoint="http://10.0.0.1:9000")
    assert field_wins.endpoint == "http://10.0.0.1:9000"
    assert S3Settings.from_env({}).spark_conf().get("spark.hadoop.fs.s3a.endpoint") is None


@pytest.mark.parametrize(
    "env, message",
    [({"AWS_ENDPOINT_URL": "127.0.0.1:9000"}, r"is not an http\(s\) URL"),
     ({"ASSETLAKE_S3_PATH_STYLE": "yes"}, "is not true or false")],
)
def test_bad_s3_settings_are_named_with_the_fix(env, message):
    with pytest.raises(ConfigError, match=message):
        S3Settings.from_env(env)


@pytest.mark.parametrize(
    "root, message",
    [("s3a:///lake", "names no bucket"), ("s3a://Bad_Bucket/lake", "not an S3 bucket name"),
     # '..' inside the bucket and '//' are spellings of a prefix (unit/test_lake_identity.py); these name none.
     ("s3a://bucket/../b", "climbs above the bucket"), ("s3a://bucket/lake?x=1", "query or fragment")],
)
def test_an_object_store_root_is_validated(root, message):
    with pytest.raises(ConfigError, match=message):
        Lake(root)


def test_an_object_store_lake_keeps_its_engine_state_on_local_disk(monkeypatch):
    monkeypatch.delenv("ASSETLAKE_ENGINE_DIR", raising=False)
    one, other = default_engine_dir("s3a://bucket/lake"), default_engine_dir("s3a://bucket/other")
    assert one != other and "://" not in one and one.startswith("/")
    assert default_engine_dir("s3a://bucket/lake/") == one  # one engine per lake, however it is written


def test_a_driver_per_run_on_s3_is_refused_before_it_starts_naming_both_fixes(monkeypatch, tmp_path):
    monkeypatch.setenv("ASSETLAKE_S3_JARS_DIR", str(tmp_path))
    (tmp_path / "hadoop-aws-3.4.1.jar").write_bytes(b"")
    (tmp_path / "bundle-2.24.6.jar").write_bytes(b"")
    resource = SparkDeltaResource(lake_root="s3a://bucket/lake", mode="local")
    with pytest.raises(ConfigError) as error:
        resource.get_session()
    message = str(error.value)
    assert "ASSETLAKE_SPARK_MODE=local" in message and MULTI_DRIVER_LOG_STORE in message
    assert "warm engine" in message and "ASSETLAKE_SPARK_REMOTE" in message


def test_an_s3_lake_without_the_s3a_jars_says_how_to_get_them(monkeypatch, tmp_path):
    monkeypatch.setenv("ASSETLAKE_S3_JARS_DIR", str(tmp_path))
    resource = SparkDeltaResource(lake_root="s3a://bucket/lake")
    with pytest.raises(ConfigError, match=r"assetlake setup --with s3"):
        resource.server_spark_conf()
    # A user who brings hadoop-aws through spark_conf is not asked for ours.
    own = SparkDeltaResource(lake_root="s3a://bucket/lake",
                             spark_conf={"spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.1"})
    assert own.server_spark_conf()["spark.jars.packages"] == "org.apache.hadoop:hadoop-aws:3.4.1"


def test_a_remote_server_of_an_s3_lake_needs_no_s3a_jars_here(monkeypatch, tmp_path):
    """The Connect server reads the bucket with its own connector: this process starts no
    driver, so it asks for no jars (the server's settings are the server's)."""
    monkeypatch.setenv("ASSETLAKE_S3_JARS_DIR", str(tmp_path))  # empty
    sessions = SparkDeltaResource(lake_root="s3a://bucket/lake", remote="sc://spark:15002").sessions()
    assert sessions.mode == "remote" and sessions.remote == "sc://spark:15002"
    # The lake's warm engine is a driver of this machine's: `assetlake engine start` still needs them.
    with pytest.raises(ConfigError, match=r"assetlake setup --with s3"):
        SparkDeltaResource(lake_root="s3a://bucket/lake", remote="sc://spark:15002").engine()
