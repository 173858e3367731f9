"""One lake, one identity: every spelling of a lake root resolves to one canonical root, and
that root keys everything kept per lake on this machine (the warm engine's state folder, the
embedded metastore, table paths and so their locks and commit stamps).

Without it ``s3a://b/lake``, ``s3://b/lake``, ``s3a://b//lake`` and ``S3A://b/lake`` were
four lakes: four warm engines, four Spark drivers writing one bucket.
"""

import os

import pytest

from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.catalog import CatalogSettings, default_metastore_dir
from assetlake_dagster.lake.identity import canonical_lake_root
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.lake.storage import MULTI_DRIVER_LOG_STORE, has_multi_driver_log_store
from assetlake_dagster.defs.resources import SparkDeltaResource
from assetlake_dagster.spark.engine import default_engine_dir
from assetlake_dagster.spec import TableUri

#: Spellings of one bucket prefix: scheme aliases and case, bucket case, doubled and
#: trailing slashes, '.' and '..' segments that stay inside the bucket.
S3_SPELLINGS = [
    "s3a://bucket/lake",
    "s3://bucket/lake",
    "s3n://bucket/lake",
    "S3A://bucket/lake",
    "S3://bucket/lake",
    "s3a://BUCKET/lake",
    "s3a://Bucket/lake",
    "s3a://bucket//lake",
    "s3a://bucket/lake/",
    "s3a://bucket/lake//",
    "s3a://bucket///lake///",
    "s3a://bucket/./lake",
    "s3a://bucket/lake/.",
    "s3a://bucket/old/../lake",
    "s3a://bucket/a/b/../../lake",
    "S3N://Bucket//x/./../lake/",
]


@pytest.mark.parametrize("spelling", S3_SPELLINGS)
def test_every_spelling_of_an_s3_prefix_is_one_canonical_root(spelling):
    assert canonical_lake_root(spelling) == "s3a://bucket/lake"


@pytest.mark.parametrize(
    "spelling, canonical",
    [
        # Keys are case-sensitive: only scheme and bucket are lowered.
        ("s3a://bucket/Lake/Prod", "s3a://bucket/Lake/Prod"),
        ("S3://Bucket/Lake", "s3a://bucket/Lake"),
        # A lake at the bucket's top.
        ("s3://bucket", "s3a://bucket"),
        ("s3://bucket/", "s3a://bucket"),
        ("s3a://bucket/lake/..", "s3a://bucket"),
        # An '@' inside a key is a legal key character, not credentials.
        ("s3a://bucket/team@x/lake", "s3a://bucket/team@x/lake"),
        ("GS://Bucket//lake/", "gs://bucket/lake"),
        ("gs://bucket/a/../lake", "gs://bucket/lake"),
        # ADLS: container@account is the URL's authority, lowered as a whole.
        ("ABFSS://Lake@Account.dfs.core.windows.net//prefix/", "abfss://lake@account.dfs.core.windows.net/prefix"),
        ("HDFS://NameNode:8020//lake/", "hdfs://namenode:8020/lake"),
        ("hdfs:///lake/", "hdfs:///lake"),
        ("file:/data/x/../lake/", "file:///data/lake"),
        ("FILE:///data//lake", "file:///data/lake"),
        ("file://localhost/data/lake", "file:///data/lake"),
        ("dbfs:/lake/", "dbfs:/lake"),
        ("DBFS:///lake//prod", "dbfs:/lake/prod"),
    ],
)
def test_url_roots_are_canonical(spelling, canonical):
    assert canonical_lake_root(spelling) == canonical
    assert canonical_lake_root(canonical) == canonical  # the canonical form is a fixed point


def test_local_roots_are_real_absolute_paths(tmp_path, monkeypatch):
    real = tmp_path / "real"
    (real / "lake").mkdir(parents=True)
    os.symlink(real, tmp_path / "link")
    expected = os.path.realpath(real / "lake")
    monkeypatch.chdir(tmp_path)
    spellings = [str(real / "lake"), f"{real}//lake/", f"{real}/x/../lake", "real/lake", "./real/lake/",
                 str(tmp_path / "link" / "lake")]
    assert {canonical_lake_root(s) for s in spellings} == {expected}
    monkeypatch.setenv("HOME", str(tmp_path))
    assert canonical_lake_root("~/link/lake") == expected


@pytest.mark.parametrize(
    "root, secrets",
    [
        ("s3a://AKIAEXAMPLEKEY:wJalrXUtnFEMIsecret@bucket/lake", ["AKIAEXAMPLEKEY", "wJalrXUtnFEMIsecret"]),
        ("s3://AKIAEXAMPLEKEY:wJalrXUtn/K7MDENG+bPxRfiCY@bucket/lake", ["AKIAEXAMPLEKEY", "wJalrXUtn", "K7MDENG"]),
        ("s3a://AKIAEXAMPLEKEY:wJal#rXUtn?FEMI@bucket/lake", ["AKIAEXAMPLEKEY", "wJal", "rXUtn", "FEMI"]),
        ("S3N://AKIAEXAMPLEKEY:wJalrXUtnFEMIsecret@Bucket/lake", ["AKIAEXAMPLEKEY", "wJalrXUtnFEMIsecret"]),
        ("s3a://someuser@bucket/lake", ["someuser"]),
        ("gs://someuser:hunter2pass@bucket/lake", ["someuser", "hunter2pass"]),
        ("hdfs://someuser:hunter2pass@namenode:8020/lake", ["someuser", "hunter2pass"]),
        ("abfss://container:hunter2pass@account.dfs.core.windows.net/lake", ["hunter2pass"]),
    ],
)
def test_credentials_in_a_root_are_refused_without_echoing_them(root, secrets):
    with pytest.raises(ConfigError) as error:
        canonical_lake_root(root)
    message = str(error.value)
    assert "credentials" in message
    assert not any(secret in message for secret in secrets), message
    if root.lower().startswith("s3"):
        assert "AWS_ACCESS_KEY_ID" in message and "AWS_SECRET_ACCESS_KEY" in message
    # Nor through the lake or the resource that hold the root.
    with pytest.raises(ConfigError) as through_lake:
        Lake(root)
    assert not any(secret in str(through_lake.value) for secret in secrets)


@pytest.mark.parametrize(
    "root, message",
    [
        ("s3a://bucket/../other/lake", "climbs above the bucket"),
        ("s3://bucket/lake/../../other", "climbs above the bucket"),
        ("s3a://bucket/..", "climbs above the bucket"),
        ("gs://bucket/a/../../b", "climbs above the bucket"),
        ("s3a://bucket/%2e%2e/lake", "encoded '.' or '..'"),
        ("s3a:///lake", "names no bucket"),
        ("s3a:/bucket/lake", "names no bucket"),
        ("s3a://Bad_Bucket/lake", "not an S3 bucket name"),
        ("s3a://bucket:9000/lake", "not an S3 bucket name"),
        ("s3a://bucket/lake?versionId=1", "query or fragment"),
        ("wasbs://container@account/lake", "scheme 'wasbs'"),
        ("", "the lake root is empty"),
    ],
)
def test_roots_that_name_no_place_plainly_are_refused_with_the_fix(root, message):
    with pytest.raises(ConfigError, match=message) as error:
        canonical_lake_root(root)
    assert ". " in str(error.value)  # what, then how to fix it


def test_every_spelling_keys_one_engine_folder_and_one_metastore(monkeypatch):
    monkeypatch.delenv("ASSETLAKE_ENGINE_DIR", raising=False)
    monkeypatch.delenv("ASSETLAKE_METASTORE_DIR", raising=False)
    engine_dirs = {default_engine_dir(s) for s in S3_SPELLINGS}
    metastore_dirs = {default_metastore_dir(s) for s in S3_SPELLINGS}
    assert len(engine_dirs) == 1 and len(metastore_dirs) == 1, (engine_dirs, metastore_dirs)
    assert engine_dirs != {default_engine_dir("s3a://bucket/other")}
    assert metastore_dirs != {default_metastore_dir("s3a://bucket/lake2")}
    # Keys are case-sensitive: another case of the prefix is another lake.
    assert engine_dirs != {default_engine_dir("s3a://bucket/LAKE")}
    hive = {CatalogSettings.resolve("hive", lake_root=s).metastore_dir for s in S3_SPELLINGS}
    assert hive == metastore_dirs


def test_local_spellings_key_one_engine_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("ASSETLAKE_ENGINE_DIR", raising=False)
    (tmp_path / "lake").mkdir()
    os.symlink(tmp_path / "lake", tmp_path / "alias")
    spellings = [str(tmp_path / "lake"), f"{tmp_path}//lake/", str(tmp_path / "alias"), f"{tmp_path}/x/../lake"]
    assert {default_engine_dir(s) for s in spellings} == {os.path.join(os.path.realpath(tmp_path / "lake"),
                                                                        ".assetlake", "engine")}


def test_lakes_of_two_spellings_are_equal_and_build_the_same_paths():
    lakes = [Lake(s) for s in S3_SPELLINGS]
    uri = TableUri("analytics", "orders")
    assert all(lake == lakes[0] for lake in lakes)
    assert {lake.root for lake in lakes} == {"s3a://bucket/lake"}
    assert {lake.table_path(uri) for lake in lakes} == {"s3a://bucket/lake/analytics/orders"}
    assert {lake.warehouse_dir for lake in lakes} == {"s3a://bucket/lake/.spark-warehouse"}
    assert all(lake.is_s3 and lake.is_url for lake in lakes)
    assert len(set(lakes)) == 1  # one key in a dict or set of lakes


def test_two_spellings_of_one_bucket_share_one_engine(monkeypatch, tmp_path):
    """What a run asks for: the resource's sessions, the engine and its state folder."""
    monkeypatch.delenv("ASSETLAKE_ENGINE_DIR", raising=False)
    monkeypatch.delenv("ASSETLAKE_SPARK_MODE", raising=False)
    monkeypatch.delenv("ASSETLAKE_SPARK_REMOTE", raising=False)
    monkeypatch.setenv("ASSETLAKE_S3_JARS_DIR", str(tmp_path))
    (tmp_path / "hadoop-aws-3.4.1.jar").write_bytes(b"")
    (tmp_path / "bundle-2.24.6.jar").write_bytes(b"")
    resources = [SparkDeltaResource(lake_root=s) for s in ("s3a://bucket/lake", "S3://Bucket//lake/", "s3n://bucket/x/../lake")]
    assert {r.lake.root for r in resources} == {"s3a://bucket/lake"}
    assert len({r.sessions().engine_dir for r in resources}) == 1
    assert len({r.engine().state_dir for r in resources}) == 1
    assert len({r.sessions().warehouse_dir for r in resources}) == 1
    monkeypatch.delenv("ASSETLAKE_METASTORE_DIR", raising=False)
    monkeypatch.delenv("ASSETLAKE_HIVE_METASTORE_URIS", raising=False)
    hive = [SparkDeltaResource(lake_root=r.lake_root, catalog="hive") for r in resources]
    assert len({r.catalog_settings().metastore_dir for r in hive}) == 1


def test_a_dev_lake_cannot_defer_to_another_spelling_of_itself():
    resource = SparkDeltaResource(lake_root="s3a://bucket/lake", defer_to="S3://Bucket/lake/")
    with pytest.raises(ConfigError, match="is the lake root itself"):
        resource.defer_lake


def test_the_multi_driver_log_store_must_be_set_for_the_canonical_scheme(monkeypatch, tmp_path):
    """A lake's tables are s3a:// paths however its root is written, and Delta picks the log
    store by the path's scheme: ``…logStore.s3.impl`` covers none of them, so a driver per run
    configured with it alone is refused (it would commit through the single-driver store)."""
    monkeypatch.setenv("ASSETLAKE_S3_JARS_DIR", str(tmp_path))
    (tmp_path / "hadoop-aws-3.4.1.jar").write_bytes(b"")
    (tmp_path / "bundle-2.24.6.jar").write_bytes(b"")
    s3_only = {"spark.delta.logStore.s3.impl": MULTI_DRIVER_LOG_STORE}
    assert not has_multi_driver_log_store(s3_only)
    assert has_multi_driver_log_store({"spark.delta.logStore.s3a.impl": MULTI_DRIVER_LOG_STORE})
    resource = SparkDeltaResource(lake_root="s3://bucket/lake", mode="local", spark_conf=s3_only)
    with pytest.raises(ConfigError, match=r"spark\.delta\.logStore\.s3a\.impl="):
        resource.get_session()
