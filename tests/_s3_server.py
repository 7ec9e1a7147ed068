"""A real S3 server for the tests, started locally: moto in server mode on a free
port of 127.0.0.1, with the AWS variables that point boto3 and s3fs at it (the way a
user points them at MinIO or another S3-compatible store). Skipped, saying which,
where moto or s3fs is not installed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# What every S3 client of the tests (and their subprocesses) reads: dummy credentials,
# a region, and the endpoint, set once the server is up.
ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


class S3:
    """The running server: its endpoint, and a boto3 client to set up and look."""

    def __init__(self, endpoint: str) -> None:
        import boto3

        self.endpoint = endpoint
        self.client: Any = boto3.client("s3", endpoint_url=endpoint)

    def bucket(self, name: str) -> str:
        """A new, empty bucket called ``name``; returns ``s3://name``."""
        self.client.create_bucket(Bucket=name)
        return f"s3://{name}"

    def put(self, bucket: str, key: str, data: bytes) -> str:
        self.client.put_object(Bucket=bucket, Key=key, Body=data)
        return f"s3://{bucket}/{key}"

    def upload_folder(self, folder: Path, bucket: str, prefix: str) -> str:
        """Every file under ``folder``, at the same relative keys under ``prefix``."""
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                self.put(bucket, f"{prefix}/{path.relative_to(folder).as_posix()}", path.read_bytes())
        return f"s3://{bucket}/{prefix}/"

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object under ``prefix``: key -> bytes."""
        out = {}
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for page in pages:
            for item in page.get("Contents", []):
                out[item["Key"]] = self.client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        return out


def s3_server() -> Iterator[S3]:
    """The fixture's body: the server up, the environment set, for the session."""
    pytest.importorskip("s3fs", reason="s3fs (to read s3:// URLs) is not installed")
    server_module = pytest.importorskip("moto.server", reason="moto[server] is not installed")
    old = {k: os.environ.get(k) for k in [*ENV, "AWS_ENDPOINT_URL"]}
    os.environ.update(ENV)
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
    try:
        yield S3(os.environ["AWS_ENDPOINT_URL"])
    finally:
        server.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
