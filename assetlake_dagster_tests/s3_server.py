"""A real S3 API on loopback for the tests: moto's standalone server, one process per use.

moto's server speaks S3's REST protocol over HTTP, so Hadoop's S3A (in Spark), delta-rs
and PyArrow reach it exactly as they would reach AWS, through ``AWS_ENDPOINT_URL``. It
keeps its buckets in memory and dies with the test run.
"""

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

from assetlake_dagster_tests.helpers import stop_process_group

HOST = "127.0.0.1"
#: Fixed test credentials: moto accepts any, the clients need some to sign requests.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "assetlake-test", "AWS_SECRET_ACCESS_KEY": "assetlake-test-secret"}
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class S3Server:
    """A running S3-compatible server.

    Attributes:
        endpoint: its URL, ``http://127.0.0.1:<port>``.
        pid: the server process (its own process group).
    """

    endpoint: str
    pid: int

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables that point every client at this server."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": "us-east-1"}

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def keys(self, bucket: str, prefix: str) -> list[str]:
        """Every object key under ``prefix`` (paginated)."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_s3_server(log_path: str) -> Iterator[S3Server]:
    """Start moto's server on a free loopback port; stop it (and its group) on exit."""
    port = _free_port()
    server_bin = os.path.join(os.path.dirname(sys.executable), "moto_server")
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [server_bin, "-H", HOST, "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = S3Server(endpoint=f"http://{HOST}:{port}", pid=process.pid)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {process.returncode}; log: {open(log_path).read()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"moto_server did not listen on {HOST}:{port} within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.1)
        yield server
    finally:
        stop_process_group(process, timeout=10)


@contextlib.contextmanager
def bucket_in_env(folder: str, bucket: str) -> Iterator[S3Server]:
    """A server with ``bucket`` created, and this process's AWS variables pointing at it
    (restored on exit): what a module of in-process tests on a bucket needs."""
    import pytest

    with running_s3_server(os.path.join(folder, "moto.log")) as server, pytest.MonkeyPatch.context() as env:
        for key, value in server.env.items():
            env.setenv(key, value)
        server.create_bucket(bucket)
        yield server
