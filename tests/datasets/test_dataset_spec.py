"""The dataset format is written down twice: in ``bpekit.dataset.spec`` for the Python
side (the reader, the manifest) and in the Rust writer (``src/dataset/shard.rs``,
``src/dataset/npy.rs``). These tests read the Rust sources and check that the two say
the same, and what the writer puts on disk against the spec's numbers."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import bpekit
from bpekit.dataset import spec

ROOT = Path(__file__).resolve().parents[2]


def rust(name: str) -> str:
    """The text of a file of the Rust dataset writer."""
    path = ROOT / "src" / "dataset" / name
    if not path.exists():
        pytest.skip(f"no {path.relative_to(ROOT)} (not a source checkout)")
    return path.read_text(encoding="utf-8")


def test_llmc_headers_agree() -> None:
    shard = rust("shard.rs")
    header = shard[shard.index("fn header(") :]
    pairs = [(int(m), int(v)) for m, v in re.findall(r"\((\d{8}), (\d+)\)", header)]
    # width 2 first, then 4
    assert "if width == 2" in header
    assert pairs[:2] == [spec.LLMC_HEADERS["uint16"], spec.LLMC_HEADERS["uint32"]]
    (words,) = re.findall(r"\[0i32; (\d+)\]", header)
    assert int(words) * 4 == spec.LLMC_HEADER_BYTES


def test_npy_header_length_agrees() -> None:
    (length,) = re.findall(r"pub const HEADER_LEN: usize = (\d+);", rust("npy.rs"))
    assert int(length) == spec.NPY_HEADER_BYTES


def test_shard_formats_and_names_agree() -> None:
    shard = rust("shard.rs")
    parse = shard[shard.index("pub fn parse(") : shard.index("fn extension(")]
    assert tuple(re.findall(r'"(\w+)" => Ok\(Self::', parse)) == spec.SHARD_FORMATS
    extension = shard[shard.index("fn extension(") : shard.index("fn header(")]
    by_variant = {
        variant.lower(): ext
        for variants, ext in re.findall(r"((?:Self::\w+(?: \| )?)+) => \"(\w+)\"", extension)
        for variant in re.findall(r"Self::(\w+)", variants)
    }
    for fmt in spec.SHARD_FORMATS:
        assert spec.shard_name("train", 7, fmt) == f"train/00007.{by_variant[fmt]}"
    assert 'format!("{}/{k:05}.{what}", self.split)' in shard
    assert 'self.name(k, "idx.npy")' in shard and spec.INDEX_SUFFIX == ".idx.npy"
    assert spec.index_name("val", 12) == "val/00012.idx.npy"


def test_written_files_match_the_spec(tmp_path: Path) -> None:
    """What the writer puts on disk, read by the spec's numbers alone."""
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    m = bpekit.encode_dataset(iter(["abc", "de"]), tmp_path / "ds", tok, shard_format="llmc", shard_tokens=4)
    assert m["format_version"] == spec.FORMAT_VERSION and (tmp_path / "ds" / spec.MANIFEST).is_file()
    first = m["splits"]["train"]["shards"][0]
    assert first["file"] == spec.shard_name("train", 0, "llmc")
    assert first["index"] == spec.index_name("train", 0)
    head = np.fromfile(tmp_path / "ds" / first["file"], dtype="<i4", count=3)
    assert tuple(head[:2]) == spec.LLMC_HEADERS[m["dtype"]] and head[2] == first["tokens"]
    size = (tmp_path / "ds" / first["file"]).stat().st_size
    assert size == spec.LLMC_HEADER_BYTES + first["tokens"] * spec.ID_BYTES[m["dtype"]]
    index = tmp_path / "ds" / first["index"]
    assert index.stat().st_size == spec.NPY_HEADER_BYTES + 8 * (first["documents"] + 1)
    assert np.load(index).dtype == np.dtype(spec.INDEX_DTYPE)


def test_trainer_files_and_megatron_codes_agree(tmp_path: Path) -> None:
    shard = rust("shard.rs")
    side = shard[shard.index("fn side_files(") : shard.index("fn header(")]
    suffixes = {
        fmt: tuple(
            re.findall(r'\(\s*"([\w.]+)",', side[side.index(f"Self::{fmt.title()} =>") :].split("Self::")[1])
        )
        for fmt in spec.TRAINER_FILES
    }
    assert suffixes == spec.TRAINER_FILES
    megatron = rust("megatron.rs")
    assert 'b"MMIDIDX\\x00\\x00"' in megatron and spec.MEGATRON_MAGIC == b"MMIDIDX\x00\x00"
    codes = dict(re.findall(r"const CODE_(\w+): u8 = (\d+);", megatron))
    assert {int(v): k.lower() for k, v in codes.items()} == spec.MEGATRON_CODES
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    for fmt in spec.TRAINER_FILES:
        m = bpekit.encode_dataset(iter(["abc", "de"]), tmp_path / fmt, tok, shard_format=fmt, shard_tokens=4)
        for k, entry in enumerate(m["splits"]["train"]["shards"]):
            assert [f["file"] for f in entry["trainer_files"]] == spec.trainer_file_names("train", k, fmt)
