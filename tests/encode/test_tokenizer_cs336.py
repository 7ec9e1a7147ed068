"""CS336 assignment-1 tokenizer cases, through the one-line adapter, with the official
fixtures in ../shared/data/cs336; ids must match tiktoken's gpt2."""

from __future__ import annotations

import pytest
from adapters import get_tokenizer
from conftest import data_path, tiktoken_encoding

from bpekit.formats.gpt2 import load_vocab_merges

EOT = "<|endoftext|>"


def cs336_tokenizer(special_tokens: list[str] | None = None):
    vocab, merges = load_vocab_merges(
        data_path("cs336", "gpt2_vocab.json"), data_path("cs336", "gpt2_merges.txt")
    )
    return get_tokenizer(vocab, merges, special_tokens)


@pytest.fixture(scope="module")
def tok():
    return cs336_tokenizer()


@pytest.fixture(scope="module")
def tok_eot():
    return cs336_tokenizer([EOT])


@pytest.mark.parametrize("text", ["", "s", "🙃", "Héllò hôw are ü? 🙃", "Héllò hôw <|endoftext|> are ü? 🙃"])
def test_roundtrip_and_tiktoken(tok, text: str) -> None:
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert ids == tiktoken_encoding("gpt2").encode(text, disallowed_special=())


def test_special_token_roundtrip_and_tiktoken(tok_eot) -> None:
    text = "Héllò hôw <|endoftext|><|endoftext|> are ü? 🙃<|endoftext|>"
    ids = tok_eot.encode(text)
    assert tok_eot.decode(ids) == text
    assert ids == tiktoken_encoding("gpt2").encode(text, allowed_special={EOT})
    assert [tok_eot.decode([i]) for i in ids].count(EOT) == 3


@pytest.mark.parametrize("name", ["address.txt", "german.txt", "tinystories_sample.txt"])
def test_fixture_files(tok_eot, name: str) -> None:
    text = data_path("cs336", name).read_text(encoding="utf-8")
    ids = tok_eot.encode(text)
    assert tok_eot.decode(ids) == text
    assert ids == tiktoken_encoding("gpt2").encode(text, allowed_special={EOT})
    with open(data_path("cs336", name), encoding="utf-8") as f:
        assert list(tok_eot.encode_iterable(f)) == ids


def test_overlapping_special_tokens() -> None:
    for specials in ([EOT, EOT + EOT], [EOT + EOT, EOT]):
        tok = cs336_tokenizer(specials)
        text = "Hello, how <|endoftext|><|endoftext|> are you?<|endoftext|>"
        ids = tok.encode(text)
        pieces = [tok.decode([i]) for i in ids]
        assert pieces.count(EOT) == 1
        assert pieces.count(EOT + EOT) == 1
        assert tok.decode(ids) == text


@pytest.mark.parametrize(
    "name", ["special_token_trailing_newlines.txt", "special_token_double_newlines_non_whitespace.txt"]
)
def test_special_tokens_next_to_newlines(tok_eot, name: str) -> None:
    text = data_path("cs336", name).read_text(encoding="utf-8")
    ids = tok_eot.encode(text)
    assert ids == tiktoken_encoding("gpt2").encode(text, allowed_special={EOT})
    assert tok_eot.decode(ids) == text
    with open(data_path("cs336", name), encoding="utf-8") as f:
        assert list(tok_eot.encode_iterable(f)) == ids


def test_special_tokens_missing_from_vocab_are_appended() -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    tok = get_tokenizer(vocab, [], ["<|a|>", "<|b|>"])
    assert tok.encode("<|b|>x<|a|>") == [257, 120, 256]
    assert tok.decode([256, 257]) == "<|a|><|b|>"
    assert tok.n_vocab == 258


def test_special_tokens_that_are_ordinary_tokens_keep_their_ids() -> None:
    """A special token whose bytes a merge makes ("hello") or that is a single byte
    (" ") keeps that id and stays an ordinary token too, as in the reference encoder
    (building such a tokenizer does not fail claiming the token is missing)."""
    from bpekit.reference import encode_reference

    vocab, merges = load_vocab_merges(
        data_path("cs336", "gpt2_vocab.json"), data_path("cs336", "gpt2_merges.txt")
    )
    specials = [EOT, "hello", " world"]
    tok = get_tokenizer(vocab, merges, specials)
    assert tok.n_vocab == len(vocab)
    for text in ["say hello, world! hellohello<|endoftext|> world", "hello world", "x hello"]:
        ids = tok.encode(text)
        assert ids == encode_reference(text, vocab, merges, specials)
        assert tok.decode(ids) == text
    assert tok.encode("hello world") == [31373, 995]
    byte_vocab = {i: bytes([i]) for i in range(256)}
    tok = get_tokenizer(byte_vocab, [], [" ", "ab"])
    assert tok.encode("a b ab") == [97, 32, 98, 32, 256]


def test_decode_replaces_invalid_utf8_like_python(tok) -> None:
    ids = tok.encode("🙃é")
    for cut in range(1, len(ids) + 1):
        part = ids[:cut]
        assert tok.decode(part) == tok.decode_bytes(part).decode("utf-8", errors="replace")
    with pytest.raises(KeyError, match="123456"):
        tok.decode([123456])


def test_from_files_with_and_without_version_line(tmp_path) -> None:
    import bpekit

    vocab_path = data_path("cs336", "gpt2_vocab.json")
    merges_path = data_path("cs336", "gpt2_merges.txt")
    with_version = tmp_path / "merges.txt"
    with_version.write_text("#version: 0.2\n" + merges_path.read_text(encoding="utf-8"), encoding="utf-8")
    a = bpekit.Tokenizer.from_files(vocab_path, merges_path, [EOT])
    b = bpekit.Tokenizer.from_files(vocab_path, with_version, [EOT])
    text = "Hello world<|endoftext|> again"
    assert a.encode(text) == b.encode(text) == tiktoken_encoding("gpt2").encode(text, allowed_special="all")
