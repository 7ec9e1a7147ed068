"""``encode_with_offsets`` of OpenAI encodings and CS336 tokenizers, against an oracle
made from tiktoken's ids and token bytes: a token spans the characters its bytes touch
(from the character holding its first byte to the end of the one holding its last), so
tokens that share a character's bytes both span it; a special token spans its text.
That is the rule ``tokenizers`` follows for a byte-level tokenizer with no normalizer
and ``trim_offsets`` false. Also: the API's forms agree (list, array, batch), the
special-token policy is ``encode``'s, and lone surrogates map back to the ``str``.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bpekit_encoding, data_path, tiktoken_encoding
from hypothesis import given, settings
from hypothesis import strategies as st

import bpekit

ENCODINGS = ["cl100k_base", "o200k_base"]


def _oracle(token_bytes: list[bytes]) -> list[tuple[int, int]]:
    """Character offsets of tokens whose bytes, joined, are a UTF-8 text."""
    data = b"".join(token_bytes)
    starts = [0] * (len(data) + 1)  # per byte: the index of the character holding it
    chars = -1
    for i, b in enumerate(data):
        chars += not 0x80 <= b < 0xC0
        starts[i] = chars
    out, at = [], 0
    for piece in token_bytes:
        end = at + len(piece)
        out.append((starts[at], starts[end - 1] + 1))
        at = end
    return out


def _texts() -> list[str]:
    out = [
        "",
        " ",
        "héllo wörld 😀😀 東京 中文字",
        "e\u0301 \u0301x a\u0323\u0307 👨\u200d👩\u200d👧 🇺🇸",
        "  \n\n\t x  ",
        "<|endoftext|>Hi<|endofprompt|> there<|endoftext|>",
    ]
    for parts in [
        ("corpora", "taylorswift_wikipedia_en.txt"),
        ("multilingual", "fortunes_zh.txt"),
        ("multilingual", "linux_docs_ko_KR.txt"),
        ("multilingual", "genesis_multilingual.jsonl"),
    ]:
        text = data_path(*parts).read_bytes()[:20000].decode("utf-8", errors="ignore")
        out.append(text)
    return out


@pytest.mark.parametrize("name", ENCODINGS)
def test_openai_offsets_follow_tiktokens_token_bytes(name: str) -> None:
    tk, ours = tiktoken_encoding(name), bpekit_encoding(name)
    for text in _texts():
        want_ids = tk.encode(text, allowed_special="all")
        ids, offsets = ours.encode_with_offsets(text, allowed_special="all")
        assert ids == want_ids
        assert offsets == _oracle([tk.decode_single_token_bytes(i) for i in want_ids]), text[:40]
        arr_ids, arr = ours.encode_with_offsets_to_numpy(text, allowed_special="all")
        assert arr_ids.tolist() == ids and arr.dtype == np.uint64
        assert [tuple(p) for p in arr.reshape(-1, 2).tolist()] == offsets
    batch = _texts()
    got = ours.encode_batch_with_offsets(batch, 2, allowed_special="all")
    assert got == [ours.encode_with_offsets(t, allowed_special="all") for t in batch]


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_hypothesis_texts_follow_the_rule(text: str) -> None:
    tk, ours = tiktoken_encoding("o200k_base"), bpekit_encoding("o200k_base")
    ids, offsets = ours.encode_with_offsets(text, disallowed_special=())
    assert ids == tk.encode(text, disallowed_special=())
    assert offsets == _oracle([tk.decode_single_token_bytes(i) for i in ids])


def test_special_tokens_follow_encodes_policy() -> None:
    ours = bpekit_encoding("o200k_base")
    with pytest.raises(ValueError, match="disallowed special token"):
        ours.encode_with_offsets("a<|endoftext|>")
    with pytest.raises(ValueError, match="disallowed special token"):
        ours.encode_batch_with_offsets(["x", "a<|endoftext|>"])
    ids, offsets = ours.encode_with_offsets("a<|endoftext|>", disallowed_special=())
    assert ids == ours.encode("a<|endoftext|>", disallowed_special=()) and len(ids) > 2
    assert offsets[0] == (0, 1) and offsets[-1][1] == 14
    assert ours.encode_with_offsets("a<|endoftext|>", allowed_special="all")[1] == [(0, 1), (1, 14)]


def _bytes_tokenizer() -> bpekit.Tokenizer:
    return bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|s|>"])


def test_lone_surrogates_map_back_to_the_str() -> None:
    """As ``encode``, the text is read as tiktoken reads it (a pair joined, a lone
    surrogate U+FFFD); the offsets index the ``str`` given."""
    tok = _bytes_tokenizer()
    text = "a\ud800b\ud83d\ude00<|s|>"
    ids, offsets = tok.encode_with_offsets(text)
    assert ids == tok.encode(text)
    assert offsets == [(0, 1), *[(1, 2)] * 3, (2, 3), *[(3, 5)] * 4, (5, 10)]
    arr_ids, arr = tok.encode_with_offsets_to_numpy(text)
    assert arr_ids.tolist() == ids and [tuple(p) for p in arr.tolist()] == offsets
    assert tok.encode_batch_with_offsets(["x", text]) == [([120], [(0, 1)]), (ids, offsets)]


def test_a_cs336_tokenizer_and_add_special_tokens() -> None:
    """Without a ``tokenizer.json`` there is no post-processor: ``add_special_tokens``
    adds nothing, as in ``encode``."""
    tok = _bytes_tokenizer()
    assert tok.encode_with_offsets("é<|s|>", add_special_tokens=True) == (
        [195, 169, 256],
        [(0, 1), (0, 1), (1, 6)],
    )
    assert tok.encode_with_offsets("") == ([], [])
    ids, arr = tok.encode_with_offsets_to_numpy("")
    assert ids.shape == (0,) and arr.shape == (0, 2)
