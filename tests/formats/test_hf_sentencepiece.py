"""SentencePiece-style BPE ``tokenizer.json`` files (byte fallback, ``Metaspace``,
Llama's and Gemma's normalizers and decoders), checked against ``tokenizers`` itself.

The files are built here (``_sp_models``: sentencepiece models trained on the shared
corpora, converted by transformers' converters, and variants). Each is compared on
hard texts, hypothesis texts, corpus lines (English and multilingual) and whole
chunks of corpora: ids, decode (also of id lists that split a character), the batch
form, and ``encode_file`` on JSON lines.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _shared_data import DATA
from _sp_models import HARD, NAMES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit

tokenizers = pytest.importorskip("tokenizers")
Pairs = dict[str, tuple[Any, bpekit.Tokenizer]]
pytest.importorskip("sentencepiece")
pytest.importorskip("transformers")


@pytest.fixture(scope="session")
def pairs(sp_files: dict[str, Path]) -> Pairs:
    return {
        name: (tokenizers.Tokenizer.from_file(str(p)), bpekit.Tokenizer.from_hf(p))
        for name, p in sp_files.items()
    }


def _same(pair: tuple[Any, bpekit.Tokenizer], text: str) -> None:
    hf, bp = pair
    want = hf.encode(text, add_special_tokens=False)
    got = bp.encode(text)
    assert got == want.ids, text
    assert bp.decode(got) == hf.decode(want.ids, skip_special_tokens=False), text


@pytest.mark.parametrize("name", NAMES)
def test_hard_texts(pairs: Pairs, name: str) -> None:
    for text in HARD:
        _same(pairs[name], text)


def test_bos_template_and_loaded_parts(pairs: Pairs) -> None:
    hf, bp = pairs["llama_legacy"]
    for text in HARD:
        assert bp.encode(text, add_special_tokens=True) == hf.encode(text).ids
    doc = hf.to_str()
    assert '"Prepend"' in doc and "Metaspace" not in doc  # the old style, as built
    assert json.loads(pairs["llama"][0].to_str())["pre_tokenizer"]["type"] == "Metaspace"
    # A text of one word is cut before "▁" where no token joins it to what precedes.
    assert bp.pattern.startswith("metaspace: cuts before")
    assert "'▁'" in pairs["spans_words"][1].pattern.split("unless after")[1]


def test_token_bytes_follow_the_token_texts(pairs: Pairs) -> None:
    hf, bp = pairs["llama"]
    for text, i in hf.get_vocab(with_added_tokens=False).items():
        if len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
            want = bytes([int(text[3:5], 16)])
        else:
            want = text.replace("▁", " ").encode()
        assert bp.decode_single_token_bytes(i) == want, text


_FRAGMENTS = [" ", "  ", "\n", "\t", "▁", "<s>", "</s>", "the", " the", "cat", "[mask]", "the end"]
_FRAGMENTS += ["é", "中", "😀", "\x00"]
_texts = st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.characters(codec="utf-8")), max_size=40).map(
    "".join
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_texts, which=st.sampled_from(NAMES))
def test_hypothesis_texts(pairs: Pairs, text: str, which: str) -> None:
    _same(pairs[which], text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.sampled_from(["llama", "gemma", "metaspace_split", "unk"]))
def test_decode_of_any_ids(pairs: Pairs, data: st.DataObject, which: str) -> None:
    """Id lists that split characters (runs of byte tokens that are not UTF-8), start
    with spaces or hold special tokens decode as tokenizers decodes them."""
    hf, bp = pairs[which]
    n = hf.get_vocab_size(with_added_tokens=True)
    ids = data.draw(st.lists(st.integers(0, n - 1) | st.integers(3, 3 + 255), max_size=30))
    assert bp.decode(ids) == hf.decode(ids, skip_special_tokens=False)


def _corpus_lines() -> list[str]:
    lines = []
    for where in [
        "corpora/tinystories_v2_train_head_2MiB.txt",
        "corpora/taylorswift_wikipedia_en.txt",
        "corpora/linux_6.1_docs_en.txt",
        "multilingual/fortunes_zh.txt",
        "multilingual/linux_docs_ja_JP.txt",
        "multilingual/tinystories_ru_sample.txt",
        "multilingual/unicode15_emoji-test.txt",
    ]:
        p = DATA / where
        if p.is_file():
            text = p.read_bytes()[: 1 << 20].decode("utf-8", errors="ignore")
            picked = [x for x in text.splitlines() if x.strip()]
            lines += random.Random(where).sample(picked, min(150, len(picked)))
    if not lines:
        pytest.skip(f"the shared corpora are missing from {DATA}")
    return lines


@pytest.mark.parametrize("name", NAMES)
def test_corpus_lines_and_chunks(pairs: Pairs, name: str) -> None:
    hf, bp = pairs[name]
    lines = _corpus_lines()
    want = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    assert bp.encode_batch(lines) == want
    for ids, line in zip(want, lines, strict=True):
        assert bp.decode(ids) == hf.decode(ids, skip_special_tokens=False), line
    # Whole chunks: long texts of many words, lines and paragraphs.
    for where in ["corpora/tinystories_v2_train_head_2MiB.txt", "multilingual/wagahaiwa_nekodearu_ja.txt"]:
        p = DATA / where
        if p.is_file():
            _same((hf, bp), p.read_bytes()[:60_000].decode("utf-8", errors="ignore"))


def test_encode_file_equals_each_document(pairs: Pairs, tmp_path: Path) -> None:
    hf, bp = pairs["llama"]
    lines = _corpus_lines()[:300]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": x}) + "\n" for x in lines), encoding="utf-8")
    n = bpekit.encode_file(path, tmp_path / "ids.npy", bp, num_threads=2)
    got = bpekit.load_tokens(tmp_path / "ids.npy")
    want = [i for x in lines for i in hf.encode(x, add_special_tokens=False).ids]
    assert n == len(want)
    assert np.array_equal(got, np.array(want))


def test_missing_unk_token_fails_only_where_needed(sp_files: dict[str, Path], tmp_path: Path) -> None:
    doc = json.loads(sp_files["unk"].read_text(encoding="utf-8"))
    doc["model"]["unk_token"] = "<nope>"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    hf, bp = tokenizers.Tokenizer.from_file(str(path)), bpekit.Tokenizer.from_hf(path)
    assert bp.encode("hello") == hf.encode("hello", add_special_tokens=False).ids
    with pytest.raises(Exception, match="<nope>"):  # tokenizers raises its own class
        hf.encode("\U0001f600")
    with pytest.raises(ValueError, match="unk_token is not in the vocab"):
        bp.encode("\U0001f600")


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]},
            "'Unigram' is not supported",
        ),
        ({"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0}}, "'WordPiece' is not supported"),
    ],
)
def test_unigram_and_wordpiece_are_one_line_errors(
    tmp_path: Path, model: dict[str, Any], message: str
) -> None:
    doc = {"version": "1.0", "model": model, "pre_tokenizer": {"type": "Metaspace", "replacement": "▁"}}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError) as e:
        bpekit.Tokenizer.from_hf(path)
    text = str(e.value)
    assert "\n" not in text and str(path) in text and "model.type" in text and message in text
    assert "SentencePiece-style" in text


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda d: d.update(decoder={"type": "WordPiece"}), "decoder.type"),
        (lambda d: d.update(normalizer={"type": "Strip", "left": True}), "normalizer.type"),
        (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "pre_tokenizer.type"),
        (
            lambda d: d.update(
                pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "Digits"}, d["pre_tokenizer"]]}
            ),
            "pre_tokenizer.pretokenizers[1]",
        ),
    ],
)
def test_unsupported_parts_name_their_path(
    sp_files: dict[str, Path], tmp_path: Path, edit: Any, where: str
) -> None:
    doc = json.loads(sp_files["llama"].read_text(encoding="utf-8"))
    edit(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError) as e:
        bpekit.Tokenizer.from_hf(path)
    assert str(e.value).startswith(f"{path}: {where}"), e.value


def test_lone_surrogates_read_as_replacement_characters(pairs: Pairs) -> None:
    """A ``str`` with a lone surrogate has no UTF-8: tokenizers refuses it, bpekit reads
    it as U+FFFD (its rule for every tokenizer), which falls back to bytes here."""
    hf, bp = pairs["llama"]
    with pytest.raises(TypeError):
        hf.encode("a\ud800b")
    want = hf.encode("a\ufffdb \ufffd", add_special_tokens=False).ids
    assert bp.encode("a\ud800b \udfff") == want
    assert "<0xEF>" in [hf.id_to_token(i) for i in want]
