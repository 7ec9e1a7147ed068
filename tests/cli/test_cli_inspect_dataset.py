"""`bpekit inspect DIR` on a token dataset folder: its summary, ``--verify``, and what
it says of an incomplete or damaged dataset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _handmade_dataset import DOCS, cut, edit_manifest, write_dataset


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", "inspect", *args], capture_output=True, text=True
    )


def test_inspect_a_dataset_folder(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS[:4], 8), "val": cut(DOCS[4:], 8)}, "llmc")
    r = inspect(str(tmp_path))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for said in (
        "format_version 1, written by bpekit 0.1.0",
        "complete    yes",
        "tokenizer   gpt2 (files: gpt2.tiktoken sha256 abababababab…)",
        "format      llmc, uint16 ids; shards of at most 8 tokens",
        "eos         '<|endoftext|>' (id 50256)",
        "bos         none",
        "split by    val_fraction 0.25, seed 0",
        "train       29 tokens, 4 documents, 4 shards",
        "val         6 tokens, 2 documents, 1 shard",
        "total       35 tokens, 6 documents, 1,000 bytes of text (28.571 bytes/token)",
        "inputs      1: data/a.jsonl",
        "files       all present with the sizes the manifest says",
    ):
        assert said in out, out
    r = inspect(str(tmp_path), "--verify")
    assert r.returncode == 0 and "files       verified" in r.stdout, r.stdout + r.stderr
    # A corrupt shard: the summary, then what is wrong, and status 1.
    shard = tmp_path / "val" / "00000.bin"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1
    shard.write_bytes(bytes(data))
    assert inspect(str(tmp_path)).returncode == 0
    r = inspect(str(tmp_path), "--verify")
    assert r.returncode == 1 and "files       BAD: " in r.stdout and "00000.bin: sha256" in r.stdout
    shard.unlink()
    r = inspect(str(tmp_path))
    assert r.returncode == 1 and "val/00000.bin: missing" in r.stdout


def test_inspect_an_incomplete_dataset_and_its_errors(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"train": cut(DOCS, 8)}, complete=False)
    r = inspect(str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "complete    no: the run writing it has not finished; re-run it to resume" in r.stdout
    assert "files       not checked: the dataset is incomplete" in r.stdout
    shards = json.loads((tmp_path / "manifest.json").read_text())["splits"]["train"]["shards"]
    tokens = sum(s["tokens"] for s in shards)
    assert f"train       {len(shards)} shards finished so far, {tokens:,} tokens" in r.stdout
    assert "total       not known until the run finishes" in r.stdout
    r = inspect(str(tmp_path), "--file", "x.txt")
    assert r.returncode == 2 and "is a token dataset folder; --file and --special-token describe" in r.stderr
    edit_manifest(tmp_path, lambda m: m.update(format_version=9))
    r = inspect(str(tmp_path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown format_version 9" in r.stderr
    r = inspect(str(tmp_path / "train"), "--verify")
    assert r.returncode == 2 and "--verify checks a token dataset folder" in r.stderr
