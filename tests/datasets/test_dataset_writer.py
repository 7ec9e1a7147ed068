"""``bpekit.encode_dataset``: the manifest, the folder rules, the checks of its options,
and the documents of text files and records in the shards' indexes. Reading datasets
back (and end-to-end equality with ``encode_file``) is in ``test_token_dataset.py``."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import bpekit_encoding, data_path

import bpekit

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tok():
    return bpekit_encoding("gpt2")


def records_file(tmp_path: Path, texts: list[str]) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    return path


def index(root: Path, shard: dict) -> list[int]:
    return np.load(root / shard["index"]).tolist()


def test_the_manifest_says_what_was_encoded_with_what(tmp_path: Path, tok) -> None:
    src = records_file(tmp_path, ["first doc", "", "third one here"])
    root = tmp_path / "ds"
    m = bpekit.encode_dataset(src, root, "gpt2", shard_tokens=4)
    assert json.loads((root / "manifest.json").read_text()) == m
    assert m["complete"] and m["format_version"] == 1 and m["format"] == "npy" and m["dtype"] == "uint16"
    assert m["tokenizer"]["name"] == "gpt2" and set(m["tokenizer"]["files"]) == {"vocab.bpe", "encoder.json"}
    assert m["eos"] == {"token": EOT, "id": tok.eot_token} and m["bos"] is None
    assert m["inputs"] == [
        {
            "kind": "jsonl",
            "name": str(src),
            "size": src.stat().st_size,
            "mtime_ns": src.stat().st_mtime_ns,
            "text_field": "text",
        }
    ]
    want = [[*tok.encode_ordinary(t), tok.eot_token] for t in ["first doc", "", "third one here"]]
    assert m["totals"]["tokens"] == sum(map(len, want)) and m["totals"]["documents"] == 3
    shards = m["splits"]["train"]["shards"]
    for s in shards:
        assert s["sha256"] == hashlib.sha256((root / s["file"]).read_bytes()).hexdigest()
        assert s["index_sha256"] == hashlib.sha256((root / s["index"]).read_bytes()).hexdigest()
        assert s["tokens"] <= 4 and s["inputs"] == [0]
    # The empty record is a document of its eos alone, in the index like any other.
    docs = []
    for s in shards:
        ids = np.load(root / s["file"]).tolist()
        bounds = index(root, s)
        parts = [ids[a:b] for a, b in itertools.pairwise(bounds)]
        if s["continues"]:
            docs[-1] += parts.pop(0)
        docs += parts
    assert docs == want


def test_text_files_are_documents_split_at_their_special_tokens(tmp_path: Path, tok) -> None:
    text = data_path("corpora", "tinystories_v2_train_head_2MiB.txt").read_text(encoding="utf-8")[:20_000]
    src = tmp_path / "stories.txt"
    src.write_text(text, encoding="utf-8")
    root = tmp_path / "ds"
    m = bpekit.encode_dataset(src, root, tok)
    (shard,) = m["splits"]["train"]["shards"]
    ids = np.load(root / shard["file"]).tolist()
    bounds = index(root, shard)
    pieces = text.split(EOT)
    want = [tok.encode(p + EOT, allowed_special="all") for p in pieces[:-1]] + [tok.encode(pieces[-1])]
    want = [w for w in want if w]
    assert [ids[a:b] for a, b in itertools.pairwise(bounds)] == want
    assert shard["documents"] == len(want) and m["eos"] is None


@pytest.mark.parametrize("shard_format", ["bin", "llmc"])
def test_bin_and_llmc_shards_read_back_raw(tmp_path: Path, tok, shard_format: str) -> None:
    src = records_file(tmp_path, ["alpha beta", "gamma"] * 50)
    root = tmp_path / "ds"
    m = bpekit.encode_dataset(src, root, tok, shard_format=shard_format, shard_tokens=100)
    bpekit.encode_file(src, tmp_path / "all.npy", tok)
    got = []
    for s in m["splits"]["train"]["shards"]:
        path = root / s["file"]
        assert path.suffix == ".bin"
        if shard_format == "llmc":
            header = np.fromfile(path, dtype="<i4", count=256)
            assert (header[0], header[1], header[2]) == (20240520, 1, s["tokens"])
            got += np.memmap(path, dtype="<u2", mode="r", offset=1024).tolist()
        else:
            got += np.memmap(path, dtype="<u2", mode="r").tolist()
    assert got == bpekit.load_tokens(tmp_path / "all.npy").tolist()


def test_a_rerun_returns_the_dataset_and_other_options_are_refused(tmp_path: Path, tok) -> None:
    src = records_file(tmp_path, ["one", "two"])
    root = tmp_path / "ds"
    m = bpekit.encode_dataset(src, root, tok, shard_tokens=3)
    shard = root / m["splits"]["train"]["shards"][0]["file"]
    before = shard.stat().st_mtime_ns
    assert bpekit.encode_dataset(src, root, tok, shard_tokens=3) == m
    assert shard.stat().st_mtime_ns == before
    with pytest.raises(FileExistsError, match=r"ds: holds a dataset written with other shard_tokens; pass"):
        bpekit.encode_dataset(src, root, tok, shard_tokens=5)
    m5 = bpekit.encode_dataset(src, root, tok, shard_tokens=5, resume=False)
    assert m5["shard_tokens"] == 5 and sorted(p.name for p in (root / "train").iterdir()) == [
        "00000.idx.npy",
        "00000.npy",
    ]


def test_a_folder_with_other_files_is_refused(tmp_path: Path, tok) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"holds other files \(notes\.txt\)"):
        bpekit.encode_dataset(iter(["x"]), tmp_path, tok)
    with pytest.raises(FileExistsError, match=r"holds other files"):
        bpekit.encode_dataset(iter(["x"]), tmp_path, tok, resume=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError, match="file: not a folder"):
        bpekit.encode_dataset(iter(["x"]), tmp_path / "file", tok)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shard_tokens": 0}, "shard_tokens must be a positive int, not 0"),
        ({"shard_tokens": 2.5}, "shard_tokens must be a positive int, not 2.5"),
        ({"val_fraction": 1.0}, "val_fraction must be at least 0 and below 1, not 1.0"),
        ({"val_fraction": -0.1}, "val_fraction must be at least 0 and below 1, not -0.1"),
        (
            {"shard_format": "parquet"},
            "shard_format must be one of npy, bin, llmc, megatron, datatrove, not 'parquet'",
        ),
        ({"shard_format": "llmc", "shard_tokens": 2**31}, "more than llm.c's header counts"),
        (
            {"shard_format": "megatron", "shard_tokens": 2**31},
            "more than Megatron's index counts in a sequence",
        ),
        ({"seed": -1}, "seed must be an int from 0 to 2\\*\\*64 - 1, not -1"),
        ({"dtype": "uint8"}, "dtype must be uint16 or uint32, not uint8"),
    ],
)
def test_bad_options_are_refused_before_any_work(tmp_path: Path, tok, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bpekit.encode_dataset(iter(["x"]), tmp_path / "ds", tok, **options)
    assert not (tmp_path / "ds").exists()


def test_uint16_cannot_hold_a_large_vocabulary(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="uint16 cannot hold the ids of a 200019-token vocabulary"):
        bpekit.encode_dataset(iter(["x"]), tmp_path / "ds", bpekit_encoding("o200k_base"), dtype="uint16")


def test_the_command_writes_a_dataset_when_out_is_a_folder(tmp_path: Path, tok, capsys) -> None:
    from bpekit.cli import main

    src = records_file(tmp_path, [f"record {i} " * 30 for i in range(200)])
    out = tmp_path / "ds"
    args = ["encode", str(src), "-t", "gpt2", "-o", str(out), "--quiet", "--shard-tokens", "1000"]
    assert main([*args, "--val-fraction", "0.25", "--seed", "7", "--shard-format", "bin"]) == 0
    printed = capsys.readouterr().out
    assert "200 documents" in printed and "eos '<|endoftext|>' (id 50256) after each record" in printed
    m = json.loads((out / "manifest.json").read_text())
    assert (m["format"], m["seed"], m["val_fraction"], m["shard_tokens"]) == ("bin", 7, 0.25, 1000)
    lines = [ln for ln in printed.splitlines() if ln.strip().startswith(("train:", "val:"))]
    assert len(lines) == 2 and "bin shard(s) of uint16" in lines[0]
    train, val = bpekit.TokenDataset(out), bpekit.TokenDataset(out, "val")
    assert train.n_documents + val.n_documents == 200 and val.n_documents > 0
    # The same command again: nothing to do; other options: refused, by name.
    assert main([*args, "--val-fraction", "0.25", "--seed", "7", "--shard-format", "bin"]) == 0
    assert "holds this dataset already" in capsys.readouterr().out
    assert main([*args, "--seed", "8"]) == 2
    # The command line names the options by their flags.
    err = capsys.readouterr().err
    assert "holds a dataset written with other --shard-format, --val-fraction, seed" in err
    # Dataset options with a .npy output are a mistake, said before any work.
    assert main(["encode", str(src), "-t", "gpt2", "-o", str(tmp_path / "x.npy"), "--seed", "3"]) == 2
    assert "--seed is for a dataset folder, and --out" in capsys.readouterr().err
    # A zero is a value given, and refused as the API refuses it.
    assert main([*args[:-2], "--shard-tokens", "0", "--overwrite"]) == 2
    assert "--shard-tokens must be a positive int, not 0" in capsys.readouterr().err
    assert not (tmp_path / "x.npy").exists()


def test_long_documents_that_wait_for_their_shard_come_out_whole(tmp_path: Path, tok) -> None:
    # Documents of a million ids and more wait whole for the shard they end up in.
    rng = np.random.default_rng(1)
    pool = np.array(["the", "cat", "sat", "on", "mat", "über", "東京", "1999", "!!"])
    docs = [
        "a short one",
        " ".join(rng.choice(pool, 1_300_000)),
        "x y",
        " ".join(rng.choice(pool, 2_100_000)),
    ]
    src = tmp_path / "long.txt"
    src.write_text(EOT.join(docs) + EOT, encoding="utf-8")
    m = bpekit.encode_dataset(src, tmp_path / "ds", tok, shard_tokens=3_500_000, num_threads=2)
    bpekit.encode_file(src, tmp_path / "all.npy", tok)
    want = bpekit.load_tokens(tmp_path / "all.npy")
    shards = m["splits"]["train"]["shards"]
    assert [s["documents"] for s in shards] == [3, 1]
    got = np.concatenate([np.load(tmp_path / "ds" / s["file"]) for s in shards])
    assert np.array_equal(got, want)
    lengths = [len(tok.encode(d + EOT, allowed_special="all")) for d in docs]
    assert index(tmp_path / "ds", shards[0]) == [0, lengths[0], lengths[0] + lengths[1], sum(lengths[:3])]
    assert index(tmp_path / "ds", shards[1]) == [0, lengths[3]]
    assert not list((tmp_path / "ds" / "train").glob("*scratch*"))


@pytest.mark.parametrize("val_fraction", [0.0, 0.4])
def test_each_shard_says_which_documents_of_which_inputs_it_holds(tmp_path: Path, tok, val_fraction) -> None:
    first = records_file(tmp_path, [f"record {i} " * (1 + i % 7) for i in range(40)])
    text = tmp_path / "b.txt"
    text.write_text(EOT.join("text document " * (1 + i % 30) for i in range(25)), encoding="utf-8")
    m = bpekit.encode_dataset([first, text], tmp_path / "ds", tok, shard_tokens=50, val_fraction=val_fraction)
    per_input: dict[int, list[int]] = {0: [], 1: []}
    for split in m["splits"].values():
        for s in split["shards"]:
            spans = [(r["input"], *r["documents"]) for r in s["sources"]]
            assert sum(end - first for _, first, end in spans) == s["documents"] + s["continues"]
            assert s["inputs"] == list(dict.fromkeys(i for i, _, _ in spans))
            for i, a, b in spans:
                # A continued document is named by the shard it began in and by this one.
                per_input[i] += [
                    d for d in range(a, b) if not (s["continues"] and d == a and (i, a, b) == spans[0])
                ]
    assert sorted(per_input[0]) == list(range(40))
    assert sorted(per_input[1]) == list(range(25))
