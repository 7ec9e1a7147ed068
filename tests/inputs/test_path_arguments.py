"""Paths given to the API and the command line: an empty input or output path is an
error (never the current folder), bytes paths are taken as ``open`` takes them, and
symbolic link loops and broken links are named, at the top or inside an input folder."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from _subprocess import run_cli

import bpekit

BYTE_VOCAB = {i: bytes([i]) for i in range(256)}


@pytest.fixture
def in_a_corpus_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder holds a text file, which an empty path must not read."""
    (tmp_path / "a.txt").write_text("low lower lowest " * 50)
    monkeypatch.chdir(tmp_path)
    return tmp_path


EMPTY_INPUT = re.escape("empty path given as an input; name a file or folder ('.' is the current folder)")


def test_an_empty_input_path_is_an_error(in_a_corpus_folder: Path) -> None:
    # "" must not read the whole current folder, recursively.
    tok = bpekit.Tokenizer(BYTE_VOCAB, [])
    with pytest.raises(ValueError, match=EMPTY_INPUT):
        bpekit.train_bpe("", 300)
    with pytest.raises(ValueError, match=EMPTY_INPUT):
        bpekit.train_bpe(["a.txt", ""], 300)
    with pytest.raises(ValueError, match=EMPTY_INPUT):
        bpekit.count_pretokens(b"")
    with pytest.raises(ValueError, match=EMPTY_INPUT):
        bpekit.encode_file("", "o.npy", tok)
    assert sorted(os.listdir()) == ["a.txt"]
    for args in (
        ["train", "", "--vocab-size", "300", "--out", "tok"],
        ["encode", "", "-t", "gpt2", "-o", "o.npy"],
    ):
        r = run_cli(*args, cwd=in_a_corpus_folder)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "empty path given as an input" in r.stderr
    for args in (["decode", "", "-t", "gpt2"], ["inspect", "gpt2", "--file", ""]):
        r = run_cli(*args, cwd=in_a_corpus_folder)
        assert r.returncode == 2 and "empty path" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert sorted(os.listdir()) == ["a.txt"]


def test_an_empty_output_path_is_an_error(in_a_corpus_folder: Path) -> None:
    # Tokenizer.save("") must not write vocab.json, merges.txt and bpekit.json into
    # the current folder.
    from bpekit.formats.gpt2 import save_vocab_merges
    from bpekit.formats.hf import save_hf
    from bpekit.formats.tiktoken import save_tiktoken_bpe

    tok = bpekit.Tokenizer(BYTE_VOCAB, [])
    empty = re.escape("empty path given as the ")
    with pytest.raises(ValueError, match=empty + "folder to save into"):
        tok.save("")
    with pytest.raises(ValueError, match=empty + "vocab.json path"):
        save_vocab_merges(BYTE_VOCAB, [], "", "merges.txt")
    with pytest.raises(ValueError, match=empty + "merges.txt path"):
        save_vocab_merges(BYTE_VOCAB, [], "vocab.json", b"")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=empty + "tokenizer.json path"):
        save_hf(tok, "")
    with pytest.raises(ValueError, match=empty + ".tiktoken path"):
        save_tiktoken_bpe({b"a": 0}, "")
    with pytest.raises(ValueError, match="output is an empty path"):
        bpekit.encode_file("a.txt", "", tok)
    assert sorted(os.listdir()) == ["a.txt"]


def test_an_empty_out_on_the_command_line_is_an_error(in_a_corpus_folder: Path) -> None:
    for args in (
        ["train", "a.txt", "--vocab-size", "300", "--out", "", "--quiet"],
        ["encode", "a.txt", "-t", "gpt2", "-o", "", "--quiet"],
    ):
        r = run_cli(*args, cwd=in_a_corpus_folder)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "empty path" in r.stderr
        assert sorted(os.listdir()) == ["a.txt"]


def test_bytes_paths_are_taken_as_open_takes_them(tmp_path: Path) -> None:
    # b"path" is a path, not a sequence to iterate (whose items are ints: "...not int").
    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower lowest " * 50)
    assert bpekit.train_bpe(os.fsencode(corpus), 270) == bpekit.train_bpe(corpus, 270)
    assert bpekit.count_pretokens([os.fsencode(corpus)]) == bpekit.count_pretokens(str(corpus))
    with pytest.raises(
        TypeError, match=re.escape("an input must be a path (str, bytes or os.PathLike), not int: 5")
    ):
        bpekit.train_bpe([corpus, 5], 270)
    with pytest.raises(TypeError, match=r"inputs must be a path .* or a list of paths, not int: 5"):
        bpekit.count_pretokens(5)  # type: ignore[arg-type]


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_symbolic_link_loops_and_broken_links_are_named(tmp_path: Path) -> None:
    # A loop given as an input is named as a loop, not "no such file or directory", and
    # one inside an input folder (or a broken link) is an error, not left out silently.
    loop = tmp_path / "loop.txt"
    loop.symlink_to(loop)
    with pytest.raises(OSError, match=f"^{re.escape(str(loop))}: symbolic link loop") as e:
        bpekit.train_bpe(loop, 270)
    assert e.value.errno == 40 or sys.platform != "linux"
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("hello")
    (folder / "b.txt").symlink_to(folder / "b.txt")
    with pytest.raises(OSError, match=f"{re.escape(str(folder / 'b.txt'))}: symbolic link loop"):
        bpekit.count_pretokens(folder)
    (folder / "b.txt").unlink()
    (folder / "b.txt").symlink_to(tmp_path / "gone.txt")
    with pytest.raises(
        FileNotFoundError, match=r"b\.txt: a symbolic link to .*gone\.txt, which does not exist"
    ):
        bpekit.count_pretokens(folder)
    r = run_cli("train", str(loop), "--vocab-size", "270", "--out", str(tmp_path / "tok"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"{loop}: symbolic link loop" in r.stderr
