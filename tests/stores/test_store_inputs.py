"""Inputs read from a real S3 server (moto, started locally): every file format, folders
(prefixes) and globs count and encode exactly as the same files read locally, and the
errors name the URL (and the line, for a bad record)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _corpus_formats import EOT, SPECIAL, VARIANTS, joined_text_file, make_input, shared_docs
from _s3_server import S3

import bpekit

FILE_VARIANTS = [
    "jsonl",
    "jsonl-ascii",
    "jsonl-nested",
    "jsonl.gz",
    "jsonl.zst",
    "parquet-zstd",
    "parquet-snappy",
]


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return shared_docs("c4")[:400]


@pytest.fixture(scope="module")
def bucket(s3: S3) -> str:
    s3.bucket("inputs")
    return "inputs"


@pytest.fixture(scope="module")
def gpt2() -> bpekit.Tokenizer:
    from _shared_data import bpekit_encoding

    return bpekit_encoding("gpt2")


def _ids(inputs: object, tok: bpekit.Tokenizer, out: Path, **options: object) -> bytes:
    bpekit.encode_file(inputs, out, tok, progress=False, **options)
    return out.read_bytes()


@pytest.mark.parametrize("variant", FILE_VARIANTS)
def test_each_format_from_the_store_counts_and_encodes_as_the_local_file(
    variant: str, docs: list[str], s3: S3, bucket: str, gpt2: bpekit.Tokenizer, tmp_path: Path
) -> None:
    local, options = make_input(variant, docs, tmp_path)
    url = s3.put(bucket, f"formats/{variant}/{local.name}", local.read_bytes())
    assert bpekit.count_pretokens(url, SPECIAL, **options) == bpekit.count_pretokens(
        local, SPECIAL, **options
    )
    assert _ids(url, gpt2, tmp_path / "u.npy", **options) == _ids(local, gpt2, tmp_path / "l.npy", **options)
    # And as the documents joined in a text file.
    assert bpekit.count_pretokens(url, SPECIAL, **options) == bpekit.count_pretokens(
        joined_text_file(docs, tmp_path), SPECIAL
    )


@pytest.mark.parametrize("name", ["joined.txt", "joined.txt.gz", "joined.txt.zst"])
def test_text_files_from_the_store_keep_their_special_tokens(
    name: str, docs: list[str], s3: S3, bucket: str, gpt2: bpekit.Tokenizer, tmp_path: Path
) -> None:
    data = joined_text_file(docs, tmp_path).read_bytes()
    if name.endswith(".gz"):
        data = gzip.compress(data)
    elif name.endswith(".zst"):
        zstandard = pytest.importorskip("zstandard")
        data = zstandard.ZstdCompressor().compress(data)
    local = tmp_path / name
    local.write_bytes(data)
    url = s3.put(bucket, f"text/{name}", data)
    assert bpekit.count_pretokens(url, SPECIAL) == bpekit.count_pretokens(local, SPECIAL)
    assert _ids(url, gpt2, tmp_path / "u.npy", eos=EOT) == _ids(local, gpt2, tmp_path / "l.npy", eos=EOT)


def test_prefixes_and_globs_read_the_objects_a_local_folder_and_glob_read(
    docs: list[str], s3: S3, bucket: str, gpt2: bpekit.Tokenizer, tmp_path: Path
) -> None:
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    for k, variant in enumerate(["jsonl.zst", "jsonl.gz", "parquet-zstd"]):
        made = VARIANTS[variant](docs[k * 100 : (k + 1) * 100], folder / ("sub" if k else ""))
        made.rename(made.with_name(f"{k}-{made.name}"))
    joined_text_file(docs[300:], folder)
    (folder / ".hidden.txt").write_text("never read")
    prefix = s3.upload_folder(folder, bucket, "tree")
    want = bpekit.count_pretokens(folder, SPECIAL)
    assert bpekit.count_pretokens(prefix, SPECIAL) == want
    assert bpekit.count_pretokens(prefix.rstrip("/"), SPECIAL) == want  # a prefix without its slash
    assert bpekit.count_pretokens(f"{prefix}**/*.jsonl.*", SPECIAL) == bpekit.count_pretokens(
        str(folder / "**" / "*.jsonl.*"), SPECIAL
    )
    assert bpekit.count_pretokens(f"{prefix}sub/*.jsonl.gz", SPECIAL) == bpekit.count_pretokens(
        str(folder / "sub" / "*.jsonl.gz"), SPECIAL
    )
    # Local and store inputs mix in one list, in order.
    mixed = [f"{prefix}sub/1-docs.jsonl.gz", folder / "joined.txt"]
    local = [folder / "sub" / "1-docs.jsonl.gz", folder / "joined.txt"]
    assert _ids(mixed, gpt2, tmp_path / "u.npy") == _ids(local, gpt2, tmp_path / "l.npy")
    vocab, merges = bpekit.train_bpe(prefix, 300, SPECIAL)
    assert (vocab, merges) == bpekit.train_bpe(folder, 300, SPECIAL)


def test_a_dataset_of_store_inputs_equals_one_of_the_local_files(
    docs: list[str], s3: S3, bucket: str, gpt2: bpekit.Tokenizer, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    VARIANTS["jsonl.zst"](docs[:200], folder)
    VARIANTS["parquet-zstd"](docs[200:], folder)
    prefix = s3.upload_folder(folder, bucket, "for-dataset")
    options = {"shard_tokens": 5000, "val_fraction": 0.1, "progress": False}
    local = bpekit.encode_dataset(folder, tmp_path / "local", gpt2, **options)
    remote = bpekit.encode_dataset(prefix, tmp_path / "remote", gpt2, **options)
    assert local["totals"] == remote["totals"]
    for split in local["splits"]:
        for a, b in zip(local["splits"][split]["shards"], remote["splits"][split]["shards"], strict=True):
            assert (tmp_path / "local" / a["file"]).read_bytes() == (
                tmp_path / "remote" / b["file"]
            ).read_bytes()
    # The inputs are told by URL, size and version: a rerun finds the dataset finished.
    assert [i["name"] for i in remote["inputs"]] == [f"{prefix}docs.jsonl.zst", f"{prefix}docs.parquet"]
    assert all(i["size"] > 0 and i["version"] for i in remote["inputs"])
    again = bpekit.encode_dataset(prefix, tmp_path / "remote", gpt2, **options)
    assert again == remote


def test_a_bad_record_is_named_by_url_and_line(s3: S3, bucket: str) -> None:
    url = s3.put(bucket, "bad/records.jsonl.gz", gzip.compress(b'{"text": "ok"}\n{"text": 3}\n'))
    with pytest.raises(
        ValueError, match=r"^s3://inputs/bad/records\.jsonl\.gz: line 2 \(byte 15\): field 'text'"
    ):
        bpekit.count_pretokens(url)
    url = s3.put(bucket, "bad/broken.txt.gz", gzip.compress(b"some text")[:-12])
    with pytest.raises(ValueError, match=r"^s3://inputs/bad/broken\.txt\.gz: not a valid \.gz file"):
        bpekit.count_pretokens(url)


def test_missing_buckets_keys_and_patterns_are_errors_naming_the_url(s3: S3, bucket: str) -> None:
    with pytest.raises(FileNotFoundError, match=r"^s3://no-such-bucket/a\.txt: .*bucket does not exist"):
        bpekit.count_pretokens("s3://no-such-bucket/a.txt")
    with pytest.raises(FileNotFoundError, match=r"^s3://inputs/no/such\.txt: no such object"):
        bpekit.count_pretokens("s3://inputs/no/such.txt")
    with pytest.raises(
        FileNotFoundError, match=r"^s3://inputs/text/\*\.none: no object matches this pattern$"
    ):
        bpekit.count_pretokens("s3://inputs/text/*.none")


def _bpekit(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_no_credentials_is_one_line_naming_the_url(s3: S3, bucket: str, tmp_path: Path) -> None:
    url = s3.put(bucket, "creds/a.txt", b"hello")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env |= {
        "AWS_ENDPOINT_URL": s3.endpoint,
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    done = _bpekit("encode", url, "-t", "gpt2", "-o", str(tmp_path / "a.npy"), "--quiet", env=env)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "s3://inputs/creds/a.txt" in lines[0] and "credentials" in lines[0], (
        done.stderr
    )
    # The same run with them reads the object.
    done = _bpekit(
        "encode", url, "-t", "gpt2", "-o", str(tmp_path / "a.npy"), "--quiet", env=dict(os.environ)
    )
    assert done.returncode == 0, done.stderr
    assert np.load(tmp_path / "a.npy").tolist() == [31373]


def test_distributed_jobs_read_store_inputs_as_local_files(
    docs: list[str], s3: S3, bucket: str, gpt2: bpekit.Tokenizer, tmp_path: Path
) -> None:
    import bpekit.distributed as dist

    folder = tmp_path / "in"
    folder.mkdir()
    VARIANTS["jsonl.gz"](docs[:150], folder)
    VARIANTS["parquet-zstd"](docs[150:], folder)
    joined_text_file(docs[:50], folder)
    prefix = s3.upload_folder(folder, bucket, "distributed")
    options = {"backend": "local", "workers": 2, "unit_bytes": 20_000}
    assert dist.count_pretokens(prefix, SPECIAL, **options) == bpekit.count_pretokens(folder, SPECIAL)
    layout = {"shard_tokens": 7000, "val_fraction": 0.1, "progress": False}
    one = bpekit.encode_dataset(prefix, tmp_path / "one", gpt2, **layout)
    spread = dist.encode_dataset(prefix, tmp_path / "spread", gpt2, num_threads=1, **layout, **options)
    assert spread == one
    for split in one["splits"].values():
        for shard in split["shards"]:
            assert (tmp_path / "one" / shard["file"]).read_bytes() == (
                tmp_path / "spread" / shard["file"]
            ).read_bytes()
