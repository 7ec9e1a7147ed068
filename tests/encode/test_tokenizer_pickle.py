"""Tokenizers pickle (for multiprocessing workers, ``datasets.map(num_proc=...)``,
``copy.deepcopy``): the copy encodes, decodes and describes itself exactly as the
original, defaults included, without the original's files."""

from __future__ import annotations

import copy
import multiprocessing
import pickle

import pytest
from conftest import bpekit_encoding, data_path

import bpekit
from bpekit.formats.gpt2 import load_vocab_merges

EOT = "<|endoftext|>"
TEXTS = [
    "",
    "Hello, world! hellohello<|endoftext|><|endoftext|> world\n\n  x",
    "Héllò hôw are ü? 🙃 123 4567 don't WE'LL",
    "<|endoftext|><|endoftext|><|endoftext|>",
]


def assert_same(a: bpekit.Tokenizer, b: bpekit.Tokenizer) -> None:
    assert type(b) is type(a)
    assert (b.name, b.pattern, b.n_vocab) == (a.name, a.pattern, a.n_vocab)
    assert list(b.special_tokens.items()) == list(a.special_tokens.items())  # order too
    assert b.vocab == a.vocab
    assert b.merges == a.merges
    for text in TEXTS:
        # The default special-token policy travels too: `encode(text)` alone.
        try:
            expected = a.encode(text)
        except ValueError as e:
            with pytest.raises(ValueError, match="disallowed special token"):
                b.encode(text)
            assert "disallowed special token" in str(e)
        else:
            assert b.encode(text) == expected
        assert b.encode(text, allowed_special="all") == a.encode(text, allowed_special="all")
        assert b.encode_ordinary(text) == a.encode_ordinary(text)


def cs336_tokenizer(special_tokens: list[str]) -> bpekit.Tokenizer:
    vocab, merges = load_vocab_merges(
        data_path("cs336", "gpt2_vocab.json"), data_path("cs336", "gpt2_merges.txt")
    )
    return bpekit.Tokenizer(vocab, merges, special_tokens)


def test_vocab_and_merges_tokenizer_round_trips() -> None:
    # Overlapping special tokens, one that is an ordinary token ("hello") and one that
    # is appended: each keeps its id in the copy.
    tok = cs336_tokenizer([EOT, EOT + EOT, "hello", "<|pad|>"])
    for again in (pickle.loads(pickle.dumps(tok)), copy.deepcopy(tok), copy.copy(tok)):
        assert_same(tok, again)
    assert pickle.loads(pickle.dumps(tok)).encode(EOT * 3) == tok.encode(EOT * 3)


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_openai_encodings_round_trip(name: str) -> None:
    enc = bpekit_encoding(name)
    again = pickle.loads(pickle.dumps(enc))
    assert_same(enc, again)
    assert again.encode(EOT, allowed_special="all") == [enc.eot_token]


def test_custom_pattern_and_ranks_round_trip() -> None:
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256, b"abab": 257}
    enc = bpekit.Tokenizer.from_ranks(ranks, {"<s>": 300}, pattern=r"\w+|\s+|[^\w\s]+", name="mine")
    again = pickle.loads(pickle.dumps(enc))
    assert_same(enc, again)
    assert again.encode("abab ab<s>", allowed_special="all") == [257, 32, 256, 300]


def test_ranks_whose_special_tokens_share_an_ordinary_tokens_id_round_trip() -> None:
    """A special token at the id of the ordinary token with its bytes ("ab" at 256,
    "\n" at 10) keeps that ordinary token in the pickled ranks: without it the copy
    would lose a merge, or fail to load for want of byte 0x0a."""
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256}
    enc = bpekit.Tokenizer.from_ranks(ranks, {"<b>": 301, "ab": 256, "\n": 10, "<a>": 300}, pattern="gpt2")
    again = pickle.loads(pickle.dumps(enc))
    assert_same(enc, again)
    assert again.encode_ordinary("ab\nab") == [256, 10, 256]


class TaggedTokenizer(bpekit.Tokenizer):
    def __init__(self, vocab, merges, special_tokens, bos: str = "<s>") -> None:
        super().__init__(vocab, merges, special_tokens)
        self.bos = bos


def test_subclass_and_instance_attributes_travel() -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b" t"}
    tok = TaggedTokenizer(vocab, [(b" ", b"t")], ["<|eot|>", " t"], bos="<start>")
    tok.note = {"made": "today"}
    for again in (pickle.loads(pickle.dumps(tok)), copy.deepcopy(tok), copy.copy(tok)):
        assert_same(tok, again)
        assert (again.bos, again.note) == ("<start>", {"made": "today"})
    # Copies share the native encoder (it never changes) rather than rebuilding it;
    # a deep copy gets its own copy of the other attributes.
    assert copy.copy(tok)._core is tok._core and copy.deepcopy(tok)._core is tok._core
    assert copy.deepcopy(tok).note is not tok.note


def test_a_trained_tokenizer_round_trips(tmp_path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat<|endoftext|>the dog ate the hat\n" * 50)
    vocab, merges = bpekit.train_bpe(corpus, 300, [EOT])
    tok = bpekit.Tokenizer(vocab, merges, [EOT], pattern="o200k", name="trained")
    assert_same(tok, pickle.loads(pickle.dumps(tok, protocol=pickle.HIGHEST_PROTOCOL)))


def test_a_spawned_worker_encodes_with_a_pickled_tokenizer() -> None:
    """What `multiprocessing` with spawn (the default on macOS and Windows) and
    `datasets.map(num_proc=...)` do: the tokenizer is pickled into a fresh process."""
    tok = cs336_tokenizer([EOT])
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        got = pool.map(tok.encode, TEXTS)
    assert got == [tok.encode(t) for t in TEXTS]


def test_a_state_from_another_version_is_refused() -> None:
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [])
    rebuild, (cls, state), _ = tok.__reduce__()
    with pytest.raises(ValueError, match="state version 99"):
        rebuild(cls, state | {"version": 99})
