"""Line cuts: files are counted and encoded in chunks cut at line ends, and
``encode_iterable`` emits what lies before one. Every cut the smallest chunk size finds
must leave the pieces (and so the counts and ids) of the whole text unchanged, for line
ends between any characters: JSON lines, CRLF, non-ASCII scripts, `/` after a newline
(o200k's punctuation runs take it), whitespace and invalid UTF-8 around the newline."""

from __future__ import annotations

import collections

import pytest
import regex
from conftest import bpekit_encoding
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit import patterns

ENCODINGS = {"gpt2": "gpt2", "cl100k": "cl100k_base", "o200k": "o200k_base"}
FRAGMENTS = [
    *["a", "Zé", "中文", "}", "{", ".", "/", "'s", "12", "😀", "\u0301"],
    *[" ", "\t", "\u3000", "\x1c", "\n", "\n", "\r\n", "\r\n", "\r", "\n\n", " \n", "\r\n\r\n"],
    "<|endoftext|>",
]
TEXTS = st.lists(st.sampled_from(FRAGMENTS), max_size=50).map("".join)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _pieces(name: str, text: str) -> collections.Counter[bytes]:
    compiled = regex.compile(patterns.resolve(name))
    counts: collections.Counter[bytes] = collections.Counter()
    for doc in text.split("<|endoftext|>"):
        counts.update(p.encode() for p in compiled.findall(doc))
    return counts


@pytest.mark.parametrize("name", list(ENCODINGS))
@SETTINGS
@given(text=TEXTS)
@example(text='{"a": 1}\n{"b": 2}\r\n{"c": 3}\n/x\r\n/y')
@example(text="中文\r\n中文\n😀\r\n.\r\n.")
@example(text=" \n<|endoftext|>x\n\n<|endoftext|>")  # gpt2: a document ends after the run
def test_counts_and_file_encodes_at_every_cut(tmp_path, name: str, text: str) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    counts = bpekit.count_pretokens(path, ["<|endoftext|>"], pattern=name, num_threads=2, chunk_size=1)
    assert counts.to_dict() == dict(_pieces(name, text))
    tok = bpekit_encoding(ENCODINGS[name])
    want = tok.encode(text, allowed_special="all")
    bpekit.encode_file(path, tmp_path / "t.npy", tok, num_threads=2, chunk_size=1)
    assert bpekit.load_tokens(tmp_path / "t.npy").tolist() == want
    chunks = [text[i : i + 3] for i in range(0, len(text), 3)]
    assert list(tok.encode_iterable(chunks, allowed_special="all")) == want


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_cuts_next_to_invalid_utf8(tmp_path, name: str) -> None:
    """Under errors="replace" or "ignore" an invalid byte becomes U+FFFD or nothing: no
    cut may depend on what it would be (after "ignore", `<|endo\xfftext|>` is a special
    token, which ends the document before it)."""
    raw = b"a\xff\n\xffb \xff\r\n\xfe/c\n\xe2\x82\n d\xc3\n\xa9e\r\n\x80\r\nf\n x\n<|endo\xfftext|>y\n" * 50
    path = tmp_path / "t.txt"
    path.write_bytes(raw)
    tok = bpekit_encoding(ENCODINGS[name])
    for errors in ("replace", "ignore"):
        text = raw.decode("utf-8", errors=errors)
        counts = bpekit.count_pretokens(path, ["<|endoftext|>"], pattern=name, chunk_size=1, errors=errors)
        assert counts.to_dict() == dict(_pieces(name, text)), errors
        bpekit.encode_file(path, tmp_path / "t.npy", tok, chunk_size=1, errors=errors, num_threads=2)
        want = tok.encode(text, allowed_special="all")
        assert bpekit.load_tokens(tmp_path / "t.npy").tolist() == want, errors


def test_no_cut_where_ignored_bytes_join_a_special_token(tmp_path) -> None:
    """Special tokens are found on raw bytes when cutting, but under errors="ignore" an
    invalid byte vanishes and can join a special token: no cut is made near one (a cut
    inside "a\\xff\\nb", which decodes to the special "a\\nb", split it)."""
    for raw, specials, want in [
        (b"xa\xff\nby\n" * 20, ["a\nb"], {b"x": 20, b"y": 20, b"\n": 20}),
        (b"qz\xff<|e|>w\n" * 20, ["<|e|>", "z<|e|>"], {b"q": 20, b"w": 20, b"\n": 20}),
    ]:
        path = tmp_path / "t.txt"
        path.write_bytes(raw)
        for pattern in ENCODINGS:
            got = bpekit.count_pretokens(path, specials, pattern=pattern, chunk_size=1, errors="ignore")
            assert got.to_dict() == want, (raw[:12], pattern)
