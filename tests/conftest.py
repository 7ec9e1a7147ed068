"""Shared test helpers: where the offline data lives, and tiktoken built offline from it."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))


def data_path(*parts: str) -> Path:
    """A path under ``../shared/data``; the test is skipped (with the reason) when it is missing."""
    p = DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"test data {p} is missing (expected the shared data next to the repository)")
    return p


def read_text_file(path: Path) -> str:
    """A data file's text; ``.jsonl`` files give their documents' texts joined by ``<|endoftext|>``."""
    if path.suffix == ".jsonl":
        docs = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                docs.append(row.get("text", ""))
        return "<|endoftext|>".join(docs)
    return path.read_text(encoding="utf-8")


@functools.cache
def tiktoken_encoding(name: str):
    """tiktoken's encoding ``name``, built from the local rank files (no network)."""
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe

    from bpekit.encodings import ENCODINGS, TIKTOKEN_PATTERNS

    spec = ENCODINGS[name]
    enc_dir = data_path("encodings")
    if name == "gpt2":
        ranks = data_gym_to_mergeable_bpe_ranks(
            str(enc_dir / "gpt2_vocab.bpe"), str(enc_dir / "gpt2_encoder.json")
        )
    else:
        ranks = load_tiktoken_bpe(str(enc_dir / spec.files[0].names[0]))
    # tiktoken's own r50k pattern, to compare against the real thing.
    r50k = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
    pat = r50k if spec.pattern == "gpt2" else TIKTOKEN_PATTERNS[spec.pattern]
    return tiktoken.Encoding(
        name=name, pat_str=pat, mergeable_ranks=ranks, special_tokens=spec.special_tokens
    )


@functools.cache
def bpekit_encoding(name: str):
    import bpekit

    data_path("encodings")
    return bpekit.get_encoding(name)
