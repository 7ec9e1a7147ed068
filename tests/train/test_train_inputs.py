"""Bad and unusual inputs to training: each gives a clear error or a correct result."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bpekit
from bpekit import reference

SPECIAL = ["<|endoftext|>"]


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match=r"nope\.txt"):
        bpekit.train_bpe(missing, 300, SPECIAL)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_an_os_error(tmp_path: Path) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("hello")
    path.chmod(0)
    with pytest.raises(PermissionError, match=r"secret\.txt"):
        bpekit.train_bpe(path, 300, SPECIAL)


def test_unreadable_path_is_an_os_error(tmp_path: Path) -> None:
    # A path through a regular file cannot be opened by anyone, root included.
    (tmp_path / "f").write_text("x")
    with pytest.raises(OSError, match="f/g"):
        bpekit.train_bpe(str(tmp_path / "f" / "g"), 300, SPECIAL)


def test_empty_file_gives_zero_merges(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    vocab, merges = bpekit.train_bpe(path, 1000, SPECIAL)
    assert merges == []
    assert len(vocab) == 257 and vocab[256] == b"<|endoftext|>"


def test_empty_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no files"):
        bpekit.train_bpe(tmp_path, 300, SPECIAL)


@pytest.mark.parametrize("size", [0, 255, 256])
def test_vocab_size_too_small(tmp_path: Path, size: int) -> None:
    path = tmp_path / "t.txt"
    path.write_text("abc")
    with pytest.raises(ValueError, match="at least 256 byte tokens"):
        bpekit.train_bpe(path, size, SPECIAL)


@pytest.mark.parametrize("size", [-5, 0, 255])
def test_train_from_counts_checks_vocab_size_too(size: int) -> None:
    # Checked here, not left to the core's OverflowError for a negative size (a
    # traceback from `bpekit train --vocab-size -5`).
    counts = bpekit.WordCounts([(b"ab", 3)])
    with pytest.raises(ValueError, match="at least 256 byte tokens"):
        bpekit.train_from_counts(counts, size, SPECIAL)


@pytest.mark.parametrize("size", [2**21, 2**32, 5_000_000_000, 10**25])
def test_vocab_size_too_large(tmp_path: Path, size: int) -> None:
    # Unchecked, 2**32 or more aborts the process (a 34 GB allocation for the merge
    # list), and beyond 2**64 the conversion raises OverflowError.
    path = tmp_path / "t.txt"
    path.write_text("abc")
    with pytest.raises(ValueError, match="too large"):
        bpekit.train_bpe(path, size, SPECIAL)
    with pytest.raises(ValueError, match="too large"):
        bpekit.train_from_counts(bpekit.WordCounts([(b"ab", 3)]), size)


def test_largest_vocab_size_stops_when_no_pair_is_left(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("abcabc abd")
    vocab, merges = bpekit.train_bpe(path, 2**21 - 1, SPECIAL)
    assert len(vocab) == 256 + len(SPECIAL) + len(merges) and 0 < len(merges) < 10


def test_vocab_size_must_be_int(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("abc")
    with pytest.raises(TypeError):
        bpekit.train_bpe(path, 300.0, SPECIAL)  # type: ignore[arg-type]


@pytest.mark.parametrize(("tokens", "message"), [([""], "empty"), (["<a>", "<a>"], "given twice")])
def test_bad_special_tokens(tmp_path: Path, tokens: list[str], message: str) -> None:
    path = tmp_path / "t.txt"
    path.write_text("abc")
    with pytest.raises(ValueError, match=message):
        bpekit.train_bpe(path, 300, tokens)
    with pytest.raises(TypeError):
        bpekit.train_bpe(path, 300, "<|endoftext|>")  # type: ignore[arg-type]


def test_invalid_utf8_names_file_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello world\n" * 10 + b"caf\xe9 ok\xff\xfe<|endoftext|>\xe2\x82")
    with pytest.raises(ValueError, match=r"bad\.txt: invalid UTF-8 at byte offset 123"):
        bpekit.train_bpe(path, 300, SPECIAL)
    for errors in ("replace", "ignore"):
        want = reference.train_bpe(path, 300, SPECIAL, errors=errors)
        assert bpekit.train_bpe(path, 300, SPECIAL, errors=errors) == want
        assert bpekit.train_bpe(path, 300, SPECIAL, errors=errors, num_threads=2, chunk_size=5) == want
    with pytest.raises(ValueError, match="errors must be"):
        bpekit.train_bpe(path, 300, SPECIAL, errors="surrogateescape")


def test_one_document_larger_than_a_chunk(tmp_path: Path) -> None:
    # No special token and no newline: the whole file is one chunk, whatever the chunk size.
    path = tmp_path / "one.txt"
    path.write_text(("the cat sat on the mat " * 5000).strip())
    want = reference.train_bpe(path, 300, SPECIAL)
    assert bpekit.train_bpe(path, 300, SPECIAL, chunk_size=64, num_threads=2) == want


def test_gz_list_and_directory_inputs(tmp_path: Path) -> None:
    a, b = b"alpha beta alpha<|endoftext|>", b"gamma alpha beta"
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_bytes(a)
    with gzip.open(tmp_path / "d" / "b.txt.gz", "wb") as f:
        f.write(b)
    (tmp_path / "d" / ".hidden").write_bytes(b"zzzzzz")
    plain = tmp_path / "joined.txt"
    plain.write_bytes(a + b"<|endoftext|>" + b)
    want = bpekit.train_bpe(plain, 280, SPECIAL)
    assert bpekit.train_bpe(tmp_path / "d", 280, SPECIAL) == want
    assert bpekit.train_bpe([tmp_path / "d" / "a.txt", tmp_path / "d" / "b.txt.gz"], 280, SPECIAL) == want


def _slow_corpus(tmp_path: Path) -> Path:
    # A custom pattern runs on the generic regex engine: slow enough to interrupt.
    path = tmp_path / "big.txt"
    line = "".join(f"word{i} other{i * 7} thing{i % 13}, " for i in range(2000)) + "end<|endoftext|>"
    path.write_text(line * 1000)
    return path


SLOW_PATTERN = r"(?:\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+)(?=[\s\S]|$)"


def test_interrupt_from_progress_callback_stops_promptly(tmp_path: Path) -> None:
    from bpekit import _core
    from bpekit.options import ReadOptions, RunOptions

    path = _slow_corpus(tmp_path)
    calls = []

    def on_progress(done: int, total: int) -> None:
        calls.append(done)
        raise KeyboardInterrupt

    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        _core.count_pretokens(
            [("text", str(path))],
            SPECIAL,
            ReadOptions(),
            RunOptions(num_threads=1),
            pattern=SLOW_PATTERN,
            progress=on_progress,
        )
    assert len(calls) == 1
    assert time.perf_counter() - start < 1.5  # a full run takes about 5 s


def _wait_until_counting(proc: subprocess.Popen[bytes]) -> None:
    """Waits until the child runs its counting thread (its second thread), then a bit.

    A fixed delay raced the child's start-up on a loaded machine: a SIGINT that comes
    while Python is still importing can be swallowed by C code that clears errors.
    """
    tasks = Path(f"/proc/{proc.pid}/task")
    deadline = time.monotonic() + 20
    while tasks.exists() and time.monotonic() < deadline and proc.poll() is None:
        if len(list(tasks.iterdir())) >= 2:
            break
        time.sleep(0.01)
    else:
        if not tasks.exists():
            time.sleep(1.5)  # no /proc here: fall back to a fixed delay
    time.sleep(0.2)


def test_ctrl_c_on_cli_writes_nothing(tmp_path: Path) -> None:
    path = _slow_corpus(tmp_path)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bpekit.cli",
            "train",
            str(path),
            "--vocab-size",
            "400",
            "--out",
            str(out),
            "--pattern",
            SLOW_PATTERN,
            "--threads",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # A suite started in the background by a shell has SIGINT ignored, and a child
        # Python that inherits that installs no Ctrl-C handler at all.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _wait_until_counting(proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"interrupted" in err
    assert not out.exists() or not any(out.iterdir())
