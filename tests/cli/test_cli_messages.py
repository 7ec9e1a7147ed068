"""What the command line says when it is used wrongly: its own flags and environment
variables rather than the library's Python keywords, the option a mistyped one meant, what
a `-t` names when it names nothing, a one-line error for a deeply nested JSON file, and
the special tokens that an encode adds past the trained vocabulary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import bpekit
from bpekit.cli import main
from bpekit.encodings import load_tokenizer
from tests.conftest import data_path

DEEP = "[" * 5000 + "]" * 5000


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``bpekit ARGS`` in this process: exit status, stdout, stderr (argparse's errors
    exit with SystemExit, whose code is the status)."""
    try:
        status = main(list(args))
    except SystemExit as e:
        status = int(e.code or 0)
    out = capsys.readouterr()
    return status, out.out, out.err


def error_line(err: str) -> str:
    """The one line of an error, checked to be the only line of output and no traceback."""
    assert "Traceback" not in err, err
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


@pytest.fixture
def trained(tmp_path: Path) -> Path:
    """A tokenizer folder trained without special tokens (``bpekit train`` writes one)."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower lowest newer wider\n" * 200)
    out = tmp_path / "tok"
    vocab, merges = bpekit.train_bpe(corpus, 290)
    bpekit.Tokenizer(vocab, merges).save(out)
    return out


# ---- the library's keywords worded as the command's flags ---------------------------------


def test_messages_name_flags_not_python_keywords(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "d.jsonl"
    records.write_text('{"text": "low lower"}\n')
    # A bare keyword ("shard_tokens must be ...") and one with its value.
    status, _, err = cli(
        capsys, "encode", str(records), "-t", "gpt2", "-o", str(tmp_path / "ds"), "--shard-tokens", "0"
    )
    assert (
        status == 2
        and error_line(err) == "bpekit encode: error: --shard-tokens must be a positive int, not 0"
    )
    status, _, err = cli(
        capsys, "encode", str(records), "-t", "gpt2", "-o", str(tmp_path / "x.npy"), "--text-field", "a..b"
    )
    assert status == 2 and error_line(err).startswith(
        "bpekit encode: error: --text-field 'a..b' has an empty part"
    )
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff")
    status, _, err = cli(capsys, "encode", str(bad), "-t", "gpt2", "-o", str(tmp_path / "y.npy"), "--quiet")
    assert status == 2 and error_line(err).endswith(
        "pass --errors replace or --errors ignore to decode it anyway"
    )
    # A one-word keyword named first by its check.
    status, _, err = cli(
        capsys, "encode", str(records), "-t", "gpt2", "-o", str(tmp_path / "ds2"), "--seed", "-1"
    )
    assert status == 2 and error_line(err).startswith("bpekit encode: error: --seed must be an int")
    # "keyword (--flag)", the library's way of naming both, becomes the flag alone.
    other = tmp_path / "e.jsonl"
    other.write_text('{"txt": "a"}\n')
    status, _, err = cli(capsys, "encode", str(other), "-t", "gpt2", "-o", str(tmp_path / "z.npy"), "--quiet")
    line = error_line(err)
    assert status == 2 and "--bad-records skip" in line and "bad_records" not in line, line


def test_a_keyword_means_the_flag_of_its_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # convert's --to is save's format=; a Python call in a message stays Python (train's
    # --format is the input's format, not the one to save a tokenizer in).
    source = data_path("hf", "allenai_gpt-neox-olmo-dolma-v1_5.json")
    status, _, err = cli(capsys, "convert", str(source), str(tmp_path / "conv"), "--to", "gpt2")
    assert status == 2 and error_line(err).endswith("(NFC); save it with --to hf"), err
    status, _, err = cli(
        capsys,
        "train",
        "missing.txt",
        "--vocab-size",
        "300",
        "--special-token",
        "|",
        "--out",
        str(tmp_path / "o"),
    )
    line = error_line(err)
    assert status == 2 and 'Tokenizer.save(DIR, format="tiktoken")' in line and "--format" not in line, line


def test_a_missing_encoding_names_the_environment_variable_not_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPEKIT_ENCODINGS", str(tmp_path / "none"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    bpekit.encodings._cache.clear()
    text = tmp_path / "t.txt"
    text.write_text("hi")
    status, _, err = cli(capsys, "encode", str(text), "-t", "o200k_base", "-o", str(tmp_path / "o.npy"))
    assert status == 2 and "BPEKIT_ENCODINGS" in err and "path=" not in err, err
    with pytest.raises(FileNotFoundError, match=r"path= \(get_encoding\(name, path=DIR\)\)"):
        bpekit.get_encoding("o200k_base")  # the Python API keeps its keyword


def test_a_warning_names_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # vocab.json tokens that no merge makes: the advice was "special_tokens= (--special-token)".
    folder = tmp_path / "cut"
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"cd"}
    bpekit.Tokenizer(vocab, [(b"a", b"b")]).save(folder)
    (folder / "bpekit.json").unlink()
    text = tmp_path / "t.txt"
    text.write_text("abcd")
    status, _, err = cli(
        capsys, "encode", str(text), "-t", str(folder), "-o", str(tmp_path / "o.npy"), "--quiet"
    )
    assert status == 0, err
    assert "warning:" in err and "--special-token" in err and "special_tokens=" not in err, err


# ---- what -t names, and mistyped options ------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("../tokk/", "../tokk/: no such folder; did you mean ../tok?"),
        ("tokk", "tokk: no encoding, model or folder of that name; did you mean tok?"),
        (
            "gpt4",
            "gpt4: no encoding, model or folder of that name; did you mean gpt-4, a model whose "
            "encoding is cl100k_base?",
        ),
        (
            "gpt-4o",
            "gpt-4o is an OpenAI model's name, not an encoding's: it uses o200k_base, so give o200k_base",
        ),
        ("o200k", "o200k: no encoding, model or folder of that name; did you mean o200k_base?"),
        ("empty", "empty: a folder without tokenizer.json, nor vocab.json and merges.txt; a tokenizer is"),
    ],
)
def test_a_tokenizer_that_names_nothing_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, spec: str, said: str
) -> None:
    (tmp_path / "tok").mkdir()
    work = tmp_path / "work"
    (work / "empty").mkdir(parents=True)
    monkeypatch.chdir(work)
    (work / "t.txt").write_text("hi")
    if spec == "tokk":
        (work / "tok").mkdir()
    status, _, err = cli(capsys, "encode", "t.txt", "-t", spec, "-o", "o.npy")
    assert status == 2 and error_line(err).startswith(f"bpekit encode: error: {said}"), err
    with pytest.raises(
        (FileNotFoundError, ValueError), match="^" + said.replace("?", r"\?").replace(".", r"\.")
    ):
        load_tokenizer(spec)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["train", "x.txt", "--vocab_size", "300", "--out", "o"],
            "no option --vocab_size; did you mean --vocab-size?",
        ),
        (
            ["encode", "x.txt", "-t", "gpt2", "-o", "o.npy", "--num-threads", "4"],
            "no option --num-threads; did you mean --threads?",
        ),
        (
            ["encode", "x.txt", "-t", "gpt2", "-o", "o.npy", "--quite"],
            "no option --quite; did you mean --quiet?",
        ),
    ],
)
def test_a_mistyped_option_is_named_with_the_one_meant(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    status, _, err = cli(capsys, *args)
    assert status == 2 and err.rstrip("\n").endswith(f"bpekit {args[0]}: error: {said}"), err


# ---- deeply nested JSON ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["vocab.json", "bpekit.json"])
def test_deeply_nested_json_is_one_line_naming_the_file(
    trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (trained / name).write_text(DEEP)
    text = tmp_path / "t.txt"
    text.write_text("low")
    for args in (
        ["encode", str(text), "-t", str(trained), "-o", str(tmp_path / "o.npy")],
        ["decode", "-t", str(trained), str(text)],
        ["show", "low", "-t", str(trained)],
        ["convert", str(trained), str(tmp_path / "conv"), "--to", "tiktoken"],
    ):
        status, _, err = cli(capsys, *args)
        want = f"bpekit {args[0]}: error: {trained / name}: JSON nested too deeply to read; a {name} is"
        assert status == 2 and error_line(err).startswith(want), err
    with pytest.raises(ValueError, match=f"{name}: JSON nested too deeply to read"):
        load_tokenizer(trained)


def test_deeply_nested_work_dir_records_are_not_a_traceback(tmp_path: Path) -> None:
    from bpekit.distributed.work import kept_record, resume_units, unit_files

    work = tmp_path / "work"
    work.mkdir()
    result, record = unit_files(work, 0)
    result.write_bytes(b"x")
    record.write_text(DEEP)
    assert kept_record(work, 0, ".parts") is None  # not kept: counted again
    (work / "plan.json").write_text(DEEP)
    with pytest.raises(ValueError, match=r"plan\.json: not a bpekit plan"):
        resume_units(work, {"job": 1}, [0], kept_record)


# ---- special tokens an encode adds past the trained vocabulary ----------------------------


def test_eos_the_tokenizer_lacks_is_added_with_a_warning(
    trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = max(json.loads((trained / "vocab.json").read_text()).values()) + 1
    records = tmp_path / "d.jsonl"
    records.write_text('{"text": "low lower"}\n{"text": "newer"}\n')
    status, out, err = cli(
        capsys, "encode", str(records), "-t", str(trained), "-o", str(tmp_path / "a.npy"), "--quiet"
    )
    assert status == 0 and "(--eos TOKEN adds one)" in out, out
    # The advice works: the token is added as a special token, with its id and what it does.
    status, out, err = cli(
        capsys,
        "encode",
        str(records),
        "-t",
        str(trained),
        "-o",
        str(tmp_path / "b.npy"),
        "--quiet",
        "--eos",
        "<|endoftext|>",
    )
    assert status == 0, err
    assert f"eos '<|endoftext|>' (id {n}) after each record" in out, out
    warning = (
        f"holds no special token '<|endoftext|>' (id {n}): added past its {n:,} ids, "
        f"so the vocabulary grows to {n + 1:,} ids"
    )
    assert err.count("warning:") == 1 and warning in err, err
    ids = np.load(tmp_path / "b.npy").tolist()
    assert ids.count(n) == 2 and ids[-1] == n
    # A dataset folder records the tokenizer with it.
    status, out, err = cli(
        capsys,
        "encode",
        str(records),
        "-t",
        str(trained),
        "-o",
        str(tmp_path / "ds"),
        "--quiet",
        "--eos",
        "<|endoftext|>",
    )
    assert status == 0 and warning in err, err
    dataset = bpekit.TokenDataset(tmp_path / "ds")
    assert len(dataset) == len(ids) and dataset.document(1).tolist()[-1] == n
    # A token that does not look special is not added: it would cut ordinary text.
    status, _, err = cli(
        capsys, "encode", str(records), "-t", str(trained), "-o", str(tmp_path / "c.npy"), "--eos", "zzz"
    )
    assert status == 2 and "'zzz', given as --eos, is not a single token" in err, err


def test_special_tokens_past_the_vocabulary_are_a_warning(
    trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = max(json.loads((trained / "vocab.json").read_text()).values()) + 1
    records = tmp_path / "d.jsonl"
    records.write_text('{"text": "low"}\n')
    status, out, err = cli(
        capsys,
        "encode",
        str(records),
        "-t",
        str(trained),
        "-o",
        str(tmp_path / "a.npy"),
        "--quiet",
        "--special-token",
        "<|endoftext|>",
    )
    assert status == 0 and f"(id {n}) after each record" in out
    assert f"a model with {n:,} embedding rows cannot take id {n}" in err, err
    with pytest.warns(UserWarning, match=rf"holds no special token '<\|endoftext\|>' \(id {n}\)"):
        load_tokenizer(trained, ["<|endoftext|>"])
    # Special tokens of the vocabulary (a bpekit.json's) are no warning.
    vocab, merges = bpekit.train_bpe(tmp_path / "d.jsonl", 270, ["<|endoftext|>"])
    bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"]).save(tmp_path / "with")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_tokenizer(tmp_path / "with")
        load_tokenizer(tmp_path / "with", ["<|endoftext|>"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals to a child process (Linux)")
def test_a_dataset_stopped_part_way_is_not_called_complete(tmp_path: Path) -> None:
    # A dataset folder changes as soon as a run starts in it, which read as "after the
    # output was complete: wrote ds" though its manifest said complete: false.
    out = tmp_path / "ds"
    env = {**os.environ, "BPEKIT_ENCODINGS": str(data_path("encodings"))}
    args = ["encode", "/dev/stdin", "-t", "gpt2", "-o", str(out), "--shard-tokens", "1000", "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpekit.cli", *args],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write("the quick brown fox jumps over the lazy dog. " * 20_000)
        proc.stdin.flush()  # and kept open: the run waits for more
        deadline = time.monotonic() + 60
        while not (out / "manifest.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert not json.loads((out / "manifest.json").read_text(encoding="utf-8"))["complete"]
    assert proc.returncode == 128 + signal.SIGTERM
    assert f"{out} holds an unfinished dataset" in err and "complete" not in err, err
