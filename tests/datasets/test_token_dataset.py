"""TokenDataset: reading token datasets (the folders of bpekit's dataset format, written by
hand with numpy in ``_handmade_dataset``, and single .npy / .bin / llm.c files) through
memory maps."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _handmade_dataset import DOCS, cut, edit_manifest, plain, write_dataset, write_ids
from _subprocess import run_cli

import bpekit
from bpekit.dataset import TokenDataset

try:
    import torch
except ImportError:
    torch = None

# -- the formats -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
@pytest.mark.parametrize("fmt", ["npy", "bin", "llmc"])
def test_every_format_reads_back_its_documents(tmp_path: Path, fmt: str, dtype: str) -> None:
    shards = cut(DOCS, 8)
    # The cut is the one the format describes: parts continue, a long document spans three.
    assert [len(s["ids"]) for s in shards] == [8, 8, 8, 8, 3]
    assert [s["continues"] for s in shards] == [False, True, True, True, True]
    assert [s["documents"] for s in shards] == [2, 2, 0, 2, 0]
    manifest = write_dataset(tmp_path, {"train": shards}, fmt, dtype)
    ds = TokenDataset(tmp_path)
    flat = [t for d in DOCS for t in d]
    assert len(ds) == len(flat) == 35
    assert ds.n_documents == len(DOCS)
    assert ds.manifest == manifest
    assert ds.format == fmt and ds.dtype == np.dtype(dtype) and ds.split == "train"
    assert [plain(ds.document(i)) for i in range(len(DOCS))] == DOCS
    assert [plain(ds.document(-i)) for i in range(1, len(DOCS) + 1)] == DOCS[::-1]
    assert [plain(d) for d in ds] == DOCS
    assert [s.path.name for s in ds.shards] == [
        f"0000{k}.{'npy' if fmt == 'npy' else 'bin'}" for k in range(5)
    ]
    assert [s.tokens for s in ds.shards] == [8, 8, 8, 8, 3]
    assert np.concatenate([ds.shard(k) for k in range(5)]).tolist() == flat
    for k, shard in enumerate(shards):
        assert ds.shard(k).dtype == np.dtype(dtype)
        assert ds.offsets(k).tolist() == shard["index"]
    ds.verify()
    assert "35 tokens, 6 documents, 5 shards" in repr(ds)


def test_a_document_is_a_view_unless_continued(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    ds = TokenDataset(tmp_path)
    first = ds.document(0)
    assert isinstance(first, np.memmap) and np.shares_memory(first, ds.shard(0))
    assert not first.flags.writeable  # read-only, as the files are
    fifth = ds.document(4)
    assert np.shares_memory(fifth, ds.shard(3))
    # Cut across shards 0 and 1, across 1, 2 and 3, and across 3 and 4: joined into new arrays.
    for i in (1, 3, 5):
        doc = ds.document(i)
        assert not isinstance(doc, np.memmap)
        assert not any(np.shares_memory(doc, ds.shard(k)) for k in range(5))
        assert plain(doc) == DOCS[i]
    assert plain(ds.document(2)) == []  # empty, between two cut documents
    for bad in (6, -7):
        with pytest.raises(IndexError, match=f"document {bad} is out of range: .* has 6 documents"):
            ds.document(bad)
    with pytest.raises(TypeError, match="must be an integer"):
        ds.document(1.0)  # type: ignore[arg-type]


def test_documents_that_end_exactly_at_a_shard_end(tmp_path: Path) -> None:
    docs = [[1, 2, 3, 4], [5, 6, 7, 8], [9] * 8, [10] * 16, [11]]
    shards = cut(docs, 4)
    assert [s["continues"] for s in shards] == [False, False, False, True, False, True, True, True, False]
    write_dataset(tmp_path, {"train": shards}, shard_tokens=4)
    ds = TokenDataset(tmp_path)
    assert [plain(d) for d in ds] == docs
    assert [plain(ds.document(i)) for i in range(len(docs))] == docs


def test_splits_and_the_split_folder(tmp_path: Path) -> None:
    train, val = DOCS[:4], DOCS[4:]
    write_dataset(tmp_path, {"train": cut(train, 8), "val": cut(val, 8)})
    assert [plain(d) for d in TokenDataset(tmp_path)] == train
    assert [plain(d) for d in TokenDataset(tmp_path, "val")] == val
    assert [plain(d) for d in TokenDataset(tmp_path / "val")] == val
    assert TokenDataset(tmp_path / "val").split == "val"
    with pytest.raises(ValueError, match="is the folder of split 'val', but split='train' was given"):
        TokenDataset(tmp_path / "val", "train")
    with pytest.raises(ValueError, match=r"no split 'test' \(the splits there: 'train', 'val'\)"):
        TokenDataset(tmp_path, "test")


def test_a_missing_val_split_names_the_splits_there(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    with pytest.raises(
        ValueError, match=r"no split 'val' \(the splits there: 'train'\); val/ is written only"
    ):
        TokenDataset(tmp_path, "val")


def test_many_shards_keep_few_maps_open(tmp_path: Path) -> None:
    docs = [[k % 60_000] * (1 + k % 5) for k in range(300)]
    write_dataset(tmp_path, {"train": cut(docs, 5)}, shard_tokens=5)
    ds = TokenDataset(tmp_path)
    assert len(ds.shards) > 100
    assert [plain(d) for d in ds] == docs
    assert plain(ds.document(150)) == docs[150]
    x, _ = ds.get_batch(256, 3, rng=0)
    assert x.shape == (256, 3)
    assert len(ds._arrays) <= 64 and len(ds._offsets) <= 64


def test_pickles_without_its_maps(tmp_path: Path) -> None:
    # A DataLoader worker started by spawn gets the dataset by pickle: the maps stay behind.
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    ds = TokenDataset(tmp_path)
    list(ds)
    data = pickle.dumps(ds)
    assert len(data) < 5000
    copy = pickle.loads(data)
    assert [plain(d) for d in copy] == DOCS and len(copy) == len(ds)


# -- get_batch ---------------------------------------------------------------------------


def shard_ids(lengths: list[int]) -> list[dict[str, Any]]:
    """Shards of the given lengths whose ids say where they are: 1000 * shard + position."""
    return [
        {"ids": [1000 * k + p for p in range(n)], "index": [0, n], "documents": 1, "continues": False}
        for k, n in enumerate(lengths)
    ]


@pytest.mark.parametrize("fmt", ["npy", "llmc"])
def test_get_batch_never_crosses_a_shard_boundary(tmp_path: Path, fmt: str) -> None:
    lengths = [9, 4, 20, 6, 2, 13]
    write_dataset(tmp_path, {"train": shard_ids(lengths)}, fmt, shard_tokens=20)
    ds = TokenDataset(tmp_path)
    rng = np.random.default_rng(1)
    for context_length in (1, 3, 5, 12):
        x, y = ds.get_batch(500, context_length, rng=rng)
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape == (500, context_length) and x.dtype == y.dtype == np.int64
        shard, start = x[:, 0] // 1000, x[:, 0] % 1000
        # Each window: consecutive ids of one shard, targets shifted by one, within it.
        assert (x == x[:, :1] + np.arange(context_length)).all()
        assert (y == x + 1).all()
        assert (start + context_length < np.array(lengths)[shard]).all()


def test_get_batch_reaches_every_window_uniformly(tmp_path: Path) -> None:
    lengths = [5, 7, 3, 6]  # with context_length 3: 2, 4, 0 and 3 windows
    write_dataset(tmp_path, {"train": shard_ids(lengths)}, "bin", shard_tokens=7)
    ds = TokenDataset(tmp_path)
    x, _ = ds.get_batch(18_000, 3, rng=np.random.default_rng(7))
    starts, counts = np.unique(np.asarray(x)[:, 0], return_counts=True)
    assert starts.tolist() == [0, 1, 1000, 1001, 1002, 1003, 3000, 3001, 3002]
    # 2,000 draws each expected; a sanity bound, far wider than chance needs.
    assert counts.min() > 1700 and counts.max() < 2300, counts


def test_get_batch_on_one_array_draws_as_bpekit_get_batch(tmp_path: Path) -> None:
    ids = np.random.default_rng(0).integers(0, 50_000, size=1000).astype(np.uint16)
    np.save(tmp_path / "ids.npy", ids)
    ds = TokenDataset(tmp_path / "ids.npy")
    ours = ds.get_batch(16, 32, rng=np.random.default_rng(5))
    theirs = bpekit.get_batch(ids, 16, 32, rng=np.random.default_rng(5))
    for a, b in zip(ours, theirs, strict=True):
        assert np.asarray(a).tolist() == np.asarray(b).tolist()
    # A seed is taken for rng, and gives the same draws again.
    assert (
        np.asarray(ds.get_batch(4, 8, rng=3)[0]).tolist() == np.asarray(ds.get_batch(4, 8, rng=3)[0]).tolist()
    )


def test_get_batch_errors(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": shard_ids([5, 9, 4])}, shard_tokens=9)
    ds = TokenDataset(tmp_path)
    ds.get_batch(2, 8)  # 9 tokens hold one window of 8 and its targets
    with pytest.raises(
        ValueError, match=r"context_length=9 is longer than every shard allows.* the longest has 9"
    ):
        ds.get_batch(2, 9)
    for name, args in (("batch_size", (0, 4)), ("context_length", (2, 0)), ("batch_size", (True, 4))):
        with pytest.raises(ValueError, match=f"{name} must be a positive integer"):
            ds.get_batch(*args)
    empty = tmp_path / "empty"
    write_dataset(empty, {"train": []})
    with pytest.raises(ValueError, match="no tokens to sample from"):
        TokenDataset(empty).get_batch(1, 1)
    assert len(TokenDataset(empty)) == 0 and TokenDataset(empty).n_documents == 0
    assert list(TokenDataset(empty)) == []


@pytest.mark.skipif(torch is not None, reason="torch is installed")
def test_get_batch_without_torch_gives_numpy_on_cpu_only(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": shard_ids([10])}, shard_tokens=10)
    x, y = TokenDataset(tmp_path).get_batch(2, 3)
    assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.flags.c_contiguous
    with pytest.raises(ValueError, match="device 'cuda' needs torch, which is not installed"):
        TokenDataset(tmp_path).get_batch(2, 3, device="cuda")


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_get_batch_with_torch_gives_int64_tensors(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": shard_ids([10, 12])}, shard_tokens=12)
    x, y = TokenDataset(tmp_path).get_batch(4, 3)
    assert isinstance(x, torch.Tensor) and x.dtype == torch.int64 and x.device.type == "cpu"
    assert (y - x == 1).all()


# -- opening and verify: what is wrong, said in one line ---------------------------------


def one_line(e: pytest.ExceptionInfo[BaseException], *said: str) -> None:
    text = str(e.value)
    assert "\n" not in text, text
    for s in said:
        assert s in text, text


def test_a_folder_without_a_manifest(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as e:
        TokenDataset(tmp_path)
    one_line(e, str(tmp_path), "no manifest.json, so not a bpekit dataset folder")
    with pytest.raises(FileNotFoundError) as e:
        TokenDataset(tmp_path / "nothing")
    one_line(e, "nothing: no such file or folder")


def test_an_incomplete_manifest(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS, 8)}, complete=False)
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, "incomplete", "the run writing it has not finished; re-run it to resume")


def test_an_unknown_format_version(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    edit_manifest(tmp_path, lambda m: m.update(format_version=2))
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, "manifest.json: unknown format_version 2", "reads format_version 1")


def test_a_damaged_manifest(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    (tmp_path / "manifest.json").write_text('{"format_version": 1, ')
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, "manifest.json: not valid JSON")
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    edit_manifest(tmp_path, lambda m: m["splits"]["train"]["shards"][1].pop("tokens"))
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, "split 'train', shard 1: no 'tokens'")
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    edit_manifest(tmp_path, lambda m: m["splits"]["train"].update(tokens=99))
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, "split 'train': tokens is 99 but its shards hold 35")
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    edit_manifest(tmp_path, lambda m: m["splits"]["train"]["shards"][0].update(file="../elsewhere.npy"))
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, "'../elsewhere.npy' is not a path inside the dataset folder")
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    edit_manifest(tmp_path, lambda m: m.update(format="arrow"))
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, "unknown format 'arrow'")


@pytest.mark.parametrize("fmt", ["npy", "bin", "llmc"])
def test_a_missing_or_resized_shard_is_named_on_opening(tmp_path: Path, fmt: str) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS, 8)}, fmt)
    ext = "npy" if fmt == "npy" else "bin"
    shard = tmp_path / "train" / f"00002.{ext}"
    data = shard.read_bytes()
    shard.unlink()
    with pytest.raises(FileNotFoundError) as e:
        TokenDataset(tmp_path)
    one_line(e, f"00002.{ext}: missing (a shard listed in the manifest)")
    shard.write_bytes(data[:-2])
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, f"00002.{ext}", "truncated" if fmt == "bin" else "")
    shard.write_bytes(data + b"\0\0")
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, f"00002.{ext}")
    shard.write_bytes(data)
    index = tmp_path / "train" / "00001.idx.npy"
    index.unlink()
    with pytest.raises(FileNotFoundError) as e:
        TokenDataset(tmp_path)
    one_line(e, "00001.idx.npy: missing (a document index listed in the manifest)")
    np.save(index, np.array([0, 8], dtype=np.uint64))  # two entries short of 0, 2, 2, 8
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path)
    one_line(e, "00001.idx.npy", "calls for 4 uint64 offsets")


@pytest.mark.parametrize("fmt", ["npy", "bin", "llmc"])
def test_verify_names_the_first_corrupt_file(tmp_path: Path, fmt: str) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS, 8)}, fmt)
    TokenDataset(tmp_path).verify()
    ext = "npy" if fmt == "npy" else "bin"
    shard = tmp_path / "train" / f"00001.{ext}"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1  # same size: opening is content, verify is not
    shard.write_bytes(bytes(data))
    ds = TokenDataset(tmp_path)
    with pytest.raises(ValueError) as e:
        ds.verify()
    one_line(e, f"00001.{ext}: sha256", "differs from the manifest's")
    data[-1] ^= 1
    shard.write_bytes(bytes(data))
    index = tmp_path / "train" / "00004.idx.npy"
    np.save(index, np.array([0, 2], dtype=np.uint64))  # same size, other offsets
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path).verify()
    one_line(e, "00004.idx.npy: sha256")


def test_a_bad_index_is_named_when_used(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS, 8)})
    np.save(tmp_path / "train" / "00000.idx.npy", np.array([0, 5, 7], dtype=np.uint64))
    ds = TokenDataset(tmp_path)  # the size is right: opening reads no index
    with pytest.raises(ValueError) as e:
        ds.document(0)
    one_line(e, "00000.idx.npy: not the document index of 00000.npy: it runs from 0 to 7, not from 0 to 8")
    np.save(tmp_path / "train" / "00000.idx.npy", np.array([0, 5, 8], dtype=np.uint64))
    np.save(tmp_path / "train" / "00003.idx.npy", np.array([0, 6, 5, 8], dtype=np.uint64))
    with pytest.raises(ValueError) as e:
        list(TokenDataset(tmp_path))
    one_line(e, "00003.idx.npy: not the document index of 00003.npy: it has offsets that decrease")


# -- single files ------------------------------------------------------------------------


def test_a_npy_written_by_encode_file(tmp_path: Path) -> None:
    lines = [json.dumps({"text": t}) for t in ("hello world", "", "bye now")]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    n = bpekit.encode_file(tmp_path / "a.jsonl", tmp_path / "a.npy", tok)
    ds = bpekit.TokenDataset(tmp_path / "a.npy")
    tokens = bpekit.load_tokens(tmp_path / "a.npy")
    assert len(ds) == n == len(tokens) and ds.n_documents == 1 and ds.manifest is None
    assert ds.format == "npy" and ds.dtype == np.uint16
    assert plain(ds.document(0)) == tokens.tolist() == plain(next(iter(ds)))
    assert ds.shards[0].index is None
    x, y = ds.get_batch(3, 5, rng=0)
    assert (np.asarray(y)[:, :-1] == np.asarray(x)[:, 1:]).all()
    ds.verify()


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_raw_and_llmc_bin_files(tmp_path: Path, dtype: str) -> None:
    ids = list(range(60_000, 60_020))
    write_ids(tmp_path / "raw.bin", ids, "bin", dtype)
    write_ids(tmp_path / "llmc.bin", ids, "llmc", dtype)
    raw = TokenDataset(tmp_path / "raw.bin", dtype=dtype)
    assert raw.format == "bin" and plain(raw.document(0)) == ids
    llmc = TokenDataset(tmp_path / "llmc.bin")  # recognised by its magic
    assert llmc.format == "llmc" and llmc.dtype == np.dtype(dtype) and plain(llmc.document(0)) == ids
    assert TokenDataset(tmp_path / "llmc.bin", dtype=dtype).format == "llmc"
    other = "uint32" if dtype == "uint16" else "uint16"
    with pytest.raises(ValueError, match=f"an llm.c file of {dtype} ids"):
        TokenDataset(tmp_path / "llmc.bin", dtype=other)
    # Read raw, the header is ids too.
    forced = TokenDataset(tmp_path / "llmc.bin", format="bin", dtype=dtype)
    assert len(forced) == len(ids) + 1024 // np.dtype(dtype).itemsize
    if dtype == "uint16":
        assert len(TokenDataset(tmp_path / "raw.bin")) == 20  # uint16 unless told


def test_bad_single_files(tmp_path: Path) -> None:
    (tmp_path / "odd.bin").write_bytes(b"\0" * 7)
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path / "odd.bin")
    one_line(e, "odd.bin: 7 bytes is not a whole number of uint16 ids")
    write_ids(tmp_path / "short.bin", list(range(10)), "llmc", "uint16")
    data = (tmp_path / "short.bin").read_bytes()
    (tmp_path / "short.bin").write_bytes(data[:-4])
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path / "short.bin")
    one_line(e, "short.bin: an llm.c header for 10 uint16 ids, but 1,040 bytes, not 1,044")
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path / "odd.bin", format="llmc")
    one_line(e, "odd.bin: not an llm.c token file")
    np.save(tmp_path / "f.npy", np.zeros((2, 3), dtype=np.uint16))
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path / "f.npy")
    one_line(e, "f.npy: expected a 1-D integer array of token ids")
    (tmp_path / "t.npy").write_bytes(np.lib.format.magic(1, 0) + b"\x10\x00{'descr': '<u2', ")
    with pytest.raises(ValueError) as e:
        TokenDataset(tmp_path / "t.npy")
    one_line(e, "t.npy: not a readable .npy file")
    with pytest.raises(ValueError, match="split='val' names a split of a dataset folder"):
        TokenDataset(tmp_path / "odd.bin", split="val")
    with pytest.raises(ValueError, match="format must be one of"):
        TokenDataset(tmp_path / "odd.bin", format="parquet")


def test_a_single_file_with_its_index_beside_it(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.arange(10, dtype=np.uint32))
    np.save(tmp_path / "x.idx.npy", np.array([0, 4, 4, 10], dtype=np.uint64))
    ds = TokenDataset(tmp_path / "x.npy")
    assert ds.n_documents == 3
    assert [plain(d) for d in ds] == [[0, 1, 2, 3], [], [4, 5, 6, 7, 8, 9]]
    ds.verify()
    # A shard of a dataset opened alone: its parts are its documents.
    write_dataset(tmp_path / "d", {"train": cut(DOCS, 8)})
    shard = TokenDataset(tmp_path / "d" / "train" / "00001.npy")
    assert [plain(d) for d in shard] == [[9, 10], [], [20, 21, 22, 23, 24, 25]]


# -- end to end: encode_dataset, then TokenDataset ----------------------------------------

needs_writer = pytest.mark.skipif(
    not hasattr(bpekit, "encode_dataset"), reason="bpekit.encode_dataset is not built yet"
)
EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[list[Path], list[str], list[str]]:
    """A JSON lines file of 80 C4 records, and a text file of TinyStories documents
    (ending in a story, not in a separator); with the records' texts and the text's
    documents (each up to and including its separator)."""
    from conftest import data_path

    d = tmp_path_factory.mktemp("corpus")
    lines = data_path("corpora", "c4_sample.jsonl").read_text(encoding="utf-8").splitlines()[:80]
    (d / "c4.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    records = [json.loads(line)["text"] for line in lines]
    stories = data_path("corpora", "tinystories_v2_train_head_2MiB.txt").read_text(encoding="utf-8")
    text = stories[:60_000].rsplit(EOT, 1)[0]
    (d / "stories.txt").write_text(text, encoding="utf-8")
    pieces = text.split(EOT)
    documents = [p + EOT for p in pieces[:-1]] + [pieces[-1]]
    return [d / "c4.jsonl", d / "stories.txt"], records, documents


def expected_documents(tok, records: list[str], documents: list[str]) -> list[list[int]]:
    eot = tok.eot_token
    return [[*tok.encode_ordinary(r), eot] for r in records] + [
        tok.encode(doc, allowed_special="all") for doc in documents
    ]


def test_the_expected_documents_make_encode_files_ids(corpus, tmp_path: Path) -> None:
    # The end-to-end tests' expectation, checked before there is a writer to compare.
    from conftest import bpekit_encoding

    tok = bpekit_encoding("gpt2")
    inputs, records, documents = corpus
    bpekit.encode_file(inputs, tmp_path / "all.npy", tok)
    expected = expected_documents(tok, records, documents)
    assert [t for d in expected for t in d] == bpekit.load_tokens(tmp_path / "all.npy").tolist()


@needs_writer
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shard_tokens", [150, 5000, 2**28])
@pytest.mark.parametrize("fmt", ["npy", "bin", "llmc"])
def test_encode_dataset_reads_back_as_encode_file(
    corpus, tmp_path: Path, fmt: str, shard_tokens: int, threads: int
):
    from conftest import bpekit_encoding

    tok = bpekit_encoding("gpt2")
    inputs, records, documents = corpus
    n = bpekit.encode_file(inputs, tmp_path / "all.npy", tok, num_threads=threads)
    manifest = bpekit.encode_dataset(
        inputs, tmp_path / "out", tok, shard_tokens=shard_tokens, shard_format=fmt, num_threads=threads
    )
    ds = TokenDataset(tmp_path / "out")
    assert ds.manifest == manifest and ds.format == fmt and ds.dtype == np.uint16
    ds.verify()
    assert len(ds) == n
    assert np.concatenate([ds.shard(k) for k in range(len(ds.shards))]).tolist() == (
        bpekit.load_tokens(tmp_path / "all.npy").tolist()
    )
    expected = expected_documents(tok, records, documents)
    assert ds.n_documents == len(expected)
    assert [plain(d) for d in ds] == expected
    assert all(s.tokens <= shard_tokens for s in ds.shards)
    for i in (0, len(expected) // 2, -1):
        assert plain(ds.document(i)) == expected[i]
    x, y = ds.get_batch(8, 16, rng=0)
    assert (np.asarray(y)[:, :-1] == np.asarray(x)[:, 1:]).all()
    assert run_cli("inspect", str(tmp_path / "out"), cwd=tmp_path).returncode == 0


def interleaves(whole: list[list[int]], a: list[list[int]], b: list[list[int]]) -> bool:
    """Whether ``whole`` is ``a`` and ``b`` interleaved, each in its order."""
    i = j = 0
    for item in whole:
        if i < len(a) and a[i] == item:
            i += 1
        elif j < len(b) and b[j] == item:
            j += 1
        else:
            return False
    return i == len(a) and j == len(b)


@needs_writer
def test_encode_dataset_val_split_by_document(corpus, tmp_path: Path) -> None:
    from conftest import bpekit_encoding

    tok = bpekit_encoding("gpt2")
    inputs, records, documents = corpus
    expected = expected_documents(tok, records, documents)
    splits = []
    for k, (threads, shard_tokens) in enumerate([(1, 300), (2, 4000)]):
        out = tmp_path / f"out{k}"
        bpekit.encode_dataset(
            inputs, out, tok, val_fraction=0.3, seed=1, shard_tokens=shard_tokens, num_threads=threads
        )
        train = [plain(d) for d in TokenDataset(out)]
        val = [plain(d) for d in TokenDataset(out, "val")]
        assert 0 < len(val) < len(expected) and interleaves(expected, train, val)
        splits.append(val)
    # The same documents in val, whatever the threads and shard size.
    assert splits[0] == splits[1]
