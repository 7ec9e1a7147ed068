"""``shard_format="megatron"``: each shard a Megatron-LM ``.bin`` + ``.idx`` pair, every
field as ``IndexedDatasetBuilder`` writes it for ``tools/preprocess_data.py``'s
documents (one sequence each), read here from the format's specification and, where
``megatron-core`` is installed, by Megatron's own ``IndexedDataset``."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _trainer_formats import (
    EOT,
    expected_documents,
    interleaves,
    parse_megatron,
    split_documents,
    write_corpus,
)
from conftest import bpekit_encoding

import bpekit
from bpekit.dataset import TokenDataset


def check_pair(prefix: Path, width: int) -> dict[str, Any]:
    """Checks every field of a shard's pair against the format; returns it parsed."""
    m = parse_megatron(prefix)
    assert (m["magic"], m["version"], m["code"], m["trailing"]) == (
        b"MMIDIDX\x00\x00",
        1,
        {2: 8, 4: 4}[width],
        0,
    )
    lengths = m["lengths"]
    assert all(n > 0 for n in lengths)  # preprocess_data.py adds no empty sequence
    assert m["pointers"] == [width * sum(lengths[:k]) for k in range(len(lengths))]
    doc_index = m["doc_index"]
    assert doc_index[0] == 0 and doc_index[-1] == len(lengths)
    # A sequence a document, or none for a document without ids.
    assert all(b - a in (0, 1) for a, b in itertools.pairwise(doc_index))
    assert m["bin_size"] == width * sum(lengths)
    return m


def megatron_docs(path: Path) -> list[list[int]]:
    return parse_megatron(path.with_suffix(""))["documents"]


@pytest.mark.parametrize(
    ("name", "width", "eos"),
    [("gpt2", 2, True), ("gpt2", 2, False), ("o200k_base", 4, True)],
    ids=["uint16-eos", "uint16-no-eos", "int32-eos"],
)
def test_shards_read_back_as_the_encoded_documents(tmp_path: Path, name: str, width: int, eos: bool) -> None:
    tok = bpekit_encoding(name)
    corpus, texts = write_corpus(tmp_path)
    root = tmp_path / "ds"
    options: dict[str, Any] = {"shard_tokens": 300, "val_fraction": 0.25, "seed": 3, "num_threads": 2}
    m = bpekit.encode_dataset(
        corpus, root, tok, shard_format="megatron", eos=None if not eos else EOT, **options
    )
    assert m["format"] == "megatron" and m["dtype"] == ("uint16" if width == 2 else "uint32")
    shards = m["splits"]["train"]["shards"]
    assert len(shards) >= 3 and any(s["continues"] for s in shards)
    for split in m["splits"].values():
        for shard in split["shards"]:
            prefix = root / shard["file"].removesuffix(".bin")
            parsed = check_pair(prefix, width)
            assert len(parsed["doc_index"]) == shard["documents"] + shard["continues"] + 1
            idx = shard["trainer_files"][0]
            assert idx["file"] == shard["file"].removesuffix("bin") + "idx"
            assert idx["size"] == (root / idx["file"]).stat().st_size
    expected = expected_documents(tok, texts, eos)
    train, val = (split_documents(root, s, megatron_docs) for s in ("train", "val"))
    assert val and interleaves(expected, train, val)
    # The ids are those of the raw .bin format, and bpekit's reader reads them.
    plain = bpekit.encode_dataset(
        corpus, tmp_path / "bin", tok, shard_format="bin", eos=None if not eos else EOT, **options
    )
    for split, entry in plain["splits"].items():
        for a, b in zip(entry["shards"], m["splits"][split]["shards"], strict=True):
            assert (tmp_path / "bin" / a["file"]).read_bytes() == (root / b["file"]).read_bytes()
            assert a["index_sha256"] == b["index_sha256"]
    for split, docs in (("train", train), ("val", val)):
        ds = TokenDataset(root, split)
        ds.verify()
        assert [d.tolist() for d in ds] == docs
        x, y = ds.get_batch(4, 16, rng=1)
        assert np.asarray(x).shape == (4, 16) and (np.asarray(x)[:, 1:] == np.asarray(y)[:, :-1]).all()


def test_an_empty_document_is_a_document_without_a_sequence(tmp_path: Path) -> None:
    tok = bpekit_encoding("gpt2")
    docs = tmp_path / "d.jsonl"
    docs.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["a b", "", "c"]))
    bpekit.encode_dataset(docs, tmp_path / "ds", tok, shard_format="megatron", eos=None)
    m = parse_megatron(tmp_path / "ds/train/00000")
    assert m["doc_index"] == [0, 1, 1, 2] and m["lengths"] == [2, 1]
    single = TokenDataset(tmp_path / "ds/train/00000.bin")
    assert single.format == "megatron" and [d.tolist() for d in single] == [
        tok.encode("a b"),
        [],
        tok.encode("c"),
    ]


def test_the_dtype_is_megatron_s_choice(tmp_path: Path) -> None:
    """``DType.optimal_dtype``: uint16 below 65,500 ids, else int32 (where bpekit's own
    rule keeps uint16 up to 65,536)."""
    pairs = [(bytes([a]), bytes([b])) for a in range(256) for b in range(256)][: 65510 - 256]
    vocab = {i: bytes([i]) for i in range(256)} | {256 + k: a + b for k, (a, b) in enumerate(pairs)}
    tok = bpekit.Tokenizer(vocab, pairs)
    text = tmp_path / "a.txt"
    text.write_text("hello there")
    m = bpekit.encode_dataset(text, tmp_path / "m", tok, shard_format="megatron")
    assert m["dtype"] == "uint32" and parse_megatron(tmp_path / "m/train/00000")["code"] == 4
    assert bpekit.encode_dataset(text, tmp_path / "b", tok, shard_format="bin")["dtype"] == "uint16"
    # A dtype given is used.
    m = bpekit.encode_dataset(text, tmp_path / "g", tok, shard_format="megatron", dtype="uint16")
    assert m["dtype"] == "uint16" and parse_megatron(tmp_path / "g/train/00000")["code"] == 8


def test_single_pair_by_path_and_load_tokens(tmp_path: Path) -> None:
    tok = bpekit_encoding("gpt2")
    corpus, texts = write_corpus(tmp_path, n=20)
    bpekit.encode_dataset(corpus, tmp_path / "ds", tok, shard_format="megatron")
    ds = TokenDataset(tmp_path / "ds/train/00000.bin")
    assert [d.tolist() for d in ds] == expected_documents(tok, texts, True)
    tokens = bpekit.load_tokens(tmp_path / "ds/train/00000.bin")
    assert tokens.dtype == np.uint16 and tokens.tolist() == [t for d in ds for t in d.tolist()]
    x, _ = bpekit.get_batch(tokens, 2, 8)
    assert tuple(np.asarray(x).shape) == (2, 8)


def test_a_damaged_index_is_named(tmp_path: Path) -> None:
    tok = bpekit_encoding("gpt2")
    corpus, _ = write_corpus(tmp_path, n=20)
    bpekit.encode_dataset(corpus, tmp_path / "ds", tok, shard_format="megatron")
    idx = tmp_path / "ds/train/00000.idx"
    data = bytearray(idx.read_bytes())
    data[-8] ^= 1
    idx.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"00000\.idx: sha256"):
        TokenDataset(tmp_path / "ds").verify()
    with pytest.raises(ValueError, match=r"00000\.idx: not a Megatron index"):
        TokenDataset(idx.with_suffix(".bin"))
    idx.unlink()
    with pytest.raises(FileNotFoundError, match=r"00000\.idx: missing"):
        TokenDataset(tmp_path / "ds")


def test_a_pair_with_a_bad_magic_is_refused_not_read_as_raw_ids(tmp_path: Path) -> None:
    # With the index's magic (or the whole index) damaged, the .bin once passed for a
    # raw uint16 file: wrong ids, no error.
    tok = bpekit_encoding("o200k_base")
    corpus, _ = write_corpus(tmp_path, n=20)
    bpekit.encode_dataset(corpus, tmp_path / "ds", tok, shard_format="megatron")
    idx = tmp_path / "ds/train/00000.idx"
    data = bytearray(idx.read_bytes())
    for damaged in (bytes([data[0] ^ 0xFF]) + bytes(data[1:]), bytes(data[:5])):
        idx.write_bytes(damaged)
        with pytest.raises(ValueError, match=r"00000\.idx: not a Megatron index"):
            TokenDataset(idx.with_suffix(".bin"))
        with pytest.raises(ValueError, match=r"00000\.idx: not a Megatron index"):
            bpekit.load_tokens(idx.with_suffix(".bin"))


def test_a_npy_is_read_as_npy_beside_an_idx(tmp_path: Path) -> None:
    ids = np.arange(99, dtype=np.uint16)
    np.save(tmp_path / "x.npy", ids)
    (tmp_path / "x.idx").write_bytes(b"MMIDIDX\x00\x00" + bytes(30))
    assert TokenDataset(tmp_path / "x.npy").document(0).tolist() == ids.tolist()


def test_megatron_s_own_reader(tmp_path: Path) -> None:
    indexed = pytest.importorskip(
        "megatron.core.datasets.indexed_dataset",
        reason="megatron-core (and the torch it imports) is not installed: PyPI's Linux torch brings CUDA",
    )
    tok = bpekit_encoding("gpt2")
    corpus, texts = write_corpus(tmp_path)
    m = bpekit.encode_dataset(corpus, tmp_path / "ds", tok, shard_format="megatron", shard_tokens=300)
    got: list[list[int]] = []
    for shard in m["splits"]["train"]["shards"]:
        ds = indexed.IndexedDataset(str(tmp_path / "ds" / shard["file"].removesuffix(".bin")))
        parts = [ds[i].tolist() for i in range(len(ds))]
        if shard["continues"]:
            got[-1] += parts.pop(0)
        got.extend(parts)
    assert got == [d for d in expected_documents(tok, texts, True)]


def test_the_cli_writes_megatron_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bpekit.cli import main

    bpekit_encoding("gpt2")  # skips without the shared rank files
    corpus, texts = write_corpus(tmp_path, n=30)
    out = tmp_path / "ds"
    args = ["encode", str(corpus), "-t", "gpt2", "--out", str(out), "--shard-format", "megatron"]
    assert main([*args, "--shard-tokens", "300", "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "megatron"
    files = {f["file"] for s in manifest["splits"]["train"]["shards"] for f in s["trainer_files"]}
    assert files == {str(p.relative_to(out)) for p in (out / "train").glob("*.idx")}
    docs = split_documents(out, "train", megatron_docs)
    assert docs == expected_documents(bpekit_encoding("gpt2"), texts, True)


def test_a_finished_dataset_missing_its_idx_is_written_again(tmp_path: Path) -> None:
    tok = bpekit_encoding("gpt2")
    corpus, _ = write_corpus(tmp_path, n=30)
    root = tmp_path / "ds"
    bpekit.encode_dataset(corpus, root, tok, shard_format="megatron", shard_tokens=300)
    want = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    (root / "train/00001.idx").unlink()
    bpekit.encode_dataset(corpus, root, tok, shard_format="megatron", shard_tokens=300)
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()} == want
