"""Special tokens inferred for a vocab.json + merges.txt folder without bpekit.json:
found quietly in complete folders (CS336's GPT-2 files, a folder bpekit saved), and not
guessed from a merges.txt cut short, which warns instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import data_path

import bpekit


def _gpt2_folder(folder: Path, n_merges: int | None) -> tuple[Path, Path]:
    """CS336's GPT-2 vocab.json with its first ``n_merges`` merges (all: None)."""
    vocab, merges = data_path("cs336", "gpt2_vocab.json"), data_path("cs336", "gpt2_merges.txt")
    folder.mkdir()
    (folder / "vocab.json").write_bytes(vocab.read_bytes())
    lines = merges.read_bytes().splitlines(keepends=True)
    (folder / "merges.txt").write_bytes(b"".join(lines[:n_merges]))
    return folder / "vocab.json", folder / "merges.txt"


def test_special_tokens_are_not_guessed_from_a_truncated_merges_txt(tmp_path: Path) -> None:
    # With GPT-2's first 1000 merges, the ~49K tokens no merge makes are not taken as
    # special tokens (" is" would encode as [1312, 82], " i" match as special).
    folder = tmp_path / "cut"
    vocab_path, merges_path = _gpt2_folder(folder, 1000)
    with pytest.warns(UserWarning) as caught:
        tok = bpekit.load_tokenizer(folder)
    message = str(caught[0].message)
    assert message.startswith(f"{folder}: 49,000 tokens of vocab.json are made by no merge of merges.txt")
    assert "\n" not in message and "merges.txt cut short" in message
    assert caught[0].filename == __file__  # attributed to the caller's line
    assert tok.special_tokens == {"<|endoftext|>": 50256}
    plain = bpekit.Tokenizer.from_files(vocab_path, merges_path, ["<|endoftext|>"])
    text = " is it? This island is his.<|endoftext|> i"
    assert tok.encode(text) == plain.encode(text)
    assert tok.encode(" is") != [1312, 82]


def test_special_tokens_of_complete_folders_are_inferred_quietly(tmp_path: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # The CS336 fixtures: GPT-2's vocab.json and merges.txt, no bpekit.json.
        _gpt2_folder(tmp_path / "gpt2", None)
        assert bpekit.load_tokenizer(tmp_path / "gpt2").special_tokens == {"<|endoftext|>": 50256}
        # A folder bpekit wrote, its bpekit.json lost: special-looking tokens are found.
        corpus = tmp_path / "c.txt"
        corpus.write_text("low lower lowest [SEP] newer<|endoftext|>newest " * 20)
        vocab, merges = bpekit.train_bpe(corpus, 290, ["<|endoftext|>", "[SEP]", "<s>"])
        bpekit.Tokenizer(vocab, merges, ["<|endoftext|>", "[SEP]", "<s>"]).save(tmp_path / "mine")
        (tmp_path / "mine" / "bpekit.json").unlink()
        tok = bpekit.load_tokenizer(tmp_path / "mine")
        assert tok.special_tokens == {"<|endoftext|>": 256, "[SEP]": 257, "<s>": 258}
