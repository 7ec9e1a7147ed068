"""The rest of tiktoken's public API, against tiktoken itself: the model-name table,
batch decoding, ``is_special_token`` and ``token_byte_values``."""

from __future__ import annotations

import pytest
from conftest import bpekit_encoding, tiktoken_encoding
from hypothesis import given, settings
from hypothesis import strategies as st

import bpekit
from bpekit import models

tiktoken_model = pytest.importorskip("tiktoken.model")

NAMES = [*tiktoken_model.MODEL_TO_ENCODING, *tiktoken_model.MODEL_PREFIX_TO_ENCODING]
# A known name or prefix (or nothing) with anything after it.
MODEL_NAMES = st.one_of(
    st.sampled_from(NAMES), st.tuples(st.sampled_from([*NAMES, ""]), st.text(max_size=8)).map("".join)
)


def test_the_model_tables_are_tiktokens() -> None:
    assert models.MODEL_TO_ENCODING == tiktoken_model.MODEL_TO_ENCODING
    # Prefixes are tried in order: the order is part of the table.
    theirs = tiktoken_model.MODEL_PREFIX_TO_ENCODING
    assert list(models.MODEL_PREFIX_TO_ENCODING.items()) == list(theirs.items())


def _name_or_error(fn, name: str) -> str:
    try:
        return fn(name)
    except KeyError:
        return "KeyError"


@settings(max_examples=300, deadline=None)
@given(name=MODEL_NAMES)
def test_model_names_map_as_tiktoken_maps_them(name: str) -> None:
    want = _name_or_error(tiktoken_model.encoding_name_for_model, name)
    assert _name_or_error(bpekit.encoding_name_for_model, name) == want


def test_encoding_for_model_loads_the_encoding() -> None:
    bpekit_encoding("o200k_base")  # skips without the rank files
    assert bpekit.encoding_for_model("gpt-4o-mini").name == "o200k_base"
    assert bpekit.encoding_for_model("gpt-3.5-turbo").encode("hello world") == [15339, 1917]
    with pytest.raises(KeyError, match="Could not automatically map no-such-model"):
        bpekit.encoding_for_model("no-such-model")


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_batch_decoding_special_ids_and_token_bytes_equal_tiktoken(name: str) -> None:
    ours, theirs = bpekit_encoding(name), tiktoken_encoding(name)
    texts = ["hello world", "", "日本語 and émojis 🎉", "x" * 1000, "<|endoftext|>"]
    batch = [theirs.encode(t, allowed_special="all") for t in texts]
    # A token cut in the middle of a character: "replace" by default, or strict.
    cut = theirs.encode("é🎉")[:-1]
    batch.append(cut)
    assert ours.decode_batch(batch) == theirs.decode_batch(batch)
    assert ours.decode_bytes_batch(batch) == theirs.decode_bytes_batch(batch)
    assert ours.decode_batch(batch, errors="ignore") == theirs.decode_batch(batch, errors="ignore")
    with pytest.raises(UnicodeDecodeError):
        ours.decode_batch([cut], errors="strict")
    assert ours.token_byte_values() == theirs.token_byte_values()
    ids = range(theirs.n_vocab)
    assert [i for i in ids if ours.is_special_token(i)] == [i for i in ids if theirs.is_special_token(i)]
    with pytest.raises(TypeError):
        ours.is_special_token("<|endoftext|>")  # type: ignore[arg-type]


def test_o200k_harmony_equals_tiktokens() -> None:
    """Harmony's special tokens, two of them sharing id 200018."""
    ours, theirs = bpekit_encoding("o200k_harmony"), tiktoken_encoding("o200k_harmony")
    assert ours.n_vocab == theirs.n_vocab == 201088
    assert ours.special_tokens_set == theirs.special_tokens_set
    text = "<|start|>user<|message|>hi<|end|><|endofprompt|><|reserved_200018|><|call|> 日本"
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    with pytest.raises(ValueError):
        ours.encode("<|return|>")
    specials = sorted(set(theirs._special_tokens.values()))
    assert [ours.decode_single_token_bytes(i) for i in specials] == [
        theirs.decode_single_token_bytes(i) for i in specials
    ]
    assert ours.decode(specials) == theirs.decode(specials)
    assert "o200k_harmony" in bpekit.list_encoding_names()
    assert bpekit.encoding_for_model("gpt-oss-120b").name == "o200k_harmony"


def _unstable(enc, text: str, **kw) -> tuple[list[int], set[tuple[int, ...]]]:
    ids, completions = enc.encode_with_unstable(text, **kw)
    return ids, {tuple(c) for c in completions}


UNSTABLE_TEXT = st.text(st.sampled_from("ab yé\n\t日0.'!"), max_size=12)


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
@settings(max_examples=40, deadline=None)
@given(text=UNSTABLE_TEXT)
def test_encode_with_unstable_equals_tiktoken(name: str, text: str) -> None:
    ours, theirs = bpekit_encoding(name), tiktoken_encoding(name)
    assert _unstable(ours, text) == _unstable(theirs, text)


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_encode_with_unstable_specials_and_errors_equal_tiktoken(name: str) -> None:
    ours, theirs = bpekit_encoding(name), tiktoken_encoding(name)
    for text in ["hello fanta", "x<|endoftext|>", "<|endoftext|>ab\n \n", "", "日本語"]:
        assert _unstable(ours, text, allowed_special="all") == _unstable(theirs, text, allowed_special="all")
    with pytest.raises(ValueError):
        ours.encode_with_unstable("a<|endoftext|>")
    with pytest.raises(ValueError):
        theirs.encode_with_unstable("a<|endoftext|>")


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=24) | st.text(max_size=8).map(lambda t: t.encode()[:-1]))
def test_encode_bytes_and_single_pieces_equal_tiktoken(name: str, data: bytes) -> None:
    """Bytes that may end (or hold) invalid UTF-8, as tiktoken's private methods take
    them; decoding gives the bytes back."""
    ours, theirs = bpekit_encoding(name), tiktoken_encoding(name)
    assert ours._encode_bytes(data) == theirs._encode_bytes(data)
    assert ours.decode_bytes(ours._encode_bytes(data)) == data
    if data:
        assert ours._encode_single_piece(data) == theirs._encode_single_piece(data)
