"""``bpekit decode`` and ``bpekit inspect --file`` read their input a block at a time:
ids, lines and characters cut by the blocks give what reading the whole input gives,
and memory stays bounded for large files, endless devices and gzip bombs. The memory
cases run the command as a user runs it, in a subprocess whose address space is capped
and whose peak RSS and time are measured."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import data_path

import bpekit
from bpekit.cli import main

ADDRESS_SPACE_CAP = 4 << 30


class Run(NamedTuple):
    """A finished command: its exit status, stderr, and peak resident memory in MiB."""

    returncode: int
    stderr: str
    peak_mib: float
    timed_out: bool


# Runs a command and prints its exit status, whether it timed out, and its own peak RSS
# (wait4), with its address space capped. Run from this small launcher, not forked from
# the test process itself: a forked child starts with its parent's resident pages, and
# Linux keeps that high-water mark across exec, so the child of a pytest process of
# 1.7 GB "peaked" at 1.7 GB.
_LAUNCHER = """
import os, resource, subprocess, sys, time
cap, timeout, stdin = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
with open(stdin, "rb") as fin:
    p = subprocess.Popen(sys.argv[4:], stdin=fin, stdout=subprocess.DEVNULL, preexec_fn=limit)
deadline, timed_out = time.monotonic() + timeout, False
while True:
    pid, status, usage = os.wait4(p.pid, os.WNOHANG)
    if pid:
        break
    if time.monotonic() > deadline and not timed_out:
        p.kill()
        timed_out = True
    time.sleep(0.02)
print(os.waitstatus_to_exitcode(status), int(timed_out), usage.ru_maxrss)
"""


def run_measured(*args: str, stdin: Path | None = None, timeout: float = 120) -> Run:
    """``bpekit ARGS`` in a child process, stdout discarded, killed after ``timeout``
    seconds; its peak RSS is its own (see ``_LAUNCHER``)."""
    env = {**os.environ, "BPEKIT_ENCODINGS": str(data_path("encodings"))}
    command = [sys.executable, "-m", "bpekit.cli", *args]
    launch = [sys.executable, "-c", _LAUNCHER, str(ADDRESS_SPACE_CAP), str(timeout), str(stdin or os.devnull)]
    r = subprocess.run(launch + command, capture_output=True, text=True, env=env, timeout=timeout + 60)
    returncode, timed_out, peak_kib = map(int, r.stdout.split())
    return Run(returncode, r.stderr, peak_kib / 1024, bool(timed_out))


def assert_one_line_error(r: Run, *said: str) -> None:
    assert not r.timed_out, "timed out"
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    for s in said:
        assert s in r.stderr, r.stderr


def gzip_bomb(path: Path, unit: bytes, mib: int) -> None:
    """``mib`` MiB of ``unit`` repeated, gzipped (a few hundred KB on disk)."""
    block = unit * ((1 << 20) // len(unit))
    z = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: the gzip container
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(z.compress(block))
        f.write(z.flush())


@pytest.fixture
def gpt2_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPEKIT_ENCODINGS", str(data_path("encodings")))


@pytest.mark.parametrize("block", [1, 2, 3, 5, 7, 64])
def test_decode_text_ids_across_block_boundaries(
    gpt2_env: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    block: int,
) -> None:
    # Ids, lines and characters are cut anywhere by the blocks; the text comes out as
    # decoding all the ids at once gives it, and errors name the same places.
    monkeypatch.setattr("bpekit.cli._input.BLOCK_BYTES", block)
    ids = [15496, 995, 11, 220, 30325, 232, 12466, 102, 50256, 0, 13]
    ids_file = tmp_path / "ids.txt"
    ids_file.write_bytes(b"15496  995\t11\r\n220 30325\n\n232 12466 102\x0b50256 0 13")
    assert main(["decode", str(ids_file), "-t", "gpt2"]) == 0
    assert capsys.readouterr().out == bpekit.get_encoding("gpt2").decode(ids)
    ids_file.write_bytes(b"15496 995\n\n11 220\n30325 x12 7\n")
    assert main(["decode", str(ids_file), "-t", "gpt2"]) == 2
    assert "ids.txt, line 4: index 5 of the input is 'x12', not a token id" in capsys.readouterr().err
    ids_file.write_bytes(b"15496 995\n\n11 220\n30325 60000 7\n")
    assert main(["decode", str(ids_file), "-t", "gpt2"]) == 2
    assert "ids.txt, line 4 (index 5): token id 60000 is not in the vocabulary" in capsys.readouterr().err
    ids_file.write_bytes(b"15496 995\n220 \xff 7\n")
    assert main(["decode", str(ids_file), "-t", "gpt2"]) == 2
    assert "ids.txt: invalid UTF-8 at byte offset 14" in capsys.readouterr().err


def test_decode_of_ids_text_runs_in_bounded_memory(tmp_path: Path) -> None:
    # Holding all the text, then all the words and ids, takes 1.3 GB for 50 MB of ids.
    ids = tmp_path / "ids.txt"
    with open(ids, "wb") as f:
        for _ in range(40):
            f.write(b"15496 995 11 220\n" * (1 << 16))
    size_mib = ids.stat().st_size / 2**20
    assert size_mib > 40
    for r in (
        run_measured("decode", str(ids), "-t", "gpt2"),
        run_measured("decode", "-t", "gpt2", stdin=ids),
    ):
        assert r.returncode == 0 and not r.timed_out, r.stderr
        assert r.peak_mib < 250, f"peak RSS {r.peak_mib:.0f} MiB for {size_mib:.0f} MiB of ids"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_endless_input_ends_in_one_line_errors() -> None:
    # Read whole, /dev/zero would grow memory until a MemoryError traceback.
    r = run_measured("decode", "/dev/zero", "-t", "gpt2", timeout=60)
    assert_one_line_error(r, "/dev/zero, line 1: index 0 of the input is '\\x00", "not a token id")
    assert r.peak_mib < 250
    r = run_measured("inspect", "gpt2", "--file", "/dev/zero", timeout=60)
    assert_one_line_error(r, "/dev/zero: over 64 MiB of text from byte offset 0 hold no place")
    assert r.peak_mib < 600
    r = run_measured("decode", "-t", "gpt2", stdin=Path("/dev/zero"), timeout=60)
    assert_one_line_error(r, "stdin, line 1: index 0 of the input is '\\x00")


def test_gzip_bombs_are_read_in_bounded_memory(tmp_path: Path) -> None:
    # The decompressed text is never held whole (a bomb larger than memory would end
    # in a MemoryError traceback). 300 MiB of NUL bytes, of "a", and of one id a line.
    gzip_bomb(tmp_path / "zeros.txt.gz", b"\0", 300)
    r = run_measured("decode", str(tmp_path / "zeros.txt.gz"), "-t", "gpt2", timeout=60)
    assert_one_line_error(r, "zeros.txt.gz, line 1: index 0 of the input is '\\x00")
    assert r.peak_mib < 250
    gzip_bomb(tmp_path / "a.txt.gz", b"a", 300)
    r = run_measured("inspect", "gpt2", "--file", str(tmp_path / "a.txt.gz"), timeout=60)
    assert_one_line_error(r, "a.txt.gz: over 64 MiB of text from byte offset 0 of the decompressed data")
    assert r.peak_mib < 600
    gzip_bomb(tmp_path / "ids.txt.gz", b"15496\n", 60)
    r = run_measured("decode", str(tmp_path / "ids.txt.gz"), "-t", "gpt2", timeout=120)
    assert r.returncode == 0 and r.peak_mib < 250, (r.stderr, r.peak_mib)


@pytest.mark.parametrize("block", [1, 2, 5, 64, 1 << 20])
def test_inspect_file_counts_what_encoding_the_whole_text_gives(
    gpt2_env: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    block: int,
) -> None:
    # Measured a block at a time: special tokens and characters cut by the blocks.
    monkeypatch.setattr("bpekit.cli._input.BLOCK_BYTES", block)
    text = "Héllo wörld 😀<|endoftext|>two\r\nlines\n\n  spaced   out<|endoftext|>\n" * 3
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode())
    want = len(bpekit.get_encoding("gpt2").encode(text, allowed_special="all"))
    assert main(["inspect", "gpt2", "--file", str(path)]) == 0
    assert f"{len(text.encode()):,} bytes -> {want:,} tokens" in capsys.readouterr().out
    path.write_bytes(text.encode() + b"\xff" + text.encode())
    assert main(["inspect", "gpt2", "--file", str(path)]) == 2
    assert f"t.txt: invalid UTF-8 at byte offset {len(text.encode())}" in capsys.readouterr().err
    assert main(["inspect", "gpt2", "--file", str(path), "--errors", "replace"]) == 0
    replaced = text + "\ufffd" + text
    want = len(bpekit.get_encoding("gpt2").encode(replaced, allowed_special="all"))
    assert f"-> {want:,} tokens" in capsys.readouterr().out


def test_inspect_file_runs_in_bounded_memory(tmp_path: Path) -> None:
    # Holding the whole text and encoding it at once takes 575 MiB for 40 MB.
    path = tmp_path / "big.txt"
    with open(path, "wb") as f:
        for _ in range(48):
            f.write(b"Hello world, and hello again.\n" * 35_000)
    r = run_measured("inspect", "o200k_base", "--file", str(path))
    assert r.returncode == 0, r.stderr
    assert r.peak_mib < 250, f"peak RSS {r.peak_mib:.0f} MiB"


@pytest.mark.parametrize("word", ["4_6_4", "+464", "True", "\uff14\uff16\uff14", "-1", "0x1d0", "464.0"])
def test_decode_takes_plain_decimal_ids_only(gpt2_env: None, word: str) -> None:
    # int() would take "4_6_4", "+464" and full-width digits as the id 464.
    r = subprocess.run(
        [sys.executable, "-m", "bpekit.cli", "decode", "-t", "gpt2"],
        input=f"15496 995\n464 {word}\n",
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"stdin, line 2: index 3 of the input is {word!r}, not a token id" in r.stderr
