"""The `bpekit train` and `bpekit demo` commands, run as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bpekit.cli import COMMANDS
from bpekit.formats.gpt2 import load_vocab_merges, save_vocab_merges
from tests.conftest import data_path


def bpekit_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def test_train_writes_files_and_summary(tmp_path: Path) -> None:
    corpus = data_path("cs336", "corpus.en")
    r = bpekit_cli(
        "train",
        str(corpus),
        "--vocab-size",
        "500",
        "--special-token",
        "<|endoftext|>",
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    for what in ("counting", "merging", "peak memory", "unique pre-tokens", "longest tokens"):
        assert what in r.stdout
    assert "MB/s" in r.stderr and "merges" in r.stderr  # progress bars
    vocab, merges = load_vocab_merges(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert len(vocab) == 500 and len(merges) == 243


def test_cli_errors_are_one_clear_line(tmp_path: Path) -> None:
    r = bpekit_cli(
        "train", str(tmp_path / "missing.txt"), "--vocab-size", "500", "--out", str(tmp_path / "o")
    )
    assert r.returncode == 2
    assert "missing.txt" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff")
    r = bpekit_cli("train", str(bad), "--vocab-size", "300", "--out", str(tmp_path / "o"), "--quiet")
    assert r.returncode == 2 and "byte offset 3" in r.stderr
    assert "--errors replace" in r.stderr and not (tmp_path / "o").exists()


def test_out_that_cannot_be_a_folder_fails_before_training(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n", encoding="utf-8")
    cases = [(corpus, "is a file; --out names the folder"), (corpus / "sub", "is a file, so the folder")]
    for out, said in cases:
        r = bpekit_cli("train", str(corpus), "--vocab-size", "300", "--out", str(out))
        assert r.returncode == 2 and said in r.stderr, r.stderr
        # Nothing ran: no progress line came before the error.
        assert "counting" not in r.stderr and "Traceback" not in r.stderr


def test_demo_runs_on_given_input(tmp_path: Path) -> None:
    corpus = data_path("cs336", "tinystories_sample.txt")
    r = bpekit_cli("demo", "--input", str(corpus), "--vocab-size", "400", "--out", str(tmp_path), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "trained 400 tokens" in r.stdout


def test_vocab_merges_round_trip_every_byte(tmp_path: Path) -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    odd = [b" ", b"\n", b"\r\n", b"  ", b"\xff\xfe", b"\xe2\x82", b" hello", b"\x00", "é🙃".encode()]
    for tok in odd:
        vocab[len(vocab)] = tok if len(tok) > 1 else tok + b"#"
    merges = [(b" ", b" "), (b"\xff", b"\xfe"), (b"\r", b"\n"), (b"\xe2", b"\x82")]
    save_vocab_merges(vocab, merges, tmp_path / "v.json", tmp_path / "m.txt")
    assert load_vocab_merges(tmp_path / "v.json", tmp_path / "m.txt") == (vocab, merges)


def test_a_trained_folder_keeps_its_pattern(tmp_path: Path) -> None:
    """`bpekit train --pattern cl100k` then `bpekit encode -t DIR` encodes with cl100k's
    pattern (read back as GPT-2's pattern, the folder would give other ids)."""
    import bpekit

    corpus = data_path("cs336", "tinystories_sample.txt")
    out = tmp_path / "tok"
    args = ["--vocab-size", "600", "--special-token", "<|endoftext|>", "--pattern", "cl100k"]
    r = bpekit_cli("train", str(corpus), *args, "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    vocab, merges = load_vocab_merges(out / "vocab.json", out / "merges.txt")
    direct = bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"], pattern="cl100k")
    loaded = bpekit.load_tokenizer(out)
    text = corpus.read_text(encoding="utf-8")
    assert loaded.encode(text) == direct.encode(text) != bpekit.Tokenizer(vocab, merges).encode(text)
    r = bpekit_cli("encode", str(corpus), "-t", str(out), "-o", str(tmp_path / "t.npy"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert bpekit.load_tokens(tmp_path / "t.npy").tolist() == direct.encode(text)


def test_every_command_prints_its_help() -> None:
    # A bare "%" in a help text makes argparse fail on `--help`: every command's help
    # is printed here.
    for command in [*COMMANDS, None]:
        args = [command, "--help"] if command else ["--help"]
        r = bpekit_cli(*args)
        assert r.returncode == 0, (command, r.stderr)
        assert r.stdout.startswith("usage: bpekit"), (command, r.stdout)
        assert not r.stderr


def test_thread_counts_and_vocab_sizes_out_of_range_are_refused_before_any_work(tmp_path: Path) -> None:
    # Refused up front: --threads 100000 would run an encode of 12 bytes for minutes,
    # demo would print its banner before refusing --threads 0, and --vocab-size -5
    # would end in a traceback.
    text = tmp_path / "t.txt"
    text.write_text("hello world\n")
    for threads in ("0", "-1", "100000"):
        for args in (
            ["encode", str(text), "-t", "gpt2", "-o", str(tmp_path / "o.npy")],
            ["train", str(text), "--vocab-size", "300", "--out", str(tmp_path / "v")],
            ["demo", "--input", str(text), "--out", str(tmp_path / "v")],
        ):
            r = bpekit_cli(*args, "--threads", threads)
            assert r.returncode == 2 and not r.stdout, (args, r.stdout)
            want = f"bpekit {args[0]}: error: --threads must be between 1 and 1024, got {threads}\n"
            assert r.stderr == want
    for size in ("-5", "5000000000", "1e3"):
        r = bpekit_cli("train", str(text), "--vocab-size", size, "--out", str(tmp_path / "v"))
        assert r.returncode == 2 and "argument --vocab-size: expected a whole number" in r.stderr
        assert "Traceback" not in r.stderr
    # Too small once the special tokens are counted: refused before counting.
    out = str(tmp_path / "v")
    r = bpekit_cli("train", str(text), "--vocab-size", "256", "--special-token", "<|e|>", "--out", out)
    assert r.returncode == 2 and "at least 256 byte tokens + 1 special tokens" in r.stderr
    assert "counting" not in r.stderr
    assert not (tmp_path / "o.npy").exists() and not (tmp_path / "v").exists()


def test_a_mistyped_pattern_name_is_an_error(tmp_path: Path) -> None:
    # A bare word is no regex anyone means (it matches only itself): "GPT2" was
    # trained on as a regex, with a warning; it is now refused before any work.
    text = tmp_path / "t.txt"
    text.write_text("hello world\n")
    out = str(tmp_path / "v")
    r = bpekit_cli("train", str(text), "--vocab-size", "300", "--out", out, "--pattern", "GPT2")
    assert r.returncode == 2
    assert 'error: unknown pattern name "GPT2"; the names are gpt2, r50k_base' in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "v").exists()
    r = bpekit_cli("train", str(text), "--vocab-size", "300", "--out", str(tmp_path / "w"), "--quiet")
    assert r.returncode == 0 and "warning" not in r.stderr
