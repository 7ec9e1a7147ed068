"""The Python side of reliability: no hang, crash, silent data loss or unsafe write, whatever
the input. Each test failed before its fix; the commands run as a user runs them, in a
subprocess whose memory and time are bounded and measured."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zlib
from pathlib import Path
from typing import NamedTuple

import pytest

import bpekit
from bpekit.cli import main
from tests.conftest import data_path

# A cap on the address space of the commands run here, so that a regression ends in a
# MemoryError rather than taking the machine's memory; the peak RSS is checked apart.
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


# ---- 1. decode and inspect --file read their input in blocks --------------------------


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
    # Regression: 50 MB of ids took 1.3 GB (all the text, then all the words and ids).
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
    # Regression: /dev/zero grew memory until a MemoryError traceback.
    r = run_measured("decode", "/dev/zero", "-t", "gpt2", timeout=60)
    assert_one_line_error(r, "/dev/zero, line 1: index 0 of the input is '\\x00", "not a token id")
    assert r.peak_mib < 250
    r = run_measured("inspect", "gpt2", "--file", "/dev/zero", timeout=60)
    assert_one_line_error(r, "/dev/zero: over 64 MiB of text from byte offset 0 hold no place")
    assert r.peak_mib < 600
    r = run_measured("decode", "-t", "gpt2", stdin=Path("/dev/zero"), timeout=60)
    assert_one_line_error(r, "stdin, line 1: index 0 of the input is '\\x00")


def test_gzip_bombs_are_read_in_bounded_memory(tmp_path: Path) -> None:
    # Regression: the whole decompressed text was held (a MemoryError traceback for a
    # bomb larger than memory). 300 MiB of NUL bytes, of "a", and of one id a line.
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
    # Regression: the whole text was held, then encoded at once (40 MB: 575 MiB).
    path = tmp_path / "big.txt"
    with open(path, "wb") as f:
        for _ in range(48):
            f.write(b"Hello world, and hello again.\n" * 35_000)
    r = run_measured("inspect", "o200k_base", "--file", str(path))
    assert r.returncode == 0, r.stderr
    assert r.peak_mib < 250, f"peak RSS {r.peak_mib:.0f} MiB"


@pytest.mark.parametrize("word", ["4_6_4", "+464", "True", "\uff14\uff16\uff14", "-1", "0x1d0", "464.0"])
def test_decode_takes_plain_decimal_ids_only(gpt2_env: None, word: str) -> None:
    # Regression: int() took "4_6_4", "+464" and full-width digits as the id 464.
    r = subprocess.run(
        [sys.executable, "-m", "bpekit.cli", "decode", "-t", "gpt2"],
        input=f"15496 995\n464 {word}\n",
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"stdin, line 2: index 3 of the input is {word!r}, not a token id" in r.stderr


# ---- 2. special tokens are not guessed from a merges.txt cut short -------------------


def _gpt2_folder(folder: Path, n_merges: int | None) -> tuple[Path, Path]:
    """CS336's GPT-2 vocab.json with its first ``n_merges`` merges (all: None)."""
    vocab, merges = data_path("cs336", "gpt2_vocab.json"), data_path("cs336", "gpt2_merges.txt")
    folder.mkdir()
    (folder / "vocab.json").write_bytes(vocab.read_bytes())
    lines = merges.read_bytes().splitlines(keepends=True)
    (folder / "merges.txt").write_bytes(b"".join(lines[:n_merges]))
    return folder / "vocab.json", folder / "merges.txt"


def test_special_tokens_are_not_guessed_from_a_truncated_merges_txt(tmp_path: Path) -> None:
    # Regression: with GPT-2's first 1000 merges, the ~49K tokens no merge made were all
    # taken as special tokens, and " is" encoded as [1312, 82], " i" matched as special.
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


# ---- 3. an unknown pattern name in bpekit.json ----------------------------------------


def _set_pattern(folder: Path, pattern: str) -> None:
    import json

    config = json.loads((folder / "bpekit.json").read_text(encoding="utf-8"))
    config["pattern"] = pattern
    (folder / "bpekit.json").write_text(json.dumps(config), encoding="utf-8")


@pytest.mark.parametrize("name", ["gpt3", "GPT2", "o200k-base"])
def test_an_unknown_pattern_name_in_bpekit_json_is_an_error(tmp_path: Path, name: str) -> None:
    # Regression: "gpt3" was read as a regex matching only "gpt3", and `bpekit encode`
    # wrote 0 tokens for any other text, with exit status 0.
    folder = tmp_path / "tok"
    bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, []).save(folder)
    _set_pattern(folder, name)
    config = folder / "bpekit.json"
    message = f'{config}: "pattern" is {name!r}, which is no pattern name; give one of gpt2, r50k_base,'
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        bpekit.load_tokenizer(folder)
    with pytest.raises(ValueError, match=re.escape(message)):
        bpekit.Tokenizer.from_files(folder / "vocab.json", folder / "merges.txt")
    text = tmp_path / "t.txt"
    text.write_text("hello world")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bpekit.cli",
            "encode",
            str(text),
            "-t",
            str(folder),
            "-o",
            str(tmp_path / "o.npy"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "o.npy").exists()


def test_pattern_names_and_regexes_in_bpekit_json_still_load(tmp_path: Path) -> None:
    folder = tmp_path / "tok"
    bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, []).save(folder)
    for pattern, pieces in [("o200k_base", 2), ("gpt2", 2), (r"\S+|\s+", 3), ("[a-z]+|[^a-z]+", 3)]:
        _set_pattern(folder, pattern)
        tok = bpekit.load_tokenizer(folder)
        assert tok.decode(tok.encode("hi there")) == "hi there"
        assert len(bpekit.pretokenize("hi there", tok.pattern)) == pieces


# ---- 4. an empty path is an error, not the current folder -----------------------------

BYTE_VOCAB = {i: bytes([i]) for i in range(256)}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BPEKIT_ENCODINGS": str(data_path("encodings"))}
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


@pytest.fixture
def in_a_corpus_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder holds a text file, which an empty path must not read."""
    (tmp_path / "a.txt").write_text("low lower lowest " * 50)
    monkeypatch.chdir(tmp_path)
    return tmp_path


EMPTY_INPUT = re.escape("empty path given as an input; name a file or folder ('.' is the current folder)")


def test_an_empty_input_path_is_an_error(in_a_corpus_folder: Path) -> None:
    # Regression: "" read the whole current folder, recursively.
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
        r = _cli(*args, cwd=in_a_corpus_folder)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "empty path given as an input" in r.stderr
    for args in (["decode", "", "-t", "gpt2"], ["inspect", "gpt2", "--file", ""]):
        r = _cli(*args, cwd=in_a_corpus_folder)
        assert r.returncode == 2 and "empty path" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert sorted(os.listdir()) == ["a.txt"]


def test_an_empty_output_path_is_an_error(in_a_corpus_folder: Path) -> None:
    # Regression: Tokenizer.save("") wrote vocab.json, merges.txt and bpekit.json into
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
        save_vocab_merges(BYTE_VOCAB, [], "vocab.json", b"")
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
        r = _cli(*args, cwd=in_a_corpus_folder)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "empty path" in r.stderr
        assert sorted(os.listdir()) == ["a.txt"]


def test_bytes_paths_are_taken_as_open_takes_them(tmp_path: Path) -> None:
    # Regression: train_bpe(b"path") iterated the bytes: "...not int".
    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower lowest " * 50)
    assert bpekit.train_bpe(os.fsencode(corpus), 270) == bpekit.train_bpe(corpus, 270)
    assert bpekit.count_pretokens([os.fsencode(corpus)]) == bpekit.count_pretokens(str(corpus))
    with pytest.raises(
        TypeError, match=re.escape("an input must be a path (str, bytes or os.PathLike), not int: 5")
    ):
        bpekit.train_bpe([corpus, 5], 270)
    with pytest.raises(TypeError, match=r"inputs must be a path .* or a list of paths, not int: 5"):
        bpekit.count_pretokens(5)


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_symbolic_link_loops_and_broken_links_are_named(tmp_path: Path) -> None:
    # Regression: a loop given as an input read "no such file or directory", and one
    # inside an input folder (or a broken link) was left out silently.
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
    r = _cli("train", str(loop), "--vocab-size", "270", "--out", str(tmp_path / "tok"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"{loop}: symbolic link loop" in r.stderr


# ---- 15. messages name the file, line or value at fault ------------------------------


def test_invalid_utf8_in_tokenizer_files_names_the_file_and_line(tmp_path: Path) -> None:
    # Regression: "'utf-8' codec can't decode byte 0xff in position 12: invalid start
    # byte", with neither file nor line.
    from bpekit.formats.gpt2 import load_merges, load_vocab

    merges = tmp_path / "merges.txt"
    merges.write_bytes(b"#version: 0.2\na b\nc \xff\n")
    with pytest.raises(
        ValueError, match=f"^{re.escape(str(merges))}:3: invalid UTF-8 .byte 0xff at byte offset 20."
    ):
        load_merges(merges)
    vocab = tmp_path / "vocab.json"
    vocab.write_bytes(b'{"a": 0,\n "\xc3": 1}')
    with pytest.raises(
        ValueError, match=f"^{re.escape(str(vocab))}:2: invalid UTF-8 .byte 0xc3 at byte offset 11."
    ):
        load_vocab(vocab)
    bpekit.Tokenizer(BYTE_VOCAB, []).save(tmp_path / "tok")
    (tmp_path / "tok" / "bpekit.json").write_bytes(b'{"pattern": "\xff"}')
    with pytest.raises(ValueError, match=r"bpekit\.json:1: invalid UTF-8 \(byte 0xff"):
        bpekit.load_tokenizer(tmp_path / "tok")


@pytest.mark.parametrize(
    ("merges", "message"),
    [
        ([b"ab"], "merge #0 is b'ab', not a pair of tokens (bytes, bytes)"),
        (
            [(b"a", b"b"), (b"a", b"b", b"c")],
            "merge #1 is (b'a', b'b', b'c'), not a pair of tokens (bytes, bytes)",
        ),
        ([("a", "b")], "merge #0 is ('a', 'b'): its tokens must be bytes, not str"),
        ([(b"a", 98)], "merge #0 is (b'a', 98): its tokens must be bytes, not int"),
        (["ab"], "merge #0 is 'ab', not a pair of tokens (bytes, bytes)"),
    ],
)
def test_merges_that_are_not_pairs_of_bytes_are_named(merges: list, message: str) -> None:
    # Regression: b"ab" unpacked into 97 and 98, and bytes(97) is 97 NUL bytes: the
    # message held 97 NULs.
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.Tokenizer({**BYTE_VOCAB, 256: b"ab"}, merges)


@pytest.mark.parametrize(
    ("vocab", "message"),
    [
        ({**BYTE_VOCAB, 256.0: b"ab"}, "vocab key 256.0 (token b'ab') must be an int id, not float"),
        ({**BYTE_VOCAB, 1.5: b"ab"}, "vocab key 1.5 (token b'ab') must be an int id, not float"),
        ({**BYTE_VOCAB, "256": b"ab"}, "vocab key '256' (token b'ab') must be an int id, not str"),
        ({**BYTE_VOCAB, 256: "ab"}, "vocab id 256 is 'ab': a token must be bytes, not str"),
        ({**BYTE_VOCAB, 256: 3}, "vocab id 256 is 3: a token must be bytes, not int"),
    ],
)
def test_vocab_keys_and_tokens_of_the_wrong_type_are_named(vocab: dict, message: str) -> None:
    # Regression: int(1.5) made the id 1 ("token id 1 is given twice"); 256.0 passed
    # silently; bytes(3) made a token of 3 NUL bytes.
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.Tokenizer(vocab, [])


def test_numpy_ints_and_bytearrays_are_still_taken() -> None:
    np = pytest.importorskip("numpy")
    vocab = {np.int64(i): bytearray(b) for i, b in BYTE_VOCAB.items()} | {256: b"ab"}
    tok = bpekit.Tokenizer(vocab, [[bytearray(b"a"), memoryview(b"b")]])
    assert tok.encode("ab") == [256]


def test_errors_none_is_named_everywhere(tmp_path: Path) -> None:
    # Regression: "'None' is not an instance of 'str'" (train_bpe, count_pretokens),
    # and for decode "decode() argument 'errors' must be str, not None".
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello")
    message = 'errors must be "strict", "replace" or "ignore", not None'
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.train_bpe(corpus, 260, errors=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.count_pretokens(corpus, errors=None)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=re.escape('errors must be "strict", "replace" or "ignore", not "bogus"')
    ):
        bpekit.count_pretokens(corpus, errors="bogus")
    tok = bpekit.Tokenizer(BYTE_VOCAB, [])
    decode_message = (
        'errors must be "strict", "replace", "ignore" or another error handler of bytes.decode, not '
    )
    with pytest.raises(TypeError, match="^" + re.escape(decode_message + "None") + "$"):
        tok.decode([104], errors=None)  # type: ignore[arg-type]
    # Checked up front: bytes.decode looked the handler up only at invalid UTF-8.
    with pytest.raises(ValueError, match=re.escape(decode_message + '"bogus"')):
        tok.decode([104], errors="bogus")
    assert tok.decode([104, 0xFF], errors="backslashreplace") == "h\\xff"  # as tiktoken allows


def test_encode_file_errors_none_is_named(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello")
    message = 'errors must be "strict", "replace" or "ignore", not None'
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.encode_file(corpus, tmp_path / "o.npy", bpekit.Tokenizer(BYTE_VOCAB, []), errors=None)


def test_word_counts_name_a_word_that_is_not_bytes() -> None:
    # "Can't extract `str` to `Vec`" named neither the item nor what was expected.
    with pytest.raises(TypeError, match=r"counts\[1\] is \('ab', 1\): a word must be bytes, not str"):
        bpekit.WordCounts([(b"a", 1), ("ab", 1)])


@pytest.mark.parametrize("token", ["e", " ", "\n"])
def test_a_special_token_of_one_byte_trains_and_only_vocab_json_refuses_it(
    tmp_path: Path, token: str
) -> None:
    # Training gives it an id of its own beside its byte's token (CS336's semantics, as
    # bpekit.reference trains it); vocab.json, which `bpekit train` writes, cannot hold
    # both, so the command refuses it before reading (the input here is missing).
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello there\nnew line " * 20)
    vocab, _ = bpekit.train_bpe(corpus, 300, [token])
    assert vocab[256] == vocab[ord(token)] == token.encode()
    message = f"--special-token {token!r} is one byte, the bytes of byte token {ord(token)}"
    r = _cli(
        "train", "missing.txt", "--vocab-size", "300", "--special-token", token, "--out", "tok", cwd=tmp_path
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "tok").exists()


def test_disk_full_while_saving_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ENOSPC, simulated: "[Errno 28] No space left on device" named no path (fixed in
    # _atomic.py by 3f2419c).
    import errno

    import bpekit._atomic

    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fd: int, mode: str) -> None:
            self.file = real_fdopen(fd, mode)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(bpekit._atomic.os, "fdopen", Full)
    folder = tmp_path / "tok"
    with pytest.raises(OSError) as caught:
        bpekit.Tokenizer(BYTE_VOCAB, []).save(folder)
    monkeypatch.undo()
    assert caught.value.errno == errno.ENOSPC
    assert list(folder.iterdir()) == []  # nothing half-written (true already)
    assert caught.value.filename == str(folder / "vocab.json"), caught.value
    assert str(folder / "vocab.json") in str(caught.value)


# ---- 16. leniency removed ---------------------------------------------------------------


def test_a_token_given_twice_in_vocab_json_is_an_error(tmp_path: Path) -> None:
    # Regression: json kept the last id silently, losing the other.
    folder = tmp_path / "tok"
    bpekit.Tokenizer({**BYTE_VOCAB, 256: b" t"}, [(b" ", b"t")]).save(folder)
    text = (folder / "vocab.json").read_text(encoding="utf-8")
    (folder / "vocab.json").write_text(text.replace('"Ġt": 256', '"Ġt": 256, "Ġt": 257'), encoding="utf-8")
    message = f"{folder / 'vocab.json'}: token 'Ġt' is given twice (256, then 257)"
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        bpekit.load_tokenizer(folder)
    corpus = tmp_path / "c.txt"
    corpus.write_text("a t")
    r = _cli("encode", str(corpus), "-t", str(folder), "-o", str(tmp_path / "o.npy"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    # bpekit.json too: which "pattern" was meant?
    (folder / "vocab.json").write_text(text, encoding="utf-8")
    (folder / "bpekit.json").write_text('{"pattern": "gpt2", "special_tokens": [], "pattern": "o200k"}')
    with pytest.raises(
        ValueError, match=re.escape("bpekit.json: key 'pattern' is given twice ('gpt2', then 'o200k')")
    ):
        bpekit.load_tokenizer(folder)
