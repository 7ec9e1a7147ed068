"""Outputs are never written through a symbolic link planted where bpekit writes:
``encode_file``'s temporary file and its output, the temporary file of a word-counts
save, and the folder ``bpekit demo`` makes. The link is left alone or replaced; its
target is never touched."""

from __future__ import annotations

import os
from pathlib import Path

from _subprocess import run_args

import bpekit


def byte_tokenizer(specials: list[str] | None = None) -> bpekit.Tokenizer:
    return bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], specials or [])


def test_encode_file_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    # A link planted at a guessable temporary name (.NAME.PID.tmp) is left alone: the
    # temporary output is created exclusively and never reopened by name, so the
    # link's target is neither overwritten nor made the output.
    import bpekit

    src = tmp_path / "in.txt"
    src.write_text("hello world\n" * 1000)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out.npy"
    (tmp_path / f".out.npy.{os.getpid()}.tmp").symlink_to(victim)
    n = bpekit.encode_file(src, out, byte_tokenizer())
    assert n == 12_000
    assert victim.read_text() == "precious"
    assert not out.is_symlink() and bpekit.load_tokens(out).shape == (12_000,)
    # The output itself a link: the link is replaced, its target left alone.
    out.unlink()
    out.symlink_to(victim)
    bpekit.encode_file(src, out, byte_tokenizer())
    assert victim.read_text() == "precious" and not out.is_symlink()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f".out.npy.{os.getpid()}.tmp", "in.txt", "out.npy", "victim.txt"]


def test_word_counts_save_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    import bpekit

    src = tmp_path / "in.txt"
    src.write_text("low lower lowest")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "c.wc"
    (tmp_path / "c.tmp-bpekit").symlink_to(victim)
    counts = bpekit.count_pretokens(src, [])
    counts.save(out)
    assert victim.read_text() == "precious"
    assert bpekit.WordCounts.load(out).total == counts.total
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.tmp-bpekit", "c.wc", "in.txt", "victim"]


def test_demo_writes_into_a_private_new_folder(tmp_path: Path) -> None:
    # A fixed TMPDIR/bpekit-demo would be written through whatever link another
    # user planted there.
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / "bpekit-demo").symlink_to(victim)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog\n" * 200)
    proc = run_args(
        ["-m", "bpekit.cli", "demo", "--input", str(corpus), "--vocab-size", "300", "--quiet"],
        120,
        {"TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert list(victim.iterdir()) == []
    made = [p for p in tmp_path.iterdir() if p.name.startswith("bpekit-demo-")]
    assert len(made) == 1 and (made[0] / "vocab.json").is_file()
    assert made[0].stat().st_mode & 0o777 == 0o700
