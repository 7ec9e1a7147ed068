"""Any encoding's merges can be recovered from its ranks, saved as vocab + merges, and a
CS336 Tokenizer built from them encodes identically (minbpe's GPT4Tokenizer idea)."""

from __future__ import annotations

import pytest
from conftest import bpekit_encoding, data_path, read_text_file

import bpekit
from bpekit.formats.gpt2 import load_merges


def test_gpt2_recovered_merges_are_gpt2s_merges() -> None:
    enc = bpekit_encoding("gpt2")
    assert enc.merges == load_merges(data_path("cs336", "gpt2_merges.txt"))


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_tokenizer_from_recovered_merges_encodes_identically(name: str, tmp_path) -> None:
    enc = bpekit_encoding(name)
    specials = sorted(enc.special_tokens, key=enc.special_tokens.__getitem__)
    pattern = {"gpt2": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}[name]
    enc.save(tmp_path)
    rebuilt = bpekit.Tokenizer.from_files(
        tmp_path / "vocab.json", tmp_path / "merges.txt", specials, pattern=pattern
    )
    # The folder keeps the pattern and special tokens (bpekit.json): reading it back
    # with no pattern given gives the same tokenizer (falling back to GPT-2's
    # pattern would change cl100k/o200k ids silently).
    loaded = bpekit.load_tokenizer(tmp_path)
    from_files = bpekit.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", specials)
    assert rebuilt.special_tokens == loaded.special_tokens == enc.special_tokens
    assert loaded.pattern == from_files.pattern == enc.pattern
    texts = [
        read_text_file(data_path("corpora", "taylorswift_wikipedia_en.txt")),
        read_text_file(data_path("multilingual", "udhr2.jsonl"))[:1_000_000],
        read_text_file(data_path("multilingual", "unicode15_emoji-test.txt")),
    ]
    for text in texts:
        want = enc.encode(text, allowed_special="all")
        assert rebuilt.encode(text) == want
        assert loaded.encode(text) == want
