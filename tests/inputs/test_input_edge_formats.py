"""Valid inputs at the edges of their formats: a ``.zst`` written with a long window
(``zstd --long=31``), a JSON line holding a lone surrogate escape, a byte-order mark at
the start of a file, and a socket given as an input (refused, saying what it is)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from _shared_data import ROOT, bpekit_encoding

import bpekit
from bpekit.cli import main

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and sockets of Linux")


def zst_with_window(data: bytes, window_log: int) -> bytes:
    """A valid zstd frame of ``data`` that declares a window of ``2**window_log``
    bytes, as ``zstd --long=31`` writes from a pipe (no content size): raw blocks of
    128 KiB. zstd's default decoder refuses a window past 2**27."""
    frame = bytearray(b"\x28\xb5\x2f\xfd")  # magic
    frame.append(0x00)  # no content size, not single-segment, no checksum, no dictionary
    frame.append((window_log - 10) << 3)  # window descriptor: exponent, mantissa 0
    blocks = [data[i : i + (1 << 17)] for i in range(0, len(data), 1 << 17)] or [b""]
    for k, block in enumerate(blocks):
        last = k == len(blocks) - 1
        frame += ((len(block) << 3) | int(last)).to_bytes(3, "little") + block  # a raw block
    return bytes(frame)


TEXT = "".join(f"line {i}: hello world\n" for i in range(20_000))


@pytest.mark.parametrize("window_log", [27, 28, 31])
def test_a_zst_with_a_long_window_is_read(tmp_path: Path, window_log: int) -> None:
    # "not a valid .zst file (Frame requires too much memory for decoding)" past 2**27.
    tok = bpekit_encoding("gpt2")
    src = tmp_path / "long.txt.zst"
    src.write_bytes(zst_with_window(TEXT.encode(), window_log))
    n = bpekit.encode_file(src, tmp_path / "o.npy", tok)
    assert bpekit.load_tokens(tmp_path / "o.npy").tolist() == tok.encode(TEXT) and n > 0
    jsonl = tmp_path / "long.jsonl.zst"
    jsonl.write_bytes(zst_with_window(b'{"text": "hello"}\n' * 3, window_log))
    assert bpekit.count_pretokens(jsonl).to_dict() == {b"hello": 3}


@pytest.mark.skipif(shutil.which("zstd") is None, reason="no zstd command here")
def test_a_zst_written_by_zstd_long_31_from_a_pipe_is_read(tmp_path: Path) -> None:
    src = tmp_path / "t.txt.zst"
    done = subprocess.run(
        ["zstd", "-q", "--long=31", "-c"], input=TEXT.encode(), capture_output=True, check=True
    )
    src.write_bytes(done.stdout)
    tok = bpekit_encoding("gpt2")
    bpekit.encode_file(src, tmp_path / "o.npy", tok)
    assert bpekit.load_tokens(tmp_path / "o.npy").tolist() == tok.encode(TEXT)


BOUNDED_SCRIPT = """
import resource, sys
import bpekit

with open("/proc/self/statm") as f:
    size = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 30), resource.RLIM_INFINITY))
try:
    bpekit.count_pretokens(sys.argv[1], num_threads=1)
    print("read")
except MemoryError as e:
    print("MemoryError", e)
"""


@linux_only
def test_a_window_that_does_not_fit_in_memory_is_a_memory_error_naming_the_file(tmp_path: Path) -> None:
    """The window is checked against the memory there is before the decoder asks for it."""
    src = tmp_path / "long.txt.zst"
    src.write_bytes(zst_with_window(b"hello world\n" * 10, 31))
    done = subprocess.run(
        [sys.executable, "-c", BOUNDED_SCRIPT, str(src)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout.strip()
    assert out.startswith(f"MemoryError {src}: out of memory for its window of 2048 MiB"), out
    assert "zstd --long" in out and "\n" not in out


def _jsonl(tmp_path: Path, data: bytes, name: str = "d.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_lone_surrogate_escape_follows_errors(tmp_path: Path) -> None:
    # Python's json reads "a\ud800b" (into a str that is no valid text); the reader
    # called the line "not JSON", even under errors="replace".
    line = b'{"text": "a\\ud800b \\ud83d\\ude00"}\n{"text": "ok"}\n'
    assert json.loads(line.splitlines()[0])["text"] == "a\ud800b \U0001f600"
    path = _jsonl(tmp_path, line)
    counts = bpekit.count_pretokens(path, errors="replace").to_dict()
    assert counts == {b"a": 1, "\ufffd".encode(): 1, b"b": 1, " \U0001f600".encode(): 1, b"ok": 1}
    counts = bpekit.count_pretokens(path, errors="ignore").to_dict()
    assert counts == {b"ab": 1, " \U0001f600".encode(): 1, b"ok": 1}
    tok = bpekit_encoding("gpt2")
    bpekit.encode_file(path, tmp_path / "o.npy", tok, errors="replace")
    ids = bpekit.load_tokens(tmp_path / "o.npy").tolist()
    assert tok.decode(ids) == "a\ufffdb \U0001f600<|endoftext|>ok<|endoftext|>"
    # Strict: a bad record that says what it holds and what to pass.
    with pytest.raises(ValueError) as e:
        bpekit.count_pretokens(path)
    assert str(e.value) == (
        f"{path}: line 1 (byte 11): the text holds \\ud800, half of a UTF-16 surrogate pair, which is no "
        'text; pass errors="replace" or errors="ignore" to read it anyway, or bad_records="skip" to leave '
        "such records out"
    )
    with pytest.warns(UserWarning, match=r"skipped 1 bad record"):
        assert bpekit.count_pretokens(path, bad_records="skip").to_dict() == {b"ok": 1}


def test_a_byte_order_mark_starting_a_jsonl_file_is_skipped(tmp_path: Path) -> None:
    # "line 1 (byte 0): not JSON (expected value)": JSON forbids the mark, and Python's
    # json refuses it; editors on Windows write it.
    tok = bpekit_encoding("gpt2")
    for name, data in (
        ("d.jsonl", b'\xef\xbb\xbf{"text": "abc"}\n{"text": "def"}\n'),
        ("d.jsonl.zst", zst_with_window(b'\xef\xbb\xbf{"text": "abc"}\n{"text": "def"}\n', 20)),
    ):
        path = _jsonl(tmp_path, data, name)
        assert bpekit.count_pretokens(path).to_dict() == {b"abc": 1, b"def": 1}
        bpekit.encode_file(path, tmp_path / "o.npy", tok)
        assert bpekit.load_tokens(tmp_path / "o.npy").tolist() == tok.encode(
            "abc<|endoftext|>def<|endoftext|>", allowed_special="all"
        )
    # Only at the start of the file: one inside is the line's, which is not JSON.
    path = _jsonl(tmp_path, b'{"text": "abc"}\n\xef\xbb\xbf{"text": "def"}\n')
    with pytest.raises(ValueError, match=r"line 2 \(byte 16\): not JSON"):
        bpekit.count_pretokens(path)


def test_a_byte_order_mark_starting_a_text_file_is_text(tmp_path: Path) -> None:
    """A text file is read byte for byte, as ``open(path, encoding="utf-8")`` reads it
    (and tiktoken and tokenizers encode it): its mark is the character U+FEFF. Only
    JSON lines, whose format forbids the mark, leave it out."""
    path = tmp_path / "t.txt"
    path.write_bytes(b"\xef\xbb\xbfabc\n")
    tok = bpekit_encoding("gpt2")
    bpekit.encode_file(path, tmp_path / "o.npy", tok)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("\ufeff")
    assert bpekit.load_tokens(tmp_path / "o.npy").tolist() == tok.encode(text)


@linux_only
def test_a_socket_is_refused_saying_it_is_a_socket(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "No such device or address (os error 6)".
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        message = (
            f"{path}: is a socket, not a file or a pipe; give a file, or pipe what the socket sends into "
            "/dev/stdin"
        )
        with pytest.raises(ValueError) as e:
            bpekit.count_pretokens(path)
        assert str(e.value) == message
        with pytest.raises(ValueError) as e:
            bpekit.count_pretokens([str(tmp_path / "s.sock"), iter(["x"])], format="jsonl")
        assert str(e.value) == message
        status = main(["encode", str(path), "-t", "gpt2", "-o", str(tmp_path / "o.npy"), "--quiet"])
        assert status == 2
        assert capsys.readouterr().err.strip() == f"bpekit encode: error: {message}"
    finally:
        server.close()
