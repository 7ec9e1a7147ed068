"""``encode`` reads a ``str`` in whichever storage CPython gave it.

An ASCII ``str`` is UTF-8 already; one whose UTF-8 CPython has cached is read as that;
any other (Latin-1, UCS-2 or UCS-4 storage) is transcoded by bpekit a round of 65,536
code points at a time and encoded up to the last safe cut of each round
(``src/encode/wide.rs``), unless it is the str transcoded last, encoded again: then
CPython's cached UTF-8 is made and used. These tests compare the transcoding path with
the cached-UTF-8 path and with tiktoken, across round ends, and check its errors.
"""

from __future__ import annotations

import ctypes
import random
import sys

import numpy as np
import pytest
from conftest import bpekit_encoding, data_path, read_text_file, tiktoken_encoding
from hypothesis import given, settings
from hypothesis import strategies as st

ROUND = 1 << 16

_as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
_as_utf8.restype = ctypes.c_void_p
_as_utf8.argtypes = [ctypes.py_object, ctypes.c_void_p]


# Every copy is kept, so no two of them share an address: bpekit takes a str at the
# address and length of the last one it transcoded for that same str, encoded again.
_KEPT: list[str] = []


def fresh(text: str) -> str:
    """An equal ``str`` with no cached UTF-8 (a new object, at a new address)."""
    copy = (text + "\0")[:-1]
    _KEPT.append(copy)
    return copy


def cached(text: str) -> str:
    """An equal ``str`` whose UTF-8 CPython has cached (bpekit then reads that)."""
    copy = fresh(text)
    _as_utf8(copy, None)
    return copy


# One text per storage width, each with specials, cuts and stretches without any.
SAMPLES = {
    "latin-1": "café au lait, naïve façade\nÀ bientôt<|endoftext|>  indented\n\n",
    "ucs-2": "日本語のテキスト。\n中文 and Ελληνικά — “quotes”<|endoftext|>\n  x\n",
    "ucs-4": "emoji 🙃🙃 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\n<|endoftext|><|endoftext|>\t🙃\n\n\n",
}


@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])
@pytest.mark.parametrize("width", list(SAMPLES))
def test_every_storage_equals_the_cached_utf8_path(name: str, width: str) -> None:
    tok = bpekit_encoding(name)
    # Several rounds, so that rounds end inside lines, pieces and special tokens.
    text = SAMPLES[width] * (3 * ROUND // len(SAMPLES[width]) + 7) + "tail without newline"
    want = tok.encode(cached(text), allowed_special="all")
    assert tok.encode(fresh(text), allowed_special="all") == want
    assert np.array_equal(tok.encode_to_numpy(fresh(text), allowed_special="all"), want)
    assert tok.encode_ordinary(fresh(text)) == tok.encode_ordinary(cached(text))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_multilingual_text_equals_tiktoken(name: str) -> None:
    """Real text in many scripts, read from UCS-2/UCS-4 storage, against tiktoken."""
    enc = tiktoken_encoding(name)
    tok = bpekit_encoding(name)
    for path in sorted(data_path("multilingual").iterdir())[:6]:
        text = fresh(read_text_file(path)[:300_000])
        assert tok.encode(text, disallowed_special=()) == enc.encode(text, disallowed_special=()), path.name


def test_a_line_longer_than_many_rounds() -> None:
    """No cut for 5 rounds: the buffer grows and the ids are still those of the whole."""
    tok = bpekit_encoding("gpt2")
    text = "é" + "ab" * (5 * ROUND) + "\nnext line é\n"
    assert tok.encode(fresh(text)) == tok.encode(cached(text))


def test_a_disallowed_special_across_a_round_end_is_an_error() -> None:
    tok = bpekit_encoding("gpt2")
    for at in (ROUND - 5, ROUND, 2 * ROUND + 3):
        text = ("é" * at) + "<|endoftext|> after\n"
        with pytest.raises(ValueError, match="disallowed special token"):
            tok.encode(fresh(text))
        assert tok.encode(fresh(text), disallowed_special=()) == tok.encode(
            cached(text), disallowed_special=()
        )


def test_a_lone_surrogate_becomes_u_fffd_as_in_tiktoken() -> None:
    """Found after many rounds were encoded: the whole text is encoded again."""
    tok = bpekit_encoding("gpt2")
    text = "line é\n" * ROUND + "\ud800 end"
    want = tok.encode(text.replace("\ud800", "\ufffd"))
    assert tok.encode(fresh(text)) == want
    # encode_to_numpy too, which must not raise UnicodeEncodeError here.
    assert tok.encode_to_numpy(fresh(text)).tolist() == want


_PIECES = ["a", "é", "日本", "🙃", " ", "  ", "\n", "\n\n", "\t", "<|endoftext|>", "x\ny", "'s", "1234"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=60), st.integers(0, 2**32 - 1))
def test_random_texts_of_mixed_widths(parts: list[str], seed: int) -> None:
    """Random texts of every width, repeated past a round end, against the cached path."""
    tok = bpekit_encoding("o200k_base")
    rng = random.Random(seed)
    unit = "".join(parts) or "a"
    text = unit * (ROUND // len(unit) + rng.randrange(1, 3)) + "".join(rng.sample(_PIECES, 5))
    assert tok.encode(fresh(text), allowed_special="all") == tok.encode(cached(text), allowed_special="all")


@pytest.mark.parametrize("threads", [1, 2])
def test_batches_of_every_storage_equal_encode_of_each(threads: int) -> None:
    """``encode_batch`` reads each text in its own storage, on the thread encoding it."""
    tok = bpekit_encoding("gpt2")
    docs = [fresh(SAMPLES[w] * n) for n in (0, 1, 5, 3000) for w in SAMPLES] + [
        "ascii only\n",
        cached(SAMPLES["ucs-4"] * 2000),
    ]
    want = [tok.encode(cached(d), allowed_special="all") for d in docs]
    got = tok.encode_batch([fresh(d) for d in docs], num_threads=threads, allowed_special="all")
    assert got == want


def test_batch_errors() -> None:
    tok = bpekit_encoding("gpt2")
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode_batch([fresh("é ok\n"), fresh("é" * ROUND + "<|endoftext|>")], num_threads=2)
    # The core reports a lone surrogate as CPython does; the Tokenizer then reads the
    # texts as tiktoken does (encode_batch must not pass the error on).
    with pytest.raises(UnicodeEncodeError):
        tok._core.encode_batch([fresh("é ok\n"), fresh("x\ud800y")], [], [], 2)
    got = tok.encode_batch([fresh("é ok\n"), fresh("x\ud800y")], num_threads=2)
    assert got == [tok.encode("é ok\n"), tok.encode("x\ufffdy")]


def test_a_new_str_in_a_freed_ones_place_is_not_taken_for_it() -> None:
    """A text read again into the memory of the last one (same address, same length)
    is a new str: transcoded, its UTF-8 not made. The last str is held to know it
    again only up to 16 MiB of storage, so a larger one is never kept alive."""
    tok = bpekit_encoding("gpt2")
    base = "été 🙃 line\n" * 5000
    text = fresh(base)
    for _ in range(6):
        del text
        text = fresh(base)
        size = sys.getsizeof(text)
        tok.encode(text)
        assert sys.getsizeof(text) == size, "a new str's UTF-8 was made"
    refs = sys.getrefcount(text)
    tok.encode(fresh("ü" * 10))
    assert sys.getrefcount(text) == refs - 1, "the last str is let go at the next call"
    big = fresh("é" * (16 << 20 | 1))  # Latin-1 storage: 1 byte a code point
    refs = sys.getrefcount(big)
    tok.encode(big)
    assert sys.getrefcount(big) == refs, "a text over 16 MiB is not kept"
    size = sys.getsizeof(big)
    tok.encode(big)
    assert sys.getsizeof(big) == size, "so it is transcoded again, not converted"


def test_a_str_encoded_again_gets_its_utf8_cached() -> None:
    """Transcoded the first time; the second time CPython's UTF-8 is made and kept."""
    tok = bpekit_encoding("gpt2")
    text = fresh("été 🙃 line\n" * 5000)
    size = sys.getsizeof(text)
    first = tok.encode(text)
    assert sys.getsizeof(text) == size
    assert tok.encode(text) == first
    assert sys.getsizeof(text) > size + len(text)
    assert tok.encode(text) == first
    # Another str in between: the first is transcoded again when it comes back.
    other = fresh("ü" * 100)
    assert tok.encode(other) == tok.encode(cached(other))
