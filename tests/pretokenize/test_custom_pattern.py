"""A custom pre-tokenizer pattern drops no text: the bytes between its matches are
pieces too, in encode, encode_file and count_pretokens alike, as ``bpekit.reference``
has them."""

from __future__ import annotations

from pathlib import Path


def test_a_custom_pattern_drops_no_text(tmp_path: Path) -> None:
    # The bytes between a custom pattern's matches are kept, as pieces of their own.
    import bpekit
    from bpekit import reference

    text = "abc 12 def\n<|e|>x9"
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|e|>"], pattern=r"\d")
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    vocab = {i: bytes([i]) for i in range(256)}
    assert ids == reference.encode_reference(text, vocab, [], ["<|e|>"], pattern=r"\d")
    src = tmp_path / "t.txt"
    src.write_text(text)
    bpekit.encode_file(src, tmp_path / "t.npy", tok)
    assert bpekit.load_tokens(tmp_path / "t.npy").tolist() == ids
    counts = bpekit.count_pretokens(src, ["<|e|>"], pattern=r"\d")
    assert sum(len(w) * c for w, c in counts.to_dict().items()) == len(text) - len("<|e|>")
    assert counts.to_dict() == reference.count_words(text, ["<|e|>"], r"\d")
