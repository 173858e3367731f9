"""The Spark-free Delta log reader on a bucket: real tables written by delta-rs into a real
S3 API (moto's server on loopback), read through PyArrow's S3 filesystem, and compared with
the same log copied to local disk."""

import datetime as dt
import json
import os
import uuid

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from assetlake_dagster.lake.delta_log import Commit, DeltaLog, DeltaLogExpiredError, DeltaLogUnreadableError, DeltaTableMissingError, latest_version
from assetlake_dagster.errors import ConfigError
from assetlake_dagster.lake.root import Lake
from assetlake_dagster.lake.files import StoreFiles, lake_files, store_path
from assetlake_dagster.spec import TableUri
from assetlake_dagster.lake.storage import S3Settings
from assetlake_dagster_tests.s3_server import bucket_in_env

BUCKET = "lake"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """One S3 server for the module, its bucket, and the AWS variables pointing at it."""
    with bucket_in_env(str(tmp_path_factory.mktemp("s3")), BUCKET) as server:
        yield server


@pytest.fixture
def prefix(s3):
    """A lake prefix of this test's own in the shared bucket."""
    return f"t-{uuid.uuid4().hex[:8]}"


def url(prefix, table="landing/orders"):
    return f"s3a://{BUCKET}/{prefix}/{table}"


def storage_options():
    # delta-rs refuses to commit to S3 without a lock; one writer per test needs none.
    return {**S3Settings.from_env().storage_options(), "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}


def write(table, *days, mode="append", **kwargs):
    rows = pa.table(
        {
            "order_id": list(range(len(days))),
            "amount": [1.0] * len(days),
            "order_date": pa.array([dt.date.fromisoformat(d) for d in days]),
        }
    )
    write_deltalake(table, rows, mode=mode, partition_by=["order_date"], storage_options=storage_options(), **kwargs)


def local_copy(s3, prefix, tmp_path, table="landing/orders"):
    """The table's ``_delta_log`` objects, downloaded to a local folder as they are."""
    target = tmp_path / "copy"
    client = s3.client()
    for key in s3.keys(BUCKET, f"{prefix}/{table}/_delta_log/"):
        path = target / key[len(f"{prefix}/{table}/") :]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    return str(target)


def delete_commits(s3, prefix, *versions, table="landing/orders"):
    """What log cleanup does once the retention has passed."""
    for version in versions:
        s3.client().delete_object(Bucket=BUCKET, Key=f"{prefix}/{table}/_delta_log/{version:020d}.json")


# -- the same answers as from local disk -----------------------------------------------------


def test_a_bucket_table_reads_as_its_local_copy(s3, prefix, tmp_path):
    table = url(prefix)
    write(table, "2024-01-01", "2024-01-02")
    write(table, "2024-01-05")
    write(table, "2024-01-02", mode="overwrite", predicate="order_date = '2024-01-02'")

    remote, local = DeltaLog.open(table), DeltaLog.open(local_copy(s3, prefix, tmp_path))

    assert (remote.latest_version, remote.first_readable, remote.checkpoint_version) == (2, 0, None)
    assert (local.latest_version, local.first_readable, local.checkpoint_version) == (2, 0, None)
    commits = remote.read_commits(after_version=-1)
    assert commits == local.read_commits(after_version=-1)
    assert [c.operation for c in commits] == ["WRITE", "WRITE", "WRITE"]
    assert commits[1].added == ({"order_date": "2024-01-05"},)
    assert (commits[2].added, commits[2].removed) == (({"order_date": "2024-01-02"},), ({"order_date": "2024-01-02"},))
    meta = remote.read_metadata()
    assert (meta.version, meta.schema, meta.partition_columns) == (
        local.read_metadata().version,
        local.read_metadata().schema,
        ("order_date",),
    )
    assert [f["name"] for f in meta.schema["fields"]] == ["order_id", "amount", "order_date"]
    assert meta.file == f"{table}/_delta_log/{0:020d}.json"
    assert latest_version(table) == 2


def test_the_schema_is_read_from_a_checkpoint_in_the_bucket(s3, prefix, tmp_path):
    """The checkpoint is a Parquet object, read with ranged GETs through PyArrow."""
    table = url(prefix)
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        write(table, day)
    DeltaTable(table, storage_options=storage_options()).create_checkpoint()  # at version 2
    write(table, "2024-01-04")
    delete_commits(s3, prefix, 0, 1, 2)

    remote, local = DeltaLog.open(table), DeltaLog.open(local_copy(s3, prefix, tmp_path))

    assert (remote.latest_version, remote.first_readable, remote.checkpoint_version) == (3, 3, 2)
    meta = remote.read_metadata()
    assert meta.file == f"{table}/_delta_log/{2:020d}.checkpoint.parquet"
    assert (meta.version, meta.schema, meta.partition_columns) == (
        2,
        local.read_metadata().schema,
        ("order_date",),
    )
    assert remote.read_commits(after_version=2) == local.read_commits(after_version=2)
    with pytest.raises(DeltaLogExpiredError) as caught:
        remote.read_commits(after_version=0)
    assert (caught.value.first_missing, caught.value.last_missing, caught.value.first_readable) == (1, 2, 3)


def test_without_commit_info_a_commit_takes_the_objects_time(s3, prefix):
    """The listing carries each object's time: no request per commit for it."""
    key = f"{prefix}/t/_delta_log/{0:020d}.json"
    add = {"add": {"path": "a.parquet", "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}}
    s3.client().put_object(Bucket=BUCKET, Key=key, Body=(json.dumps(add) + "\n").encode())
    stored = s3.client().head_object(Bucket=BUCKET, Key=key)["LastModified"]

    (commit,) = DeltaLog.open(f"s3a://{BUCKET}/{prefix}/t").read_commits(after_version=-1)

    assert commit == Commit(0, int(stored.timestamp() * 1000), "UNKNOWN", added=({},))


def test_a_damaged_commit_object_is_unreadable(s3, prefix):
    table = url(prefix)
    write(table, "2024-01-01")
    key = f"{prefix}/landing/orders/_delta_log/{1:020d}.json"
    s3.client().put_object(Bucket=BUCKET, Key=key, Body=b'{"commitInfo": {}}\n{not json\n')

    log = DeltaLog.open(table)
    assert [c.version for c in log.read_commits(-1, up_to=0)] == [0]
    with pytest.raises(DeltaLogUnreadableError) as caught:
        log.read_commits(after_version=0)
    assert str(caught.value).startswith(f"{table}/_delta_log/{1:020d}.json:2: not a valid Delta action")
    assert caught.value.file == f"{table}/_delta_log/{1:020d}.json"


# -- missing and unreachable -----------------------------------------------------------------


def test_a_prefix_without_objects_is_a_missing_table(s3, prefix):
    table = url(prefix)
    with pytest.raises(DeltaTableMissingError) as caught:
        DeltaLog.open(table)
    assert str(caught.value) == (
        f"no Delta table at {table}: there is no object under {table}/_delta_log/. "
        "Write the table first (or fix its name or the lake root)."
    )
    # Data files without a commit (a first write that failed before it): still no table.
    s3.client().put_object(Bucket=BUCKET, Key=f"{prefix}/landing/orders/part-0.parquet", Body=b"x")
    with pytest.raises(DeltaTableMissingError):
        DeltaLog.open(table)
    s3.client().put_object(Bucket=BUCKET, Key=f"{prefix}/landing/orders/_delta_log/_staged_commits/x", Body=b"")
    with pytest.raises(DeltaTableMissingError, match="holds no commit yet"):
        DeltaLog.open(table)


def test_a_bucket_that_does_not_exist_is_unreadable_not_missing(s3):
    table = "s3a://no-such-bucket/lake/landing/orders"
    with pytest.raises(DeltaLogUnreadableError) as caught:
        DeltaLog.open(table)
    message = str(caught.value)
    assert message.startswith(f"cannot list the Delta log {table}/_delta_log: ")
    assert "bucket does not exist" in message
    assert message.endswith(
        "Check the bucket's name, the endpoint (AWS_ENDPOINT_URL) and that the credentials may list it."
    )


# -- the lake's files ------------------------------------------------------------------------


def test_the_lake_reads_its_bucket_with_its_own_settings(s3, prefix):
    lake = Lake(f"s3a://{BUCKET}/{prefix}", s3_settings=S3Settings(endpoint=s3.endpoint, region="us-east-1"))
    uri = TableUri("landing", "orders")
    assert not lake.files.has_delta_log(lake.table_path(uri))
    write(lake.table_path(uri), "2024-01-01")

    assert lake.files.has_delta_log(lake.table_path(uri))
    assert DeltaLog.open(lake.table_path(uri), lake.files).latest_version == 0
    # s3:// names the same objects as s3a://.
    assert DeltaLog.open(lake.table_path(uri).replace("s3a://", "s3://", 1)).latest_version == 0


@pytest.mark.parametrize(
    "url, path",
    [
        ("s3a://bucket/lake/s/t", "bucket/lake/s/t"),
        ("s3://bucket/lake/s/t/", "bucket/lake/s/t"),
        ("s3a://bucket", "bucket"),
        ("gs://bucket/lake/s/t", "bucket/lake/s/t"),
        ("abfss://container@account.dfs.core.windows.net/lake/s/t", "container/lake/s/t"),
    ],
)
def test_store_paths(url, path):
    assert store_path(url) == path


def test_azure_and_gcs_lakes_get_pyarrows_filesystems():
    """Built only (no request): these stores are not tested against a server."""
    from pyarrow import fs

    assert isinstance(lake_files("gs://bucket/lake"), StoreFiles)
    assert isinstance(lake_files("gs://bucket/lake").filesystem, fs.GcsFileSystem)
    azure = lake_files("abfss://container@account.dfs.core.windows.net/lake")
    assert isinstance(azure.filesystem, fs.AzureFileSystem)


def test_a_scheme_pyarrow_cannot_read_is_explained():
    with pytest.raises(ConfigError) as caught:
        lake_files("dbfs:/lake")
    assert str(caught.value) == (
        "cannot read dbfs:// lakes without Spark: PyArrow says Unrecognized filesystem type in URI: dbfs:///. "
        "Upgrade pyarrow (pip install -U pyarrow: ADLS needs 16 or later), or use an s3a:// or local lake root."
    )


def test_a_file_url_reads_the_local_log(tmp_path):
    table = str(tmp_path / "t")
    write_deltalake(table, pa.table({"x": [1]}))
    log = DeltaLog.open(f"file://{table}")
    assert (log.latest_version, log.read_commits(-1)) == (0, DeltaLog.open(table).read_commits(-1))
    with pytest.raises(DeltaTableMissingError, match=f"file://{tmp_path}/u/_delta_log does not exist"):
        DeltaLog.open(f"file://{tmp_path}/u")


def test_a_local_path_keeps_the_os_calls(tmp_path):
    files = lake_files(str(tmp_path))
    assert files.is_local and not files.has_delta_log(str(tmp_path / "t"))
    os.makedirs(tmp_path / "t" / "_delta_log")
    (tmp_path / "t" / "_delta_log" / f"{0:020d}.json").write_text("{}\n")
    assert files.has_delta_log(str(tmp_path / "t"))
    assert [e.name for e in files.list_folder(str(tmp_path / "t" / "_delta_log"))] == [f"{0:020d}.json"]


def test_the_demos_seed_check_reads_the_bucket(s3, prefix):
    """`assetlake demo land --seed` skips Spark when the landing table exists: also in a bucket."""
    from assetlake_dagster.demo.landing import LANDING_TABLE, landing_exists

    lake = Lake(f"s3a://{BUCKET}/{prefix}")
    assert not landing_exists(lake)
    write_deltalake(lake.table_path(LANDING_TABLE), pa.table({"x": [1]}), storage_options=storage_options())
    assert landing_exists(lake)
