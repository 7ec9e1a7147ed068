"""Differential: the native encoder equals the pure-Python reference encoder
(``bpekit.reference``) on random vocabularies trained on random text, for random texts
with special tokens and rare Unicode."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit.reference import decode_reference, encode_reference

SPECIALS = ["<|endoftext|>", "<|a|>", "<|a|><|a|>"]

# Letters, digits, spaces, newlines, apostrophes, specials' pieces, and rare Unicode:
# combining marks, CJK, emoji with ZWJ, RTL, surrogate-adjacent planes, controls.
ALPHABET = st.sampled_from(
    [
        *"aabbcdeeet  \n\t'sllvre0123.,!?-<|>",
        "é",
        "ß",
        "İ",
        "ǅ",
        "\u0301",
        "\u200d",
        "中",
        "文",
        "🙃",
        "👍🏽",
        "ع",
        "\u00a0",
        "\u3000",
        "\x00",
        "\U0010fffd",
        "𝔘",
    ]
)
TEXT = st.lists(st.one_of(ALPHABET, st.sampled_from(SPECIALS)), max_size=60).map("".join)


@functools.cache
def trained(seed_text: str, vocab_size: int) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "train.txt"
        path.write_text(seed_text, encoding="utf-8")
        return bpekit.train_bpe(path, vocab_size, ["<|endoftext|>"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    corpus=st.lists(TEXT, min_size=1, max_size=8).map("<|endoftext|>".join),
    vocab_size=st.integers(257, 400),
    texts=st.lists(TEXT, min_size=1, max_size=5),
    specials=st.lists(st.sampled_from(SPECIALS), unique=True, max_size=3),
    ordinary_special=st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_native_equals_reference(
    corpus: str, vocab_size: int, texts: list[str], specials: list[str], ordinary_special: int | None
) -> None:
    vocab, merges = trained(corpus, vocab_size)
    if ordinary_special is not None:
        # A special token whose bytes are also an ordinary token (a merge's result or a
        # single byte): it keeps that id and stays reachable by merges (the merge giving
        # it is not refused with "its result ... is not in the vocabulary").
        texts_of_tokens = sorted({b.decode() for b in vocab.values() if b.isascii() and b})
        token = texts_of_tokens[ordinary_special % len(texts_of_tokens)]
        specials = [*specials, token] if token not in specials else specials
    tok = bpekit.Tokenizer(vocab, merges, specials)
    full_vocab = tok.vocab
    for text in texts:
        expected = encode_reference(text, vocab, merges, specials)
        assert tok.encode(text) == expected
        assert tok.decode(expected) == decode_reference(expected, full_vocab)
        assert list(tok.encode_iterable([text[: len(text) // 2], text[len(text) // 2 :]])) == expected


@settings(max_examples=80, deadline=None)
@given(text=TEXT, pattern=st.sampled_from(["cl100k", "o200k"]))
def test_other_patterns_equal_reference(text: str, pattern: str) -> None:
    from bpekit.patterns import resolve

    corpus = "the cat sat on the mat, then the rat ate the oat 123 4567 ☃️ 🙃🙃 élan"
    vocab, merges = trained(corpus * 3, 300)
    tok = bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"], pattern=pattern)
    assert tok.encode(text) == encode_reference(text, vocab, merges, ["<|endoftext|>"], resolve(pattern))
