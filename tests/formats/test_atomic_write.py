"""Saved files: all or nothing, with the permissions a plain write would give them."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

import bpekit
from bpekit._atomic import atomic_write, atomic_write_all


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(tmp_path: Path) -> None:
    # Not mkstemp's 0o600, which makes saved tokenizers unreadable to other users.
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "new.txt", b"x")
        assert _mode(tmp_path / "new.txt") == 0o640
        kept = tmp_path / "kept.txt"
        kept.write_bytes(b"old")
        kept.chmod(0o604)
        atomic_write(kept, b"new")
        assert kept.read_bytes() == b"new" and _mode(kept) == 0o604
    finally:
        os.umask(old)


def test_a_failed_save_leaves_every_old_file(tmp_path: Path) -> None:
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
    tok.save(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert set(before) == {"vocab.json", "merges.txt", "bpekit.json"}
    (tmp_path / "bpekit.json").unlink()
    (tmp_path / "bpekit.json").mkdir()  # the last file cannot be written
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abab"}
    bigger = bpekit.Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"ab")])
    with pytest.raises(IsADirectoryError, match=r"bpekit\.json: is a folder"):
        bigger.save(tmp_path)
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / name).read_bytes() == before[name]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bpekit.json", "merges.txt", "vocab.json"]


def test_bad_targets_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a file name"):
        atomic_write(Path(""), b"x")
    with pytest.raises(IsADirectoryError, match=re.escape(f"{tmp_path}: is a folder")):
        atomic_write_all([(tmp_path / "a", b"1"), (tmp_path, b"2")])
    assert list(tmp_path.iterdir()) == []
