"""Bad arguments to the API: a clear error that names what is wrong, before any work."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import bpekit

BYTES = {i: bytes([i]) for i in range(256)}


@pytest.mark.parametrize("threads", [0, -1, 1025, 10**6])
def test_thread_counts_out_of_range(tmp_path: Path, threads: int) -> None:
    # Unchecked, 2,000 threads take an encode of one short text 6 s, and 10**6 hang.
    tok = bpekit.Tokenizer(BYTES, [])
    text = tmp_path / "t.txt"
    text.write_text("hello")
    message = f"num_threads must be between 1 and 1024, got {threads}"
    with pytest.raises(ValueError, match=message):
        tok.encode_batch(["a"], num_threads=threads)
    with pytest.raises(ValueError, match=message):
        tok.encode_ordinary_batch(["a"], num_threads=threads)
    with pytest.raises(ValueError, match=message):
        bpekit.encode_file(text, tmp_path / "o.npy", tok, num_threads=threads)
    with pytest.raises(ValueError, match=message):
        bpekit.count_pretokens(text, num_threads=threads)
    assert not (tmp_path / "o.npy").exists()


def test_num_threads_may_be_a_numpy_integer() -> None:
    import numpy as np

    tok = bpekit.Tokenizer(BYTES, [])
    assert tok.encode_batch(["ab", "c"], num_threads=np.int64(2)) == [[97, 98], [99]]
    with pytest.raises(TypeError, match="num_threads must be an int or None, got float"):
        tok.encode_batch(["a"], num_threads=2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got bool"):
        tok.encode_batch(["a"], num_threads=True)


def test_many_threads_for_a_small_input_start_few(tmp_path: Path) -> None:
    # A file encode starts no more threads than it has chunks.
    tok = bpekit.Tokenizer(BYTES, [])
    text = tmp_path / "t.txt"
    text.write_text("hello world\n" * 10)
    assert bpekit.encode_file(text, tmp_path / "o.npy", tok, num_threads=1024) == 120
    assert bpekit.load_tokens(tmp_path / "o.npy").tolist() == list(b"hello world\n" * 10)


@pytest.mark.parametrize("bad_id", [-1, 2**32, 2**40])
def test_vocab_ids_outside_u32_are_named(bad_id: int) -> None:
    # Named, not PyO3's OverflowError "out of range integral type conversion attempted".
    with pytest.raises(ValueError, match=f"vocab id {bad_id} \\(token b'x'\\) is outside 0..2\\*\\*32-1"):
        bpekit.Tokenizer({**BYTES, bad_id: b"x"}, [])


def test_save_into_a_file_says_it_is_not_a_folder(tmp_path: Path) -> None:
    # Not a bare "FileExistsError: [Errno 17] File exists".
    file = tmp_path / "a.txt"
    file.write_text("keep me")
    with pytest.raises(NotADirectoryError, match=r"a\.txt: not a folder"):
        bpekit.Tokenizer(BYTES, []).save(file)
    assert file.read_text() == "keep me"


def test_encode_file_output_errors_name_the_output(tmp_path: Path) -> None:
    tok = bpekit.Tokenizer(BYTES, [])
    text = tmp_path / "t.txt"
    text.write_text("hello")
    # Not "FileNotFoundError: : No such file or directory".
    with pytest.raises(ValueError, match="output is an empty path"):
        bpekit.encode_file(text, "", tok)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc, where no file can be made")
def test_a_write_error_names_the_output_not_only_the_temporary_file(tmp_path: Path) -> None:
    # Not only "/proc/.x.npy.PID.tmp", a path the user never gave: the output is made
    # with no name until it is complete, so the message names the output and its
    # folder.
    tok = bpekit.Tokenizer(BYTES, [])
    text = tmp_path / "t.txt"
    text.write_text("hello")
    named = r"^/proc/x\.npy: cannot create a file in /proc: "
    with pytest.raises(OSError, match=named):
        bpekit.encode_file(text, "/proc/x.npy", tok)
