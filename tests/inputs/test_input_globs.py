"""Glob patterns as inputs: ``**`` never enters a symbolic link to a folder (a link
back up the tree made every file be read again and again), and a glob reads regular
files only, as the folder walk does: a FIFO it matches would wait for a writer forever."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import bpekit
from bpekit.sources import resolve

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="FIFOs and sockets as Linux has them"
)


def tree_with_links_up(root: Path, links: int) -> Path:
    """``t/a.txt``, ``t/sub/b.txt`` and ``links`` links in ``t/sub`` to ``t``."""
    t = root / "t"
    (t / "sub").mkdir(parents=True)
    (t / "a.txt").write_text("one two\n", encoding="utf-8")
    (t / "sub" / "b.txt").write_text("three\n", encoding="utf-8")
    for i in range(links):
        (t / "sub" / f"parent{i}").symlink_to("..")
    return t


def test_a_link_back_up_the_tree_is_not_followed_by_double_star(tmp_path: Path) -> None:
    # `ln -s .. t/sub/parent` made `t/**/*.txt` read every file 41 times (until the
    # path grew too long), 205 tokens instead of 5.
    t = tree_with_links_up(tmp_path, 1)
    pattern = str(t / "**" / "*.txt")
    assert [p.relative_to(t).as_posix() for p in _files(pattern)] == ["a.txt", "sub/b.txt"]
    tok = bpekit.get_encoding("gpt2")
    n = bpekit.encode_file(pattern, tmp_path / "x.npy", tok)
    assert n == 5 and bpekit.load_tokens(tmp_path / "x.npy").tolist() == tok.encode("one two\nthree\n")
    # The folder walk read the same files.
    assert _files(str(t)) == _files(pattern)


def test_two_links_up_do_not_multiply_the_work(tmp_path: Path) -> None:
    # Two such links ran past 60 s (each level of the walk doubled): in a child
    # process, so that a regression fails the test instead of hanging it.
    t = tree_with_links_up(tmp_path, 2)
    script = (
        "import sys; from bpekit.sources import resolve; print([s[1] for s in resolve(sys.argv[1]).sources])"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, str(t / "**" / "*.txt")],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("resolving the pattern ran past 30 s")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([str(t / "a.txt"), str(t / "sub" / "b.txt")])


def test_double_star_matches_as_glob_does_otherwise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Zero or more real folders; hidden ones skipped; a named link to a folder is
    followed where the pattern names it (one step, as a shell does); relative
    patterns give relative paths; each file once however many ``**`` match it."""
    for name in ("a.txt", "d/b.txt", "d/e/c.txt", ".hid/x.txt", "d/.y.txt", "d/e/f.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x", encoding="utf-8")
    (tmp_path / "link").symlink_to(tmp_path / "d")
    monkeypatch.chdir(tmp_path)
    names = lambda pattern: [str(p) for p in _files(pattern)]  # noqa: E731
    assert names("**/*.txt") == ["a.txt", "d/b.txt", "d/e/c.txt"]
    assert names("d/**") == ["d/b.txt", "d/e/c.txt", "d/e/f.md"]
    assert names("**/e/*") == ["d/e/c.txt", "d/e/f.md"]
    assert names("**/**/c.txt") == ["d/e/c.txt"]
    assert names("link/**/*.txt") == ["link/b.txt", "link/e/c.txt"]
    assert names(str(tmp_path / "**" / "b.txt")) == [str(tmp_path / "d" / "b.txt")]


@linux_only
def test_a_glob_leaves_out_fifos_and_sockets(tmp_path: Path) -> None:
    # A FIFO matched by `*.txt` blocked forever in open(), waiting for a writer.
    (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
    os.mkfifo(tmp_path / "b.txt")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "c.txt"))
    try:
        pattern = str(tmp_path / "*.txt")
        assert _files(pattern) == [tmp_path / "a.txt"]
        tok = bpekit.get_encoding("gpt2")
        assert bpekit.encode_file(pattern, tmp_path / "o.npy", tok) == len(tok.encode("hello\n"))
        with pytest.raises(FileNotFoundError, match="no file matches this pattern"):
            _files(str(tmp_path / "b.*"))
    finally:
        server.close()


def test_a_broken_link_a_glob_matches_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    (tmp_path / "gone.txt").symlink_to(tmp_path / "missing.txt")
    with pytest.raises(
        FileNotFoundError, match=r"gone\.txt: a symbolic link to .*missing\.txt, which does not exist"
    ):
        _files(str(tmp_path / "*.txt"))


def _files(pattern: str) -> list[Path]:
    return [Path(s[1]) for s in resolve(pattern).sources]
