"""``encode_with_offsets`` of ``tokenizer.json`` tokenizers, checked against the offsets
``tokenizers`` gives (``Tokenizer.encode(text).offsets``, in characters).

The tokenizers: the three shipped in ``../shared/data/hf`` (OLMo 2, two GPT-NeoX, whose
``trim_offsets`` and added runs of spaces trim to empty spans), the Hub-style GPT-2, a
bpekit-trained tokenizer saved with ``format="hf"``, and small hand-written files for
each normalizer and flag that moves offsets: normalizers that change lengths (NFKC of
ligatures, NFD, Lowercase of "İ", Replace, Prepend), added tokens (special and not,
``lstrip``, ``rstrip``, ``normalized``), ``add_prefix_space``, ``trim_offsets`` true and
false, and templates before and after the ``ByteLevel`` post-processor. Each is checked
on hard texts (multi-byte characters split between tokens, combining marks, emoji,
CJK, runs of spaces, newlines, the empty text), on slices of English and multilingual
corpora, and on hypothesis texts; the list, array and batch forms agree.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from _offsets_check import check_offsets
from conftest import data_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit.formats.hf import to_hf_json

tokenizers = pytest.importorskip("tokenizers")

SHIPPED = [
    "allenai_dolma2.json",
    "allenai_eleuther-ai-gpt-neox-20b-pii-special.json",
    "allenai_gpt-neox-olmo-dolma-v1_5.json",
]

HARD = [
    "",
    " ",
    "   ",
    "\n",
    "hello  world   x    y",
    "a\n\n  b\n  \n\n",
    "héllo wörld 😀😀 東京 中文字",
    "e\u0301 caf\u00e9 \u0301x Å Å a\u0323\u0307",
    "ﬁ ﬀ ㎏ Ⅻ ½ ｆｕｌｌ ﬃx",
    "ΣΑΣ İstanbul ǅ ß ẞ",
    "👨\u200d👩\u200d👧 🇺🇸 ❤\ufe0f",
    "Hello\r\n\r\n \t\u3000\u00a0end\n",
    "<|endoftext|>Hi<|endoftext|>",
    "x<|endoftext|>\u0301 <|padding|>  <|endoftext|>",
    " |||EMAIL_ADDRESS||| x|||PHONE_NUMBER|||y",
    "the THE The 42 ! ?? ..; \t\n",
    "  leading and trailing  ",
    "KING HENRY: thou THOU hark HARK  <mask> x  <mask>y</s>  z <b> <c>   b",
    "12345 6789 ٣٤٥ ²³",
]


def _corpus_slices() -> list[str]:
    """Short slices of English and multilingual text (a few KB each, cut at lines)."""
    out = []
    for parts in [
        ("corpora", "tinyshakespeare.txt"),
        ("corpora", "python311_docs_rst.txt"),
        ("multilingual", "fortunes_ru.txt"),
        ("multilingual", "fortunes_zh.txt"),
        ("multilingual", "linux_docs_ja_JP.txt"),
        ("multilingual", "genesis_multilingual.jsonl"),
    ]:
        text = data_path(*parts).read_bytes()[:6000].decode("utf-8", errors="ignore")
        out.append(text[: text.rfind("\n") + 1])
    return out


def _hf(data: dict[str, Any]) -> Any:
    return tokenizers.Tokenizer.from_str(json.dumps(data))


def _ours(data: dict[str, Any]) -> bpekit.Tokenizer:
    from bpekit.formats.hf_load import read_hf_data

    return bpekit.Tokenizer._from_parts(read_hf_data(copy.deepcopy(data)))


@pytest.fixture(scope="module")
def gpt2_data() -> dict[str, Any]:
    """The Hub's GPT-2 as ``tokenizers`` builds it from GPT-2's files: ``ByteLevel``
    pre-tokenizer and post-processor (``trim_offsets``), ``<|endoftext|>`` added."""
    from tokenizers import decoders, models, pre_tokenizers, processors

    vocab = data_path("cs336", "gpt2_vocab.json")
    merges = data_path("cs336", "gpt2_merges.txt")
    tok = tokenizers.Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    tok.add_special_tokens(["<|endoftext|>"])
    return json.loads(tok.to_str())


@pytest.fixture(scope="module")
def real(gpt2_data: dict[str, Any], tmp_path_factory) -> list[tuple[str, dict[str, Any]]]:
    """The shipped files, GPT-2, and a bpekit-trained tokenizer saved with ``format="hf"``."""
    out = [(name, json.loads(data_path("hf", name).read_text())) for name in SHIPPED]
    out.append(("gpt2", gpt2_data))
    vocab, merges = bpekit.train_bpe(data_path("multilingual", "fortunes_de.txt"), 400, ["<|endoftext|>"])
    folder = tmp_path_factory.mktemp("trained")
    bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"], pattern="o200k").save(folder, format="hf")
    out.append(("trained", json.loads((folder / "tokenizer.json").read_text())))
    return out


def test_real_tokenizers_give_tokenizers_offsets(real: list[tuple[str, dict[str, Any]]]) -> None:
    texts = HARD + _corpus_slices()
    for name, data in real:
        hf, ours = _hf(data), _ours(data)
        for text in texts:
            check_offsets(hf, ours, text, name)


def test_batch_equals_each_text(real: list[tuple[str, dict[str, Any]]]) -> None:
    texts = HARD + _corpus_slices()
    for name, data in real[:2]:
        ours = _ours(data)
        for add in (False, True):
            want = [ours.encode_with_offsets(t, add_special_tokens=add) for t in texts]
            for threads in (1, 2):
                got = ours.encode_batch_with_offsets(texts, threads, add_special_tokens=add)
                assert got == want, name


# ---- small hand-written files, one flag or normalizer at a time ---------------------


@pytest.fixture(scope="module")
def base_json() -> dict[str, Any]:
    """A 600-token tokenizer trained on Shakespeare, exported by bpekit, with GPT-2's
    ``ByteLevel`` pre-tokenizer and no post-processor."""
    vocab, merges = bpekit.train_bpe(data_path("corpora", "tinyshakespeare.txt"), 600, ["<|endoftext|>"])
    data = to_hf_json(bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"]))
    data["pre_tokenizer"] = _bytelevel(prefix=False)
    data["post_processor"] = None
    return data


def _bytelevel(prefix: bool, trim: bool = True) -> dict[str, Any]:
    return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": trim, "use_regex": True}


def _added(content: str, id: int, **flags: bool) -> dict[str, Any]:
    base = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False}
    return {"id": id, "content": content, **base, **flags}


def _seq(*normalizers: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Sequence", "normalizers": list(normalizers)}


_TEMPLATE = {
    "type": "TemplateProcessing",
    "single": [
        {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
        {"Sequence": {"id": "A", "type_id": 0}},
        {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
    ],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [256], "tokens": ["<|endoftext|>"]}},
}

_ADDED = [
    _added("<|endoftext|>", 256, special=True),
    _added("<mask>", 600, special=True, lstrip=True),
    _added("</s>", 601, special=True, rstrip=True),
    _added("king", 602, single_word=True),
    _added("thou", 603, normalized=True),
    _added("Hark", 604, normalized=True, special=True),
    _added("<b> <c>", 605, lstrip=True, rstrip=True),
    _added("  ", 606, normalized=True, rstrip=True),
    _added("ﬁre", 607, normalized=True),
]

VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "lowercase": {"normalizer": {"type": "Lowercase"}},
    "nfkc": {"normalizer": {"type": "NFKC"}},
    "nfd": {"normalizer": {"type": "NFD"}},
    "nfc": {"normalizer": {"type": "NFC"}},
    "nfkd+lowercase": {"normalizer": _seq({"type": "NFKD"}, {"type": "Lowercase"})},
    "replace+prepend": {
        "normalizer": _seq(
            {"type": "Replace", "pattern": {"String": "the"}, "content": "THE"},
            {"type": "Replace", "pattern": {"Regex": "[0-9]+"}, "content": "#"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
            {"type": "Replace", "pattern": {"String": "ab"}, "content": ""},
            {"type": "Prepend", "prepend": "\u2581"},
        )
    },
    "prepend+nfkc": {"normalizer": _seq({"type": "Prepend", "prepend": "ﬁ"}, {"type": "NFKC"})},
    "prefix space": {"pre_tokenizer": _bytelevel(prefix=True)},
    "prefix space, trimmed": {
        "pre_tokenizer": _bytelevel(prefix=True),
        "post_processor": _bytelevel(prefix=True),
    },
    "prefix space, trimmed without it": {
        "pre_tokenizer": _bytelevel(prefix=True),
        "post_processor": _bytelevel(prefix=False),
    },
    "trimmed": {"post_processor": _bytelevel(prefix=False)},
    "not trimmed": {"post_processor": _bytelevel(prefix=False, trim=False)},
    "template then trim": {
        "pre_tokenizer": _bytelevel(prefix=True),
        "post_processor": {"type": "Sequence", "processors": [_TEMPLATE, _bytelevel(prefix=True)]},
    },
    "trim then template": {
        "post_processor": {"type": "Sequence", "processors": [_bytelevel(prefix=False), _TEMPLATE]}
    },
    "added flags": {"added_tokens": _ADDED, "normalizer": {"type": "Lowercase"}},
    "added flags, nfkc, trimmed": {
        "added_tokens": _ADDED,
        "normalizer": {"type": "NFKC"},
        "post_processor": _bytelevel(prefix=False),
    },
    "added flags, prefix space, replace": {
        "added_tokens": _ADDED,
        "pre_tokenizer": _bytelevel(prefix=True),
        "normalizer": {"type": "Replace", "pattern": {"String": "o"}, "content": "OO"},
        "post_processor": _bytelevel(prefix=True),
    },
}


def _variant(base: dict[str, Any], name: str) -> dict[str, Any]:
    data = copy.deepcopy(base)
    data.update(copy.deepcopy(VARIANTS[name]))
    return data


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_flag_and_normalizer_gives_tokenizers_offsets(base_json: dict[str, Any], name: str) -> None:
    data = _variant(base_json, name)
    hf, ours = _hf(data), _ours(data)
    for text in [*HARD, *_corpus_slices()[:3]]:
        check_offsets(hf, ours, text, name)


_ALPHABET = st.sampled_from(
    [
        *"abcéß İIﬁﬀ\u0301\u0323e东京😀🇺🇸\u200d\n\r\t  .,'0123",
        *["<mask>", "</s>", "king", "thou", "Hark", "<b> <c>", "<|endoftext|>", "  ", "the", "ﬁre", "ab"],
    ]
)


@pytest.fixture(scope="module")
def all_pairs(
    base_json: dict[str, Any], real: list[tuple[str, dict[str, Any]]]
) -> list[tuple[str, Any, Any]]:
    datas = [(name, _variant(base_json, name)) for name in VARIANTS] + real
    return [(name, _hf(data), _ours(data)) for name, data in datas]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_ALPHABET, max_size=16))
def test_hypothesis_texts_give_tokenizers_offsets(
    all_pairs: list[tuple[str, Any, Any]], parts: list[str]
) -> None:
    text = "".join(parts)
    for name, hf, ours in all_pairs:
        check_offsets(hf, ours, text, name)


def test_offsets_of_a_split_character_and_trimmed_spaces() -> None:
    """The cases the rule is about, spelled out: both tokens of " 😀" span the emoji
    (the first without its space, trimmed); GPT-NeoX's added run of two spaces trims to
    an empty span at its end."""
    ours = bpekit.Tokenizer.from_hf(data_path("hf", SHIPPED[1]))
    ids, offsets = ours.encode_with_offsets("a  b 😀")
    assert len(ids) == 5
    assert offsets == [(0, 1), (3, 3), (3, 4), (5, 6), (5, 6)]
