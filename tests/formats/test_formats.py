"""Formats: .tiktoken load/save round trip, GPT-2 files of any encoding, and the
HuggingFace tokenizer.json export checked with the ``tokenizers`` package on real text."""

from __future__ import annotations

import re

import pytest
from conftest import bpekit_encoding, data_path, read_text_file

import bpekit
from bpekit.formats.hf import save_hf
from bpekit.formats.tiktoken import load_tiktoken_bpe, save_tiktoken_bpe


def test_tiktoken_file_round_trip(tmp_path) -> None:
    src = data_path("encodings", "cl100k_base.tiktoken")
    ranks = load_tiktoken_bpe(src)
    assert len(ranks) == 100256
    save_tiktoken_bpe(ranks, tmp_path / "x.tiktoken")
    assert (tmp_path / "x.tiktoken").read_bytes() == src.read_bytes()


def test_tiktoken_file_errors_name_the_line(tmp_path) -> None:
    p = tmp_path / "bad.tiktoken"
    p.write_bytes(b"YQ== 0\nnot-base64!! 1\n")
    with pytest.raises(ValueError, match=r"bad.tiktoken:2"):
        load_tiktoken_bpe(p)
    # tiktoken keeps the last rank of a token given twice (a hole in the ids); a rank
    # given twice, or one outside u32, failed later without naming file or line.
    for data, said in [
        (b"YQ== 0\nYg== 1\nYQ== 2\n", r"bad.tiktoken:3: token b'a' was given rank 0 before"),
        (b"YQ== 0\nYg== 0\n", r"bad.tiktoken:2: rank 0 was given on line 1 too"),
        (b"YQ== -1\n", r"bad.tiktoken:1: rank -1 is outside"),
        (b"YQ== 4294967296\n", r"bad.tiktoken:1: rank 4294967296 is outside"),
    ]:
        p.write_bytes(data)
        with pytest.raises(ValueError, match=said):
            load_tiktoken_bpe(p)
    byte_ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(ValueError, match=r"token b'ab' has rank -1"):
        bpekit.Tokenizer.from_ranks(byte_ranks | {b"ab": -1}, pattern="gpt2")
    with pytest.raises(ValueError, match=r"special token '<\|x\|>' has id 4294967296"):
        bpekit.Tokenizer.from_ranks(byte_ranks, {"<|x|>": 1 << 32}, pattern="gpt2")


def _reference_ranks(name: str) -> dict[bytes, int]:
    """The ranks of encoding ``name`` as the formats' Python readers give them."""
    if name == "gpt2":
        from bpekit.encodings import _gpt2_ranks

        return _gpt2_ranks(data_path("encodings", "gpt2_vocab.bpe").read_bytes())
    return load_tiktoken_bpe(data_path("encodings", f"{name}.tiktoken"))


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_get_encoding_parses_the_rank_file_as_the_python_reader_does(name: str) -> None:
    """``get_encoding`` parses rank files in the core; the result must be the tokenizer
    ``from_ranks`` builds from the Python reader's ranks (the format's reference)."""
    fast = bpekit_encoding(name)
    ranks = _reference_ranks(name)
    pattern = "gpt2" if name == "gpt2" else name.split("_")[0]
    reference = bpekit.Tokenizer.from_ranks(ranks, fast.special_tokens, pattern=pattern, name=name)
    assert fast.n_vocab == reference.n_vocab
    assert all(fast.decode_single_token_bytes(i) == token for token, i in ranks.items()), (
        "a token's bytes differ"
    )
    assert fast.merges == reference.merges
    text = read_text_file(data_path("corpora", "taylorswift_wikipedia_en.txt"))[:200_000]
    assert fast.encode(text) == reference.encode(text)


def test_core_rank_file_errors_name_the_line() -> None:
    def build(data: bytes, file_format: str = "tiktoken") -> None:
        bpekit._core.Encoder.from_rank_file(data, "bad.tiktoken", file_format, [], "gpt2")

    for data, line in [
        (b"YQ== 0\nnot-base64!! 1\n", 2),
        (b"YQ== 0\nYg==\n", 2),
        (b"YQ== x\n", 1),
        (b"YQ== 0\n\nYQ== 1\n", 3),
    ]:
        with pytest.raises(ValueError, match=rf"bad.tiktoken:{line}:"):
            build(data)
    # GPT-2's vocab.bpe: line 1 is the version line.
    for data, line in [
        ("#version: 0.2\nĠ t\nĠt\n".encode(), 3),  # one field
        ("#version: 0.2\nĠ t\nh e llo\n".encode(), 3),  # three fields
        ("#version: 0.2\nĠ t\nh \u4e00\n".encode(), 3),  # not a GPT-2 byte character
        ("#version: 0.2\nĠ t\nĠt h\nĠ th\n".encode(), 4),  # " th" made twice
    ]:
        with pytest.raises(ValueError, match=rf"bad.tiktoken:{line}:"):
            build(data, "gpt2")
    with pytest.raises(ValueError, match="not UTF-8"):
        build(b"#version: 0.2\n\xff \x41\n", "gpt2")
    with pytest.raises(ValueError, match="unknown rank file format"):
        build(b"YQ== 0\n", "json")


def _texts() -> list[str]:
    return [
        read_text_file(data_path("corpora", "taylorswift_wikipedia_en.txt")),
        read_text_file(data_path("cs336", "tinystories_sample.txt")),
        read_text_file(data_path("multilingual", "udhr2.jsonl"))[:300_000],
        read_text_file(data_path("multilingual", "unicode15_emoji-test.txt"))[:100_000],
        "Hello   world<|endoftext|>\n\n  tabs\there 123456 don't DON'T",
    ]


@pytest.fixture(scope="module")
def trained_tokenizer():
    vocab, merges = bpekit.train_bpe(data_path("corpora", "tinyshakespeare.txt"), 1000, ["<|endoftext|>"])
    return bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"])


@pytest.mark.parametrize("which", ["trained", "gpt2", "cl100k_base", "o200k_base"])
def test_hf_export_encodes_identically(which: str, trained_tokenizer, tmp_path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = trained_tokenizer if which == "trained" else bpekit_encoding(which)
    path = tmp_path / "tokenizer.json"
    save_hf(tok, path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in _texts():
        ours = tok.encode(text, allowed_special="all")
        theirs = hf.encode(text, add_special_tokens=False).ids
        assert theirs == ours
        assert hf.decode(ours, skip_special_tokens=False) == tok.decode(ours)


def test_hf_export_keeps_the_ids_of_special_tokens_with_spaces_or_non_ascii(tmp_path) -> None:
    """With such special tokens in the model's vocab in byte-level form only, HF gives
    them fresh ids and counts them twice in the vocab size."""
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {i: bytes([i]) for i in range(256)} | {256: b" h", 257: b" he"}
    merges = [(b" ", b"h"), (b" h", b"e")]
    specials = ["‹｜end▁of▁sentence｜>", "<|im start|>", "<|endoftext|>", " he", " ", "🙃<|x|>"]
    tok = bpekit.Tokenizer(vocab, merges, specials)
    save_hf(tok, tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    # " " reuses byte 32's id and " he" token 257's: HF's vocab names those ids twice.
    assert hf.get_vocab_size() == tok.n_vocab + 2
    for text in ["hi‹｜end▁of▁sentence｜> x<|im start|>y", "a  he\n\n he🙃<|x|> he", " he he"]:
        ours = tok.encode(text)
        assert hf.encode(text, add_special_tokens=False).ids == ours
        assert hf.decode(ours, skip_special_tokens=False) == text


def test_hf_export_refuses_a_special_token_it_cannot_tell_apart(tmp_path) -> None:
    # tiktoken style: "hello" is both an ordinary token and a special token of its own id.
    ranks = {bytes([i]): i for i in range(256)}
    tok = bpekit.Tokenizer.from_ranks(ranks | {b"ab": 256}, {"ab": 257}, pattern="gpt2")
    with pytest.raises(ValueError, match="special token 'ab' \\(id 257\\) cannot be written"):
        save_hf(tok, tmp_path / "tokenizer.json")
    assert not (tmp_path / "tokenizer.json").exists()


def test_vocab_and_merges_errors_name_the_file(tmp_path) -> None:
    from bpekit.formats.gpt2 import save_vocab_merges

    vocab = {i: bytes([i]) for i in range(256)}
    save_vocab_merges(vocab, [(b"a", b"b")], tmp_path / "vocab.json", tmp_path / "merges.txt")
    with pytest.raises(ValueError, match=r'merges\.txt: merge #0 \("a" "b"\): its result "ab" is not in'):
        bpekit.load_tokenizer(tmp_path)
    with pytest.raises(ValueError, match=r"merges\.txt: merge #0"):
        bpekit.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    for bad, said in [('{"a": true}', "is True, not an integer"), ('{"a": -1}', "is -1, outside")]:
        (tmp_path / "vocab.json").write_text(bad, encoding="utf-8")
        with pytest.raises(ValueError, match=f"vocab.json: id of token 'a' {re.escape(said)}"):
            bpekit.load_tokenizer(tmp_path)
