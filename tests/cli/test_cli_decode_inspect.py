"""The `bpekit decode` and `bpekit inspect` commands' errors, and every command's output
into a closed pipe, run as a user would."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.conftest import data_path


def bpekit_cli(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BPEKIT_ENCODINGS": str(data_path("encodings"))}
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", *args], capture_output=True, text=True, input=input, env=env
    )


def assert_one_line_error(r: subprocess.CompletedProcess[str], *said: str) -> None:
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    for s in said:
        assert s in r.stderr, r.stderr


def test_decode_names_the_file_and_place_of_bad_text(tmp_path: Path) -> None:
    # Invalid UTF-8 was named by Python's codec only ("can't decode byte 0xff in position 6").
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"15496 \xff 995\n")
    r = bpekit_cli("decode", str(bad), "-t", "gpt2")
    assert_one_line_error(r, "bad.txt: invalid UTF-8 at byte offset 6")
    # A word that is no id was named without the file or line. Its index counts from 0,
    # as a .npy's does ("item 2" read as the second word).
    item = tmp_path / "item.txt"
    item.write_text("15496 995\nhello\n", encoding="utf-8")
    r = bpekit_cli("decode", str(item), "-t", "gpt2")
    assert_one_line_error(r, "item.txt, line 2: index 2 of the input is 'hello', not a token id")
    r = bpekit_cli("decode", "-t", "gpt2", input="15496\n\n995 x\n")
    assert_one_line_error(r, "stdin, line 3: index 2 of the input is 'x', not a token id")


def test_missing_files_are_named_as_the_core_names_them(tmp_path: Path) -> None:
    # Python's own OSErrors read "[Errno 2] No such file or directory: '...npy'" where
    # the core's read "PATH: no such file or directory".
    for name in ["missing.npy", "missing.txt"]:
        r = bpekit_cli("decode", str(tmp_path / name), "-t", "gpt2")
        assert_one_line_error(r, f"{tmp_path / name}: no such file or directory")
        assert "Errno" not in r.stderr
    r = bpekit_cli("encode", str(tmp_path / "missing.txt"), "-o", str(tmp_path / "o.npy"), "-t", "gpt2")
    assert_one_line_error(r, f"{tmp_path / 'missing.txt'}: no such file or directory")


def test_decode_reads_gz_text(tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt.gz"
    ids.write_bytes(gzip.compress(b"15496 995\n"))
    r = bpekit_cli("decode", str(ids), "-t", "gpt2")
    assert r.returncode == 0 and r.stdout == "Hello world", r.stderr
    # Not gzip, cut short, damaged: gzip's messages name no file, and the last two
    # were tracebacks.
    whole = gzip.compress(b"15496 995\n" * 100)
    for name, data in [
        ("no.txt.gz", b"no"),
        ("cut.txt.gz", whole[:-20]),
        ("bad.txt.gz", whole[:12] + b"\xff" * 30),
    ]:
        (tmp_path / name).write_bytes(data)
        r = bpekit_cli("decode", str(tmp_path / name), "-t", "gpt2")
        assert_one_line_error(r, f"{name}: not a valid .gz file")


def test_decode_of_a_file_that_is_not_npy(tmp_path: Path) -> None:
    # numpy's message for it was about pickled data.
    trunc = tmp_path / "trunc.npy"
    trunc.write_bytes(b"x")
    r = bpekit_cli("decode", str(trunc), "-t", "gpt2")
    assert_one_line_error(r, "trunc.npy: not a .npy file")
    assert "pickle" not in r.stderr


def test_decode_says_where_an_unknown_id_is(tmp_path: Path) -> None:
    # In the second block of ids (decode reads 2**20 at a time): the index is the file's.
    ids = np.full(3 << 20, 15496, dtype=np.uint16)
    ids[1_500_000] = ids[2_000_000] = 60000
    np.save(tmp_path / "big.npy", ids)
    r = bpekit_cli("decode", str(tmp_path / "big.npy"), "-t", "gpt2")
    assert_one_line_error(r, "big.npy, index 1500000: token id 60000 is not in the vocabulary")
    r = bpekit_cli("decode", "-t", "gpt2", input="15496\n995 60000 99999999999999999999\n")
    assert_one_line_error(r, "stdin, line 2 (index 2): token id 60000 is not in the vocabulary")


def test_inspect_names_a_bad_file_before_the_summary(tmp_path: Path) -> None:
    fake = tmp_path / "fake.gz"
    fake.write_bytes(b"no")
    r = bpekit_cli("inspect", "gpt2", "--file", str(fake))
    assert_one_line_error(r, "fake.gz: not a valid .gz file")
    assert r.stdout == ""  # the summary came first


def test_inspect_longest_says_what_it_expects() -> None:
    for bad in ("abc", "-3"):
        r = bpekit_cli("inspect", "gpt2", "--longest", bad)
        assert r.returncode == 2
        assert f"argument --longest: expected a whole number, 0 or more, got '{bad}'" in r.stderr
        assert "_count" not in r.stderr  # the type function's name


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`bpekit inspect o200k_base | head -1` printed "error: [Errno 32] Broken pipe".
    The pipe's read end is closed before the command starts, so that every write to
    stdout fails whatever the timing."""
    np.save(tmp_path / "t.npy", np.full(1 << 20, 15496, dtype=np.uint16))
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world, hello there\n" * 50, encoding="utf-8")
    env = {**os.environ, "BPEKIT_ENCODINGS": str(data_path("encodings"))}
    for args in (
        ["inspect", "o200k_base"],
        ["decode", str(tmp_path / "t.npy"), "-t", "gpt2"],
        ["train", str(corpus), "--vocab-size", "270", "--out", str(tmp_path / "tok"), "--quiet"],
    ):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            r = subprocess.run(
                [sys.executable, "-m", "bpekit.cli", *args],
                stdout=write_end,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        finally:
            os.close(write_end)
        # 141 = 128 + SIGPIPE, what the shell shows for a tool the signal ended.
        assert (r.returncode, r.stderr) == (141, ""), (args, r.stderr)
    assert (tmp_path / "tok" / "vocab.json").exists()  # train's work was done before its summary
