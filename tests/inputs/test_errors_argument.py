"""The ``errors`` argument (how invalid UTF-8 is handled) is checked up front wherever
it is taken -- train_bpe, count_pretokens, encode_file, decode -- and a wrong value is
named, with the values allowed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bpekit

BYTE_VOCAB = {i: bytes([i]) for i in range(256)}


def test_errors_none_is_named_everywhere(tmp_path: Path) -> None:
    # Not the bare "'None' is not an instance of 'str'" (train_bpe, count_pretokens)
    # or, for decode, "decode() argument 'errors' must be str, not None".
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello")
    message = 'errors must be "strict", "replace" or "ignore", not None'
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.train_bpe(corpus, 260, errors=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.count_pretokens(corpus, errors=None)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=re.escape('errors must be "strict", "replace" or "ignore", not "bogus"')
    ):
        bpekit.count_pretokens(corpus, errors="bogus")
    tok = bpekit.Tokenizer(BYTE_VOCAB, [])
    decode_message = (
        'errors must be "strict", "replace", "ignore" or another error handler of bytes.decode, not '
    )
    with pytest.raises(TypeError, match="^" + re.escape(decode_message + "None") + "$"):
        tok.decode([104], errors=None)  # type: ignore[arg-type]
    # Checked up front: bytes.decode looks the handler up only at invalid UTF-8.
    with pytest.raises(ValueError, match=re.escape(decode_message + '"bogus"')):
        tok.decode([104], errors="bogus")
    assert tok.decode([104, 0xFF], errors="backslashreplace") == "h\\xff"  # as tiktoken allows


def test_encode_file_errors_none_is_named(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello")
    message = 'errors must be "strict", "replace" or "ignore", not None'
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.encode_file(corpus, tmp_path / "o.npy", bpekit.Tokenizer(BYTE_VOCAB, []), errors=None)  # type: ignore[arg-type]
