"""``encode_with_offsets`` of SentencePiece-style ``tokenizer.json`` files, checked
against the offsets ``tokenizers`` gives (``Tokenizer.encode(text).offsets``).

The files are ``_sp_models``' (Llama's styles old and new, Gemma's, ``Metaspace`` with
``split``, unknown tokens fused and not, added tokens with flags) and variants made
here for what moves offsets: a normalizer that changes lengths before ``Metaspace``
(NFKC) and in Llama's old chain (Lowercase of "İ"), byte tokens missing for some bytes
(an unknown token then waits behind the byte tokens of the characters after it),
``ignore_merges`` on a whole text, and a ``ByteLevel`` post-processor's
``trim_offsets``. The prepended ``▁`` spans the text's first character, each byte
token of a character spans the character. Texts: hard cases, hypothesis texts (CJK,
emoji, runs of spaces, leading spaces, characters the vocabulary lacks, added tokens)
and slices of English and multilingual corpora; the list, array and batch forms
agree, and lone surrogates map back to the ``str``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from _offsets_check import check_offsets
from _shared_data import DATA
from _sp_models import HARD, NAMES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit

tokenizers = pytest.importorskip("tokenizers")
Pair = tuple[Any, bpekit.Tokenizer]


def _edited(doc: dict[str, Any], name: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    if name == "nfkc":
        doc["normalizer"] = {"type": "NFKC"}
    elif name == "legacy_lowercase":
        doc["normalizer"]["normalizers"].insert(0, {"type": "Lowercase"})
    elif name == "bytes_partial":
        # CJK lead bytes lack tokens: those characters are unknown, others fall back.
        for b in range(0xE4, 0xEA):
            del doc["model"]["vocab"][f"<0x{b:02X}>"]
    elif name == "ignore_merges":
        doc["model"]["ignore_merges"] = True
    elif name == "trimmed":
        doc["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True}
    return doc


#: Variant -> the file it edits.
VARIANTS = {
    "nfkc": "llama",
    "legacy_lowercase": "llama_legacy",
    "bytes_partial": "llama",
    "ignore_merges": "llama",
    "trimmed": "gemma",
}


@pytest.fixture(scope="module")
def pairs(sp_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Pair]:
    paths = dict(sp_files)
    folder = tmp_path_factory.mktemp("sp_variants")
    for name, source in VARIANTS.items():
        doc = _edited(json.loads(sp_files[source].read_text(encoding="utf-8")), name)
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return {
        name: (tokenizers.Tokenizer.from_file(str(p)), bpekit.Tokenizer.from_hf(p))
        for name, p in paths.items()
    }


ALL = [*NAMES, *VARIANTS]


def _check(pair: Pair, text: str, where: str) -> None:
    check_offsets(*pair, text, where)


def _corpus_texts() -> list[str]:
    """A few KB of English and multilingual text each, cut at lines."""
    out = []
    for where in [
        "corpora/tinystories_v2_train_head_2MiB.txt",
        "corpora/python311_docs_rst.txt",
        "multilingual/fortunes_zh.txt",
        "multilingual/wagahaiwa_nekodearu_ja.txt",
        "multilingual/fortunes_ru.txt",
        "multilingual/unicode15_emoji-test.txt",
    ]:
        p = DATA / where
        if p.is_file():
            text = p.read_bytes()[:5000].decode("utf-8", errors="ignore")
            out.append(text[: text.rfind("\n") + 1])
    if not out:
        pytest.skip(f"the shared corpora are missing from {DATA}")
    return out


@pytest.mark.parametrize("name", ALL)
def test_hard_texts_and_corpora_give_tokenizers_offsets(pairs: dict[str, Pair], name: str) -> None:
    for text in HARD + _corpus_texts():
        _check(pairs[name], text, name)


def test_the_rule_spelled_out(pairs: dict[str, Pair]) -> None:
    """The prepended ``▁`` stands for the first character; a character's byte tokens
    each span it; an unknown token waiting behind byte tokens comes after them, with
    the lengths in that order (``tokenizers``' quirk, followed)."""
    ours = pairs["llama"][1]
    ids, offsets = ours.encode_with_offsets("中😀 x")
    tokens = [ours.decode_single_token_bytes(i) for i in ids]
    assert tokens[:2] == [b" ", "中".encode()] and offsets[:2] == [(0, 1), (0, 1)]
    assert offsets[2:6] == [(1, 2)] * 4 and len(tokens[2]) == 1  # 😀: four byte tokens
    hf, ours = pairs["bytes_partial"]
    text = "a龘鬱é"  # two characters the vocab lacks, fused, whose lead bytes lack tokens
    want = hf.encode(text, add_special_tokens=False)
    assert want.tokens[-3:] == ["<0xC3>", "<0xA9>", "<unk>"]
    # Lengths 1, 1, 6 from "龘": the unknown token ends at the end of "é".
    assert want.offsets[-3:] == [(1, 2), (1, 2), (1, 4)]
    assert ours.encode_with_offsets(text) == (want.ids, want.offsets)


_FRAGMENTS = [" ", "  ", "\n", "\t", "▁", "<s>", "</s>", "the", " the", "cat", "[mask]", "the end"]
_FRAGMENTS += ["<|im_start|>", "é", "中", "文字", "😀", "👍🏽", "\x00", "\u0301", "ǅ", "İ", "ﬁ", "\U0001d11e"]
_texts = st.lists(
    st.one_of(st.sampled_from(_FRAGMENTS), st.characters(codec="utf-8", exclude_categories=("Cs",))),
    max_size=30,
).map("".join)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_texts, which=st.sampled_from(ALL))
def test_hypothesis_texts_give_tokenizers_offsets(pairs: dict[str, Pair], text: str, which: str) -> None:
    _check(pairs[which], text, which)


def test_batch_equals_each_text(pairs: dict[str, Pair]) -> None:
    texts = HARD + _corpus_texts()[:3]
    for name in ("llama", "gemma", "added"):
        ours = pairs[name][1]
        for add in (False, True):
            want = [ours.encode_with_offsets(t, add_special_tokens=add) for t in texts]
            assert ours.encode_batch_with_offsets(texts, 2, add_special_tokens=add) == want, name


def test_lone_surrogates_map_back_to_the_str(pairs: dict[str, Pair]) -> None:
    """``tokenizers`` refuses such a text; bpekit encodes a lone surrogate as U+FFFD (one
    code point for one) and a pair as the character it encodes (two for one)."""
    hf, ours = pairs["llama"]
    ids, offsets = ours.encode_with_offsets("a\ud800b \udfff")
    want = hf.encode("a\ufffdb \ufffd", add_special_tokens=False)
    assert (ids, offsets) == (want.ids, want.offsets)
    ids, offsets = ours.encode_with_offsets("x\ud83d\ude00\ud800")
    want = hf.encode("x😀\ufffd", add_special_tokens=False)
    assert ids == want.ids
    grow = {0: 0, 1: 1, 2: 3, 3: 4}  # after the pair, one more code point
    assert offsets == [(grow[s], grow[e]) for s, e in want.offsets]
