"""Test helpers for the pre-tokenizer tests: where the shared data lives, and tiktoken built from it."""

from __future__ import annotations

import base64
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"


def data_path(*parts: str) -> Path:
    """``../shared/data/<parts>``, or skip the test saying what is missing."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"test data {path} is missing (it lives outside the repo, in ../shared/data)")
    return path


# tiktoken's pattern for each encoding the tests build (the same text as bpekit's names).
TIKTOKEN_FILES = {"r50k_base": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}


@functools.cache
def tiktoken_encoding(name: str):
    """A tiktoken Encoding for ``name`` from the local rank file (never the network)."""
    tiktoken = pytest.importorskip("tiktoken")
    from bpekit import patterns

    path = data_path("encodings", f"{name}.tiktoken")
    ranks = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name=f"local_{name}",
        pat_str=patterns.resolve(TIKTOKEN_FILES[name]),
        mergeable_ranks=ranks,
        special_tokens={},
    )
