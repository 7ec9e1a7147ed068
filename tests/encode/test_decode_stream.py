"""``bpekit.DecodeStream`` gives out the pieces ``tokenizers``' ``DecodeStream`` gives,
step by step, on the same tokenizer (bpekit's export of it as a ``tokenizer.json``)."""

from __future__ import annotations

import json

import pytest
from conftest import bpekit_encoding
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit.formats.hf import to_hf_json

tokenizers = pytest.importorskip("tokenizers")
from tokenizers.decoders import DecodeStream as HFDecodeStream  # noqa: E402


def hf_twin(tok: bpekit.Tokenizer):
    return tokenizers.Tokenizer.from_str(json.dumps(to_hf_json(tok)))


@pytest.fixture(scope="module")
def pair():
    tok = bpekit_encoding("gpt2")
    return tok, hf_twin(tok)


def steps(tok, hf, ids, skip=False, prefill=None, chunk=1):
    ours = bpekit.DecodeStream(tok, skip_special_tokens=skip, ids=prefill)
    theirs = HFDecodeStream(ids=prefill, skip_special_tokens=skip)
    got, want = [], []
    for k in range(0, len(ids), chunk):
        part = ids[k] if chunk == 1 else ids[k : k + chunk]
        got.append(ours.step(part))
        want.append(theirs.step(hf, part))
    return got, want


TEXT = st.text(st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=150, deadline=None)
@given(text=TEXT, skip=st.booleans())
def test_the_pieces_of_encoded_text_equal_tokenizers(pair, text: str, skip: bool) -> None:
    tok, hf = pair
    ids = tok.encode(text + "<|endoftext|>" + text[::-1], allowed_special="all")
    got, want = steps(tok, hf, ids, skip)
    assert got == want
    # Encoded text ends whole: the pieces are all of its text (unless it ends in a
    # U+FFFD of its own, which waits for more).
    assume(not text.startswith("\ufffd"))
    assert "".join(p for p in got if p is not None) == hf.decode(ids, skip_special_tokens=skip)


@settings(max_examples=150, deadline=None)
@given(
    ids=st.lists(st.integers(0, 50256), max_size=30),
    prefill=st.lists(st.integers(0, 50256), max_size=4),
    skip=st.booleans(),
)
def test_random_ids_prefill_and_chunks_equal_tokenizers(
    pair, ids: list[int], prefill: list[int], skip
) -> None:
    """Any ids (tokens that are parts of characters, bytes that never make one, the
    special token), after ids given at the start, and several ids a step."""
    tok, hf = pair
    got, want = steps(tok, hf, ids, skip, prefill=prefill or None)
    assert got == want
    got, want = steps(tok, hf, ids, chunk=3)
    assert got == want


def test_a_character_split_across_tokens_comes_whole() -> None:
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [])
    stream = bpekit.DecodeStream(tok)
    assert [stream.step(i) for i in "a日b".encode()] == ["a", None, None, "日", "b"]
