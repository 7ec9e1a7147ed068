"""Saving in other formats: ``Tokenizer.save(dir, format=...)`` and ``bpekit convert``.

``format="hf"`` is loaded back by ``transformers`` itself (``AutoTokenizer``, no torch
needed) and must give the same ids, special tokens and decode; ``"tiktoken"`` by
``tiktoken.Encoding``; ``"gpt2"`` by bpekit. Formats that cannot hold a tokenizer refuse it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import bpekit_encoding, data_path

import bpekit

TEXTS = [
    "Hello world! Don't  stop\n\n  believing.<|endoftext|>Next doc: 12345 café e\u0301",
    "def f(x):\n    return x  +  1  # 🙃 中文 русский",
    "",
    "   ",
]


def _sample() -> str:
    return data_path("corpora", "taylorswift_wikipedia_en.txt").read_text()[:100_000]


@pytest.fixture(scope="module")
def trained() -> bpekit.Tokenizer:
    vocab, merges = bpekit.train_bpe(
        data_path("corpora", "tinyshakespeare.txt"), 800, ["<|endoftext|>", "<|pad|>"]
    )
    return bpekit.Tokenizer(vocab, merges, ["<|endoftext|>", "<|pad|>"])


def _tokenizers(trained: bpekit.Tokenizer) -> dict[str, bpekit.Tokenizer]:
    return {
        "olmo2": bpekit.Tokenizer.from_hf(data_path("hf", "allenai_dolma2.json")),
        "neox": bpekit.Tokenizer.from_hf(
            data_path("hf", "allenai_eleuther-ai-gpt-neox-20b-pii-special.json")
        ),
        "trained": trained,
        "o200k_base": bpekit_encoding("o200k_base"),
    }


@pytest.mark.parametrize("which", ["olmo2", "neox", "trained", "o200k_base"])
def test_transformers_loads_the_hf_format_with_the_same_ids(trained, which: str, tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    tok = _tokenizers(trained)[which]
    tok.save(tmp_path, format="hf")
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert type(hf).__name__ == "PreTrainedTokenizerFast"
    for text in [*TEXTS, _sample()]:
        ids = tok.encode(text, allowed_special="all")
        assert hf.encode(text, add_special_tokens=False) == ids
        assert hf.decode(ids) == tok.decode(ids)
    if "<|endoftext|>" in tok.special_tokens:
        assert hf.eos_token == "<|endoftext|>"
        assert hf.eos_token_id == tok.special_tokens["<|endoftext|>"]
    if which == "neox":
        assert hf.pad_token == "<|padding|>"
    if which == "trained":
        assert hf.pad_token == "<|pad|>"
        assert hf.pad_token_id == tok.special_tokens["<|pad|>"]


def test_a_bos_template_is_kept_for_transformers(tmp_path: Path) -> None:
    """A post-processor that adds a BOS: transformers adds it too, and names it."""
    transformers = pytest.importorskip("transformers")
    data = json.loads(data_path("hf", "allenai_dolma2.json").read_text())
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {
            "<|endoftext|>": {"id": "<|endoftext|>", "ids": [100257], "tokens": ["<|endoftext|>"]}
        },
    }
    src = tmp_path / "src" / "tokenizer.json"
    src.parent.mkdir()
    src.write_text(json.dumps(data))
    tok = bpekit.Tokenizer.from_hf(src)
    assert tok.encode("hi", add_special_tokens=True) == [100257, *tok.encode("hi")]
    tok.save(tmp_path / "out", format="hf")
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "out"))
    assert hf.encode("hi there") == tok.encode("hi there", add_special_tokens=True)
    assert hf.bos_token == "<|endoftext|>"


def _convert(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", "convert", *args], capture_output=True, text=True
    )


def test_convert_to_tiktoken_loads_in_tiktoken(trained, tmp_path: Path) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    for which, tok in [("cl100k_base", bpekit_encoding("cl100k_base")), ("trained", trained)]:
        out = tmp_path / which
        tok.save(out, format="tiktoken")
        args = json.loads((out / f"{tok.name}.json").read_text())
        enc = tiktoken.Encoding(**args, mergeable_ranks=load_tiktoken_bpe(str(out / f"{tok.name}.tiktoken")))
        for text in [*TEXTS, _sample()]:
            assert enc.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


def test_convert_cli_writes_each_format(tmp_path: Path) -> None:
    olmo = data_path("hf", "allenai_dolma2.json")
    run = _convert(str(olmo), str(tmp_path / "gpt2"), "--to", "gpt2")
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "gpt2").iterdir()) == [
        "bpekit.json",
        "merges.txt",
        "vocab.json",
    ]
    back = bpekit.load_tokenizer(tmp_path / "gpt2")
    want = bpekit.Tokenizer.from_hf(olmo)
    for text in [*TEXTS, _sample()]:
        assert back.encode(text, allowed_special="all") == want.encode(text)
    run = _convert("o200k_base", str(tmp_path / "hf"), "--to", "hf")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [
        str(tmp_path / "hf" / f)
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
    ]
    assert bpekit.load_tokenizer(tmp_path / "hf").encode(_sample()) == bpekit_encoding("o200k_base").encode(
        _sample()
    )


def test_formats_that_cannot_hold_a_tokenizer_refuse_it(tmp_path: Path) -> None:
    neox = data_path("hf", "allenai_eleuther-ai-gpt-neox-20b-pii-special.json")
    run = _convert(str(neox), str(tmp_path / "out"), "--to", "gpt2")
    assert run.returncode != 0
    # The library's advice (format='hf') in the command's words.
    assert "the gpt2 format cannot hold this tokenizer's normalizer (NFC); save it with --to hf" in run.stderr
    assert not (tmp_path / "out").exists()
    # Merges whose ids are not ranks that give them back.
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab", 258: b"abc"}
    tok = bpekit.Tokenizer(vocab, [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c")])
    with pytest.raises(
        ValueError, match="the tiktoken format cannot hold this tokenizer: its ids are not ranks"
    ):
        tok.save(tmp_path / "tk", format="tiktoken")
    with pytest.raises(ValueError, match="unknown format 'spm'; the formats are gpt2, hf, tiktoken"):
        tok.save(tmp_path / "x", format="spm")
