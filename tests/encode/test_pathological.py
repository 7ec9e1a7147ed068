"""Inputs that make naive BPE quadratic must finish: long pieces use the heap merge.
No timing assertions (they would flake); a hang or a crash fails the suite."""

from __future__ import annotations

import random

import pytest
from conftest import bpekit_encoding, tiktoken_encoding

import bpekit

NAMES = ["gpt2", "cl100k_base", "o200k_base"]


def _cases() -> dict[str, str]:
    rnd = random.Random(0)
    return {
        "a*1M": "a" * 1_000_000,
        "line of 1 MB without spaces": "".join(
            rnd.choice("abcdefghijklmnopqrstuvwxyzABC.,") for _ in range(1_000_000)
        ),
        "100,000 emoji": "🙃" * 100_000,
        "digits": "1234567890" * 100_000,
    }


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", list(_cases()))
def test_long_pieces_round_trip(name: str, case: str) -> None:
    enc = bpekit_encoding(name)
    text = _cases()[case]
    ids = enc.encode_ordinary(text)
    assert enc.decode(ids) == text


@pytest.mark.parametrize("name", NAMES)
def test_whitespace_10mb(name: str) -> None:
    enc = bpekit_encoding(name)
    # The scanners handle this in linear time (the old regex engine overflowed its
    # backtracking stack here); a mixed run checks the other whitespace rules too.
    text = " " * 10_000_000
    ids = enc.encode_ordinary(text)
    assert enc.decode(ids) == text
    text = " \t\n\r\u3000" * 400_000
    ids = enc.encode_ordinary(text)
    assert enc.decode(ids) == text


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [127, 128, 129, 500, 3000])
def test_heap_and_scan_agree_with_tiktoken(name: str, n: int) -> None:
    # Around and above the scan/heap threshold, on text tiktoken handles quickly.
    rnd = random.Random(n)
    texts = ["a" * n, "ab" * n, "".join(rnd.choice("aAbB") for _ in range(n)), "🙃é" * n, " " * n + "x"]
    tk = tiktoken_encoding(name)
    enc = bpekit_encoding(name)
    for t in texts:
        assert enc.encode_ordinary(t) == tk.encode_ordinary(t)


def test_custom_tokenizer_long_piece() -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"aa", 257: b"aaaa"}
    tok = bpekit.Tokenizer(vocab, [(b"a", b"a"), (b"aa", b"aa")])
    assert tok.encode("a" * 1_000_001) == [257] * 250_000 + [97]
