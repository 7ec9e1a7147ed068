"""Errors in a tokenizer's files name the file and the line or the value at fault:
invalid UTF-8 in merges.txt, vocab.json or bpekit.json, and a token or key given twice
in a JSON file (an error rather than the last one kept)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _subprocess import run_cli

import bpekit

BYTE_VOCAB = {i: bytes([i]) for i in range(256)}


def test_invalid_utf8_in_tokenizer_files_names_the_file_and_line(tmp_path: Path) -> None:
    # Python's own "'utf-8' codec can't decode byte 0xff in position 12: invalid start
    # byte" names neither file nor line.
    from bpekit.formats.gpt2 import load_merges, load_vocab

    merges = tmp_path / "merges.txt"
    merges.write_bytes(b"#version: 0.2\na b\nc \xff\n")
    with pytest.raises(
        ValueError, match=f"^{re.escape(str(merges))}:3: invalid UTF-8 .byte 0xff at byte offset 20."
    ):
        load_merges(merges)
    vocab = tmp_path / "vocab.json"
    vocab.write_bytes(b'{"a": 0,\n "\xc3": 1}')
    with pytest.raises(
        ValueError, match=f"^{re.escape(str(vocab))}:2: invalid UTF-8 .byte 0xc3 at byte offset 11."
    ):
        load_vocab(vocab)
    bpekit.Tokenizer(BYTE_VOCAB, []).save(tmp_path / "tok")
    (tmp_path / "tok" / "bpekit.json").write_bytes(b'{"pattern": "\xff"}')
    with pytest.raises(ValueError, match=r"bpekit\.json:1: invalid UTF-8 \(byte 0xff"):
        bpekit.load_tokenizer(tmp_path / "tok")


def test_a_token_given_twice_in_vocab_json_is_an_error(tmp_path: Path) -> None:
    # json keeps the last id silently, losing the other: a duplicate is an error.
    folder = tmp_path / "tok"
    bpekit.Tokenizer({**BYTE_VOCAB, 256: b" t"}, [(b" ", b"t")]).save(folder)
    text = (folder / "vocab.json").read_text(encoding="utf-8")
    (folder / "vocab.json").write_text(text.replace('"Ġt": 256', '"Ġt": 256, "Ġt": 257'), encoding="utf-8")
    message = f"{folder / 'vocab.json'}: token 'Ġt' is given twice (256, then 257)"
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        bpekit.load_tokenizer(folder)
    corpus = tmp_path / "c.txt"
    corpus.write_text("a t")
    r = run_cli("encode", str(corpus), "-t", str(folder), "-o", str(tmp_path / "o.npy"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    # bpekit.json too: which "pattern" was meant?
    (folder / "vocab.json").write_text(text, encoding="utf-8")
    (folder / "bpekit.json").write_text('{"pattern": "gpt2", "special_tokens": [], "pattern": "o200k"}')
    with pytest.raises(
        ValueError, match=re.escape("bpekit.json: key 'pattern' is given twice ('gpt2', then 'o200k')")
    ):
        bpekit.load_tokenizer(folder)
