"""Pieces merged by parts: a new piece that is not ASCII is cut between characters no
token spans, and each part is merged (or found in the piece cache) on its own. These
check the ids against tiktoken and HF ``tokenizers`` on long runs of CJK, kana,
Hangul, Cyrillic and emoji, where most cuts are; against the pure-Python reference
for vocabularies whose tokens hold parts of characters across their borders; and on
bytes that are not UTF-8 next to such runs. The shared corpora's multilingual files
go through the same path in ``test_encode_tiktoken`` and ``formats/test_hf_import``.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import bpekit_encoding, data_path, tiktoken_encoding
from hypothesis import given, settings
from hypothesis import strategies as st

import bpekit
from bpekit.reference import encode_reference

# Runs of letters from several scripts (a run is one piece under the Llama 3 and o200k
# patterns), with the odd space, digit, ASCII letter and punctuation between them.
RUNS = [
    "中文字漢語日本国人大学生活的是了我你他她们这那",
    "ひらがなカタカナです。ます",
    "한국어글자입니다",
    "русскийязыкпривет",
    "😀👍🏽🙃❤️‍🔥",
    "éàüßøñ",
]
LETTERS = st.sampled_from(RUNS).flatmap(lambda run: st.text(st.sampled_from(run), min_size=1, max_size=40))
TEXT = st.lists(
    st.one_of(LETTERS, LETTERS, st.sampled_from([" ", "\n", "a", "Linux", "1", "，", "、", "。"])),
    min_size=1,
    max_size=12,
).map("".join)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@settings(max_examples=60, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=4))
def test_runs_of_letters_like_tiktoken(name: str, texts: list[str]) -> None:
    ours, theirs = bpekit_encoding(name), tiktoken_encoding(name)
    for text in texts:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text
    assert ours.encode_ordinary_batch(texts, num_threads=2) == theirs.encode_ordinary_batch(texts)


HfPairs = list[tuple[bpekit.Tokenizer, Any]]


@pytest.fixture(scope="module")
def hf_pairs() -> HfPairs:
    tokenizers = pytest.importorskip("tokenizers")
    paths = [
        data_path("hf", "allenai_dolma2.json"),
        data_path("hf", "allenai_eleuther-ai-gpt-neox-20b-pii-special.json"),
    ]
    return [(bpekit.Tokenizer.from_hf(p), tokenizers.Tokenizer.from_file(str(p))) for p in paths]


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=4))
def test_runs_of_letters_like_tokenizers(hf_pairs: HfPairs, texts: list[str]) -> None:
    for ours, hf in hf_pairs:
        want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
        assert [ours.encode(t) for t in texts] == want
        assert ours.encode_batch(texts, 2) == want


def _bytes_vocab(merges: list[tuple[bytes, bytes]]) -> dict[int, bytes]:
    vocab = {i: bytes([i]) for i in range(256)}
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return vocab


# Tokens across the borders of characters, holding all of one and part of the other,
# or parts of both, ranked before the merges inside the characters, so that they form.
ZHONG, GUO, REN = "中".encode(), "国".encode(), "人".encode()
CROSSING = [
    (ZHONG[2:], GUO[:1]),  # the tail of 中, the head of 国
    (REN[:1], REN[1:2]),
    (REN[:2], REN[2:]),  # 人, whole
    (REN, ZHONG[:1]),  # 人 and the head of 中
    (ZHONG[:1], ZHONG[1:2]),
    (ZHONG[:2], ZHONG[2:3] + GUO[:1]),  # 中 and the head of 国
    (GUO[1:2], GUO[2:]),
    (b"a", ZHONG[:1]),
    (b"\xb8", b"\xad"),
]


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(st.sampled_from("中国人a é"), max_size=30),
    ranks=st.permutations(range(len(CROSSING))),
)
def test_tokens_across_character_borders_like_the_reference(text: str, ranks: list[int]) -> None:
    # Every order that keeps a merge after those that make its sides.
    merges: list[tuple[bytes, bytes]] = []
    made = {bytes([i]) for i in range(256)}
    waiting = [CROSSING[i] for i in ranks]
    while waiting:
        ready = next(m for m in waiting if m[0] in made and m[1] in made)
        waiting.remove(ready)
        merges.append(ready)
        made.add(ready[0] + ready[1])
    vocab = _bytes_vocab(merges)
    tok = bpekit.Tokenizer(vocab, merges, [], pattern="o200k")
    from bpekit.patterns import resolve

    want = encode_reference(text, vocab, merges, [], resolve("o200k"))
    assert tok.encode(text) == want
    assert tok.encode(text * 3) == encode_reference(text * 3, vocab, merges, [], resolve("o200k"))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(
        st.one_of(
            st.sampled_from(RUNS[:4]).map(str.encode),
            st.binary(min_size=1, max_size=3),
            st.sampled_from([b"\xe4\xb8", b"\xad", b"\xff", b"\xf0\x9f"]),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_bytes_that_are_not_utf8_beside_runs_like_tiktoken(name: str, parts: list[bytes]) -> None:
    ours, theirs = bpekit_encoding(name), tiktoken_encoding(name)
    data = b"".join(parts)
    assert ours._encode_bytes(data) == theirs._encode_bytes(data)
    assert ours.decode_bytes(ours._encode_bytes(data)) == data


def test_pieces_of_a_long_document_like_tiktoken() -> None:
    """A multilingual document twice through one encoder: the second time every part
    comes from the piece cache, and both times the ids are tiktoken's."""
    text = (data_path("multilingual") / "wagahaiwa_nekodearu_ja.txt").read_text(encoding="utf-8")[:200_000]
    ours, theirs = bpekit_encoding("o200k_base"), tiktoken_encoding("o200k_base")
    want = theirs.encode_ordinary(text)
    fresh = bpekit.get_encoding("o200k_base")
    assert fresh.encode_ordinary(text) == want
    assert fresh.encode_ordinary(text) == want
    assert ours.encode_ordinary(text) == want
