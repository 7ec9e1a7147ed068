"""A special token of one byte ("e", " ", "\\n") trains, with an id of its own beside
its byte's token, while ``bpekit train``, which writes vocab.json (unable to hold two
tokens of the same bytes), refuses it before reading any input."""

from __future__ import annotations

from pathlib import Path

import pytest
from _subprocess import run_cli

import bpekit


@pytest.mark.parametrize("token", ["e", " ", "\n"])
def test_a_special_token_of_one_byte_trains_and_only_vocab_json_refuses_it(
    tmp_path: Path, token: str
) -> None:
    # Training gives it an id of its own beside its byte's token (CS336's semantics, as
    # bpekit.reference trains it); vocab.json, which `bpekit train` writes, cannot hold
    # both, so the command refuses it before reading (the input here is missing).
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello there\nnew line " * 20)
    vocab, _ = bpekit.train_bpe(corpus, 300, [token])
    assert vocab[256] == vocab[ord(token)] == token.encode()
    message = f"--special-token {token!r} is one byte, the bytes of byte token {ord(token)}"
    r = run_cli(
        "train", "missing.txt", "--vocab-size", "300", "--special-token", token, "--out", "tok", cwd=tmp_path
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "tok").exists()
