"""Datasets written to a real S3 server (moto, started locally): the objects equal the
local dataset's files byte for byte, a rerun returns the finished dataset, a writer
killed mid-upload leaves no partial object and its rerun ends with the same bytes,
and an object the run did not write is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _s3_server import S3

import bpekit

TOK = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
OPTIONS: dict[str, Any] = {"shard_tokens": 5000, "val_fraction": 0.1, "progress": False}


@pytest.fixture(scope="module")
def bucket(s3: S3) -> str:
    s3.bucket("outputs")
    return "outputs"


@pytest.fixture(autouse=True)
def _own_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPEKIT_STAGING", str(tmp_path / "staging"))
    monkeypatch.setenv("BPEKIT_CACHE", str(tmp_path / "cache"))


def _docs(n: int = 2000) -> list[str]:
    return [f"document {i}: " + "words and more words " * (i % 9 + 1) for i in range(n)]


def _local_files(folder: Path, prefix: str) -> dict[str, bytes]:
    return {
        f"{prefix}/{p.relative_to(folder).as_posix()}": p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    }


@pytest.mark.parametrize("shard_format", ["npy", "megatron"])
def test_a_dataset_in_the_store_equals_the_local_one_byte_for_byte(
    shard_format: str, s3: S3, bucket: str, tmp_path: Path
) -> None:
    docs = _docs()
    options = {**OPTIONS, "shard_format": shard_format}
    local = bpekit.encode_dataset(iter(docs), tmp_path / "local", TOK, **options)
    url = f"s3://{bucket}/{shard_format}/ds"
    remote = bpekit.encode_dataset(iter(docs), url, TOK, **options)
    assert remote == local
    assert s3.objects(bucket, f"{shard_format}/ds/") == _local_files(tmp_path / "local", f"{shard_format}/ds")
    assert not (tmp_path / "staging").exists() or not any((tmp_path / "staging").iterdir())
    # A rerun finds it finished and puts nothing (the objects keep their times).
    times = {o["Key"]: o["LastModified"] for o in s3.client.list_objects_v2(Bucket=bucket)["Contents"]}
    assert bpekit.encode_dataset(iter(docs), url, TOK, **options) == local
    assert times == {
        o["Key"]: o["LastModified"] for o in s3.client.list_objects_v2(Bucket=bucket)["Contents"]
    }
    # TokenDataset reads it (fetched into a local cache, then mapped).
    ds, want = bpekit.TokenDataset(url), bpekit.TokenDataset(tmp_path / "local")
    assert len(ds) == len(want) and ds.document(7).tolist() == want.document(7).tolist()
    val, want_val = bpekit.TokenDataset(url, "val"), bpekit.TokenDataset(tmp_path / "local", "val")
    assert len(val) == len(want_val) and np.array_equal(val.document(0), want_val.document(0))


def test_the_distributed_writer_puts_the_same_objects(s3: S3, bucket: str, tmp_path: Path) -> None:
    import bpekit.distributed as dist

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("<|endoftext|>".join(_docs(1500)))
    local = bpekit.encode_dataset(corpus, tmp_path / "local", TOK, **OPTIONS)
    url = f"s3://{bucket}/spread/ds"
    spread = dist.encode_dataset(corpus, url, TOK, backend="local", workers=2, unit_bytes=20_000, **OPTIONS)
    assert spread == local
    assert s3.objects(bucket, "spread/ds/") == _local_files(tmp_path / "local", "spread/ds")


_KILLED_WRITER = """
import os, signal, sys
import s3fs
import bpekit

# Multipart parts of the smallest size S3 takes, so that a shard is several parts;
# the writer dies as it sends the second part of the second shard.
real_put, real_call = s3fs.S3FileSystem._put_file, s3fs.S3FileSystem._call_s3
async def put(self, lpath, rpath, *args, **kwargs):
    kwargs["chunksize"] = 5 << 20
    return await real_put(self, lpath, rpath, *args, **kwargs)
parts = []
async def call(self, method, *args, **kwargs):
    if method == "upload_part":
        parts.append(kwargs.get("Key"))
        if len(set(parts)) == 2 and parts.count(parts[-1]) == 2:
            print(parts[-1], flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    return await real_call(self, method, *args, **kwargs)
s3fs.S3FileSystem._put_file, s3fs.S3FileSystem._call_s3 = put, call
tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
bpekit.encode_dataset(sys.argv[1], sys.argv[2], tok, shard_tokens=6 << 20, dtype="uint16", progress=False)
"""


def test_a_writer_killed_mid_upload_leaves_no_partial_object_and_resumes(
    s3: S3, bucket: str, tmp_path: Path
) -> None:
    corpus = tmp_path / "big.txt"
    line = b"".join(b"%d tokens of text, " % i for i in range(1000))
    corpus.write_bytes(line * (20_000_000 // len(line)))  # ~20 MB: four shards of ~12 MB
    url = f"s3://{bucket}/killed/ds"
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(_KILLED_WRITER))
    done = subprocess.run(
        [sys.executable, str(script), str(corpus), url], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    killed_key = done.stdout.strip()
    assert killed_key.endswith(".npy"), done.stdout
    objects = s3.objects(bucket, "killed/ds/")
    # The shard being uploaded is no object (its multipart upload never completed); the
    # manifest there says unfinished, so no reader takes the prefix for a dataset.
    assert killed_key not in objects and "killed/ds/train/00000.npy" in objects
    with pytest.raises(ValueError, match="incomplete"):
        bpekit.TokenDataset(url)
    first = s3.client.head_object(Bucket=bucket, Key="killed/ds/train/00000.npy")["LastModified"]
    options = {"shard_tokens": 6 << 20, "dtype": "uint16", "progress": False}
    resumed = bpekit.encode_dataset(corpus, url, TOK, **options)
    # The shard put before the kill holds the bytes planned (its size and sha256): kept.
    assert s3.client.head_object(Bucket=bucket, Key="killed/ds/train/00000.npy")["LastModified"] == first
    local = bpekit.encode_dataset(corpus, tmp_path / "local", TOK, **options)
    assert resumed == local
    assert s3.objects(bucket, "killed/ds/") == _local_files(tmp_path / "local", "killed/ds")


def test_objects_the_run_did_not_write_are_never_touched(s3: S3, bucket: str, tmp_path: Path) -> None:
    s3.put(bucket, "strangers/ds/notes.txt", b"mine")
    with pytest.raises(FileExistsError, match=r"^s3://outputs/strangers/ds: the prefix holds other objects"):
        bpekit.encode_dataset(iter(_docs(50)), f"s3://{bucket}/strangers/ds", TOK, **OPTIONS)
    # Beside a dataset of ours, too, and with resume=False.
    url = f"s3://{bucket}/beside/ds"
    bpekit.encode_dataset(iter(_docs(50)), url, TOK, **OPTIONS)
    s3.put(bucket, "beside/ds/train/notes.txt", b"mine")
    for resume in (True, False):
        with pytest.raises(FileExistsError, match=r"not the dataset's .*train/notes\.txt"):
            bpekit.encode_dataset(iter(_docs(60)), url, TOK, **{**OPTIONS, "resume": resume})
    assert s3.objects(bucket, "beside/ds/train/notes.txt") == {"beside/ds/train/notes.txt": b"mine"}
    # Another dataset of ours there is refused unless resume=False, which replaces our
    # objects only: the earlier run's extra shards go, the stranger stays.
    s3.client.delete_object(Bucket=bucket, Key="beside/ds/train/notes.txt")
    with pytest.raises(FileExistsError, match="pass resume=False"):
        bpekit.encode_dataset(iter(_docs(10)), url, TOK, **OPTIONS)
    bpekit.encode_dataset(iter(_docs(10)), url, TOK, **{**OPTIONS, "resume": False})
    bpekit.encode_dataset(iter(_docs(10)), tmp_path / "local", TOK, **OPTIONS)
    assert s3.objects(bucket, "beside/ds/") == _local_files(tmp_path / "local", "beside/ds")


def test_store_outputs_errors_name_the_url(s3: S3, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"^s3://no-such-bucket/ds/manifest\.json: .*bucket"):
        bpekit.encode_dataset(iter(["a"]), "s3://no-such-bucket/ds", TOK, progress=False)
    with pytest.raises(ValueError, match=r"^s3://outputs/a\.npy: one \.npy is written to a local path"):
        bpekit.encode_file(iter(["a"]), "s3://outputs/a.npy", TOK, progress=False)
    out = tmp_path / "f.npy"
    bpekit.encode_file(iter(["a"]), f"file://{out}", TOK, progress=False)
    assert np.load(out).tolist() == [97, 256]
    env = dict(os.environ)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bpekit.cli",
            "encode",
            str(out),
            "-t",
            "gpt2",
            "-o",
            "s3://no-such-bucket/ds",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "s3://no-such-bucket/ds" in done.stderr
