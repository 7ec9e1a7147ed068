"""A byte-level ``tokenizer.json`` whose vocab holds texts that are not byte-level
(``"中国"`` rather than ``"ä¸ŃåĽ½"``): ``tokenizers`` never gives their ids for text
(with ``ignore_merges`` or not, and a merge of such texts never applies), but decodes
them as their UTF-8. Each case is built with ``tokenizers`` and compared with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit.formats.gpt2 import bytes_to_unicode

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, decoders, models, pre_tokenizers  # noqa: E402

_CHARS = bytes_to_unicode()


def _bl(text: str) -> str:
    """``text``'s byte-level form."""
    return "".join(_CHARS[b] for b in text.encode("utf-8"))


def _bytes_vocab() -> dict[str, int]:
    return {_CHARS[b]: b for b in range(256)}


def _build(
    tmp_path: Path, vocab: dict[str, int], merges: list[tuple[str, str]], ignore_merges: bool
) -> tuple[Any, bpekit.Tokenizer]:
    hf = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=ignore_merges))
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\S+|\s+"), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf.decoder = decoders.ByteLevel()
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"raw-{ignore_merges}.json"
    hf.save(str(path))
    return hf, bpekit.Tokenizer.from_hf(path)


def _cases() -> list[tuple[str, dict[str, int], list[tuple[str, str]]]]:
    cases = []
    # A raw text of a whole piece: ignore_merges must not find it.
    vocab = _bytes_vocab()
    vocab["中国"] = 256
    cases.append(("whole piece", vocab, []))
    # A raw text of the same bytes as a byte-level token, before it in the file: the
    # byte-level token keeps its id.
    vocab = _bytes_vocab()
    vocab["中"] = 256
    zh = _bl("中")
    vocab[zh[:2]] = 257
    vocab[zh] = 258
    cases.append(("same bytes", vocab, [(zh[0], zh[1]), (zh[:2], zh[2])]))
    # A merge of raw texts loads but never applies; the byte-level merges after it do.
    vocab = _bytes_vocab()
    vocab.update({"中": 256, "国": 257, "中国": 258, "Ġ ": 259})
    vocab[_bl("ab")] = 260
    cases.append(("raw merge", vocab, [("中", "国"), ("a", "b")]))
    return cases


TEXTS = ["中国", "中国人中国", "中 国 ab 中国ab", "a b", "", " 中国 ", "Ġ 中国"]


@pytest.mark.parametrize("ignore_merges", [True, False])
@pytest.mark.parametrize("name", [c[0] for c in _cases()])
def test_raw_vocab_entries_only_decode(tmp_path: Path, name: str, ignore_merges: bool) -> None:
    _, vocab, merges = next(c for c in _cases() if c[0] == name)
    hf, ours = _build(tmp_path, vocab, merges, ignore_merges)
    for text in TEXTS:
        want = hf.encode(text, add_special_tokens=False).ids
        assert ours.encode(text) == want, (name, text)
        assert ours.encode_batch([text, text]) == [want, want], (name, text)
    raw_ids = [i for t, i in vocab.items() if any(c not in _CHARS.values() for c in t)]
    assert raw_ids
    for i in raw_ids:
        assert ours.decode([i]) == hf.decode([i]), (name, i)
    assert ours.decode(raw_ids) == hf.decode(raw_ids)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Any, bpekit.Tokenizer]]:
    tmp = tmp_path_factory.mktemp("raw")
    out = []
    for name, vocab, merges in _cases():
        for ignore_merges in (True, False):
            hf, ours = _build(tmp / name.replace(" ", "-"), vocab, merges, ignore_merges)
            out.append((f"{name}, ignore_merges={ignore_merges}", hf, ours))
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(alphabet=st.sampled_from("中国人ab Ġ\n"), max_size=30))
def test_raw_vocab_entries_hypothesis(built: list[tuple[str, Any, bpekit.Tokenizer]], text: str) -> None:
    for name, hf, ours in built:
        assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids, name


@pytest.mark.parametrize("normalizer", ["NFKC", "Lowercase", None])
def test_an_added_token_of_a_raw_entry_loads(tmp_path: Path, normalizer: str | None) -> None:
    """An added token whose content is a raw entry (its id), normalized to other text:
    its id decodes as the added token, and the ids are tokenizers'."""
    from tokenizers import AddedToken, normalizers

    vocab = _bytes_vocab()
    vocab["ＡＢ"] = 256
    hf = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[]))
    if normalizer is not None:
        hf.normalizer = getattr(normalizers, normalizer)()
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_tokens([AddedToken("ＡＢ", normalized=True)])
    path = tmp_path / "t.json"
    hf.save(str(path))
    ours = bpekit.Tokenizer.from_hf(path)
    for text in ["中国", "ＡＢ", "AB", "ab", "Ab ＡＢ 中国", "x ab y"]:
        assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids, text


def test_a_byte_only_in_raw_text_is_named(tmp_path: Path) -> None:
    """A vocab whose only entry of byte 0x20 is " " (not byte-level "Ġ"): tokenizers
    skips that byte of every text; bpekit refuses the file and says why."""
    vocab = _bytes_vocab()
    del vocab[_CHARS[0x20]]
    vocab[" "] = 0x20
    path = tmp_path / "t.json"
    _byte_level(vocab).save(str(path))
    with pytest.raises(
        ValueError, match=r"model\.vocab: has no token for byte\(s\) 0x20.*' ' is not byte-level"
    ):
        bpekit.Tokenizer.from_hf(path)


def test_a_lone_surrogate_in_an_added_token_is_one_line(tmp_path: Path) -> None:
    import json

    path = tmp_path / "t.json"
    _byte_level(_bytes_vocab()).save(str(path))
    data = json.loads(path.read_text())
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    data["added_tokens"] = [{"id": 256, "content": "\ud800", **flags}]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"added_tokens\[0\]\.content: holds a lone surrogate") as e:
        bpekit.Tokenizer.from_hf(path)
    assert "\n" not in str(e.value)


def _byte_level(vocab: dict[str, int]) -> Any:
    hf = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[]))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    return hf
