"""The local S3 server, started once for the tests of this folder (``_s3_server``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _s3_server import S3, s3_server


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    yield from s3_server()
