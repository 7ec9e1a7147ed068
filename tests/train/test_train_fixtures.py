"""Training against the CS336 fixtures and the handout's worked example."""

from __future__ import annotations

import json

import bpekit
from bpekit import reference
from bpekit.formats.gpt2 import decode_token
from tests.adapters import run_train_bpe
from tests.conftest import data_path


def test_corpus_en_matches_cs336_reference() -> None:
    corpus = data_path("cs336", "corpus.en")
    vocab, merges = run_train_bpe(corpus, 500, ["<|endoftext|>"])
    assert isinstance(vocab, dict) and isinstance(merges, list)
    with open(data_path("cs336", "train-bpe-reference-merges.txt"), encoding="utf-8") as f:
        want = [tuple(decode_token(t) for t in line.rstrip("\n").split(" ")) for line in f]
    assert merges == want
    ref_vocab = json.loads(data_path("cs336", "train-bpe-reference-vocab.json").read_text(encoding="utf-8"))
    assert set(vocab.values()) == {decode_token(t) for t in ref_vocab}
    assert set(vocab.keys()) == set(range(500))


def test_corpus_en_reference_implementation_agrees() -> None:
    corpus = data_path("cs336", "corpus.en")
    assert reference.train_bpe(corpus, 500, ["<|endoftext|>"]) == bpekit.train_bpe(
        corpus, 500, ["<|endoftext|>"]
    )


def test_handout_example_gives_its_twelve_merges(tmp_path) -> None:
    # The handout pre-tokenizes on whitespace; a pattern that keeps words without
    # their spaces does the same, and the counts go through the public phases.
    text = "low low low low low lower lower widest widest widest newest newest newest newest newest newest"
    path = tmp_path / "handout.txt"
    path.write_text(text)
    counts = bpekit.count_pretokens(path, pattern=r"[^\s]+")
    # The spaces between the words are pieces too (no text is dropped), but a
    # one-byte piece holds no pair, so the merges are the handout's.
    assert counts.to_dict() == {b"low": 5, b"lower": 2, b"widest": 3, b"newest": 6, b" ": 15}
    vocab, merges = bpekit.train_from_counts(counts, 256 + 1 + 12, ["<|endoftext|>"])
    want = "s t|e st|o w|l ow|w est|n e|ne west|w i|wi d|wid est|low e|lowe r".split("|")
    assert [f"{a.decode()} {b.decode()}" for a, b in merges] == want
    assert vocab[256] == b"<|endoftext|>"
    assert vocab[257] == b"st"


def test_ids_are_bytes_then_specials_then_merges(tmp_path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("hello hello<|b|>hello<|a|>")
    vocab, merges = bpekit.train_bpe(path, 256 + 2 + 3, ["<|a|>", "<|b|>"])
    assert [vocab[i] for i in range(256)] == [bytes([i]) for i in range(256)]
    assert vocab[256] == b"<|a|>" and vocab[257] == b"<|b|>"
    assert [vocab[258 + i] for i in range(len(merges))] == [a + b for a, b in merges]
