"""Encoding JSON lines, Parquet, ``.gz`` / ``.zst``, iterables and Hugging Face datasets
into a ``.npy``: the ids are those of each document encoded alone, with ``eos`` / ``bos``
around it (by default ``<|endoftext|>`` after each record), and equal the ids of the
joined text; special tokens in records follow ``special_in_text``. Then the command
line: ``bpekit train``, ``encode`` and ``inspect --file`` on these formats, their flags
and their summaries.
"""

from __future__ import annotations

import gzip
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _corpus_formats import (
    EOT,
    VARIANTS,
    joined_text_file,
    jsonl_bytes,
    make_input,
    shared_docs,
    write_parquet,
    zstd_compress,
)
from _shared_data import bpekit_encoding

import bpekit
from bpekit.cli import main
from bpekit.dataset import Layout, Marks
from bpekit.dataset.tokens import write_tokens
from bpekit.options import ReadOptions, RunOptions


@pytest.fixture(scope="module")
def gpt2() -> bpekit.Tokenizer:
    return bpekit_encoding("gpt2")


# What an error of a bad record adds on the command line: how to go on past it.
CLI_SKIP_HINT = "; pass --bad-records skip to leave such records out"
# A missing field: the fields there are, and the flag that picks one.
CLI_FIELD_HINT = (
    "; pass --text-field naming the field that holds the text, or --bad-records skip to leave out records "
    "without it"
)


def encoded(inputs: Any, tok: Any, out: Path, **options: Any) -> list[int]:
    """The ids that ``encode_file`` writes (and checks the count it returns)."""
    n = bpekit.encode_file(inputs, out, tok, **options)
    ids = bpekit.load_tokens(out).tolist()
    assert n == len(ids)
    return ids


def expected(
    docs: list[str], tok: Any, special_in_text: str = "text", eos: int | None = None, bos: int | None = None
) -> list[int]:
    """Each document encoded alone, ``bos`` before and ``eos`` after it."""
    if special_in_text == "text":
        parts = tok.encode_ordinary_batch(docs)
    else:
        parts = tok.encode_batch(docs, allowed_special="all")
    ids: list[int] = []
    for part in parts:
        ids += ([bos] if bos is not None else []) + part + ([eos] if eos is not None else [])
    return ids


# --- ids -------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_records_encode_as_their_documents_each_ended_by_endoftext(
    tmp_path: Path, gpt2, variant: str
) -> None:
    docs = shared_docs("c4")
    inputs, options = make_input(variant, docs, tmp_path)
    got = encoded(inputs, gpt2, tmp_path / "out.npy", **options)
    assert got == expected(docs, gpt2, eos=gpt2.eot_token)
    # ... which are the ids of the text file of the documents joined (and ended) by it.
    joined = joined_text_file(docs, tmp_path, end=EOT)
    assert got == encoded(joined, gpt2, tmp_path / "joined.npy")


@pytest.mark.parametrize("corpus", ["genesis", "udhr"])
def test_multilingual_records_with_o200k(tmp_path: Path, corpus: str) -> None:
    o200k = bpekit_encoding("o200k_base")
    docs = shared_docs(corpus)
    inputs, _ = make_input("jsonl.zst", docs, tmp_path)
    assert encoded(inputs, o200k, tmp_path / "o.npy") == expected(docs, o200k, eos=o200k.eot_token)


@pytest.mark.parametrize("variant", ["jsonl", "jsonl.zst", "parquet-zstd", "iterable", "dataset"])
def test_threads_and_chunk_sizes_change_no_id(tmp_path: Path, gpt2, variant: str) -> None:
    docs = shared_docs("c4")
    want = expected(docs, gpt2, eos=gpt2.eot_token)
    for threads in (1, 2, 3):
        for chunk_size in (1024, 0):
            inputs, options = make_input(variant, docs, tmp_path)
            got = encoded(
                inputs, gpt2, tmp_path / "o.npy", num_threads=threads, chunk_size=chunk_size, **options
            )
            assert got == want, (threads, chunk_size)


SPECIAL_DOCS = ["a<|endoftext|>b", "<|endoftext|>", "plain", "", "tail <|endoftext|>"]


def test_special_tokens_in_records(tmp_path: Path, gpt2) -> None:
    inputs, _ = make_input("jsonl", SPECIAL_DOCS, tmp_path)
    eot = gpt2.eot_token
    by_default = encoded(inputs, gpt2, tmp_path / "a.npy")
    assert by_default == expected(SPECIAL_DOCS, gpt2, "text", eos=eot)
    assert by_default.count(eot) == len(SPECIAL_DOCS)  # the ends only: the text's are ordinary
    as_special = encoded(inputs, gpt2, tmp_path / "b.npy", special_in_text="special")
    assert as_special == expected(SPECIAL_DOCS, gpt2, "special", eos=eot)
    assert as_special == encoded(joined_text_file(SPECIAL_DOCS, tmp_path, EOT), gpt2, tmp_path / "j.npy")
    with pytest.raises(
        ValueError, match=re.escape(f"{inputs}: line 1 (byte 0): byte 1 of its text: the text holds")
    ):
        encoded(inputs, gpt2, tmp_path / "c.npy", special_in_text="error")
    assert not (tmp_path / "c.npy").exists()


def test_special_in_text_in_text_files(tmp_path: Path, gpt2) -> None:
    path = tmp_path / "t.txt"
    path.write_text("one<|endoftext|>two")
    assert encoded(path, gpt2, tmp_path / "a.npy") == gpt2.encode(
        "one<|endoftext|>two", allowed_special="all"
    )
    assert encoded(path, gpt2, tmp_path / "b.npy", special_in_text="text") == gpt2.encode_ordinary(
        "one<|endoftext|>two"
    )
    with pytest.raises(ValueError, match=re.escape(f"{path}: byte 3: the text holds the special token")):
        encoded(path, gpt2, tmp_path / "c.npy", special_in_text="error")


def test_every_json_escape_is_decoded(tmp_path: Path, gpt2) -> None:
    from test_input_formats import ESCAPES_DOCS, ESCAPES_JSONL

    path = tmp_path / "e.jsonl"
    path.write_bytes(ESCAPES_JSONL)
    assert encoded(path, gpt2, tmp_path / "o.npy") == expected(ESCAPES_DOCS, gpt2, eos=gpt2.eot_token)


# --- eos and bos -------------------------------------------------------------------------------


def test_eos_and_bos_given_apply_to_records_and_to_text_files(tmp_path: Path, gpt2) -> None:
    docs = ["first record", "", "third"]
    records, _ = make_input("jsonl", docs, tmp_path)
    text = tmp_path / "t.txt"
    text.write_text("a text file<|endoftext|>with two documents")
    nl, dot = gpt2.encode_single_token("\n"), gpt2.encode_single_token(".")
    got = encoded([records, text], gpt2, tmp_path / "o.npy", eos="\n", bos=".")
    file_ids = gpt2.encode(text.read_text(), allowed_special="all")
    assert got == [*expected(docs, gpt2, eos=nl, bos=dot), dot, *file_ids, nl]
    # By default: <|endoftext|> after records, nothing around a text file.
    assert (
        encoded([records, text], gpt2, tmp_path / "o.npy")
        == expected(docs, gpt2, eos=gpt2.eot_token) + file_ids
    )
    # eos=None: nothing; bos alone.
    assert encoded([records, text], gpt2, tmp_path / "o.npy", eos=None, bos=EOT) == [
        *expected(docs, gpt2, bos=gpt2.eot_token),
        gpt2.eot_token,
        *file_ids,
    ]


def test_after_each_file_comes_after_the_last_eos(tmp_path: Path, gpt2) -> None:
    docs = ["x", "y"]
    records, _ = make_input("jsonl", docs, tmp_path)
    nl = gpt2.encode_single_token("\n")
    got = encoded([records, iter(["z"])], gpt2, tmp_path / "o.npy", after_each_file="\n")
    eot = gpt2.eot_token
    assert got == [*expected(docs, gpt2, eos=eot), nl, *expected(["z"], gpt2, eos=eot), nl]


def test_no_default_eos_without_an_endoftext_token(tmp_path: Path) -> None:
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"])
    records, _ = make_input("jsonl", ["ab", "c"], tmp_path)
    assert encoded(records, tok, tmp_path / "o.npy") == [97, 98, 99]
    assert encoded(records, tok, tmp_path / "o.npy", eos="<|eot|>") == [97, 98, 256, 99, 256]
    result = write_tokens(records, tmp_path / "o.npy", tok, Layout(), Marks(), ReadOptions(), RunOptions())
    assert result.framing.notes == (
        "no eos after records: the tokenizer has no '<|endoftext|>' (eos='TOKEN' adds one)",
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"eos": "not one token"}, "'not one token', given as eos, is not a single token of 'gpt2'"),
        ({"bos": ""}, "'', given as bos, is not a single token of 'gpt2'"),
        ({"eos": 50256}, "the token given as eos must be the text of a token (a str), not 50256"),
        ({"special_in_text": "maybe"}, 'special_in_text must be "special", "text", "error" or None'),
        ({"bad_records": "warn"}, 'bad_records must be "error" or "skip", not "warn"'),
        ({"format": "parquet"}, "a Parquet file cannot be read through .gz"),
    ],
)
def test_options_are_checked_before_any_work(tmp_path: Path, gpt2, options: dict, message: str) -> None:
    src = tmp_path / "docs.jsonl.gz"
    src.write_bytes(gzip.compress(jsonl_bytes(["a"])))
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        bpekit.encode_file(src, tmp_path / "o.npy", gpt2, **options)
    assert not (tmp_path / "o.npy").exists()


# --- bad records and stats ---------------------------------------------------------------------


def test_bad_records_skipped_are_counted_and_warned(tmp_path: Path, gpt2) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"text": "good"}\nnot json\n{"text": 1}\n{"text": ""}\n\n{"text": "end"}\n')
    with pytest.raises(ValueError, match=re.escape(f"{path}: line 2 (byte 18): not JSON")):
        encoded(path, gpt2, tmp_path / "o.npy")
    with pytest.warns(
        UserWarning,
        match=re.escape(f"skipped 2 bad record(s) (bad_records='skip'); the first: {path}: line 2"),
    ):
        got = encoded(path, gpt2, tmp_path / "o.npy", bad_records="skip")
    assert got == expected(["good", "", "end"], gpt2, eos=gpt2.eot_token)
    skip = ReadOptions(bad_records="skip")
    result = write_tokens(path, tmp_path / "o.npy", gpt2, Layout(), Marks(), skip, RunOptions())
    assert result.stats["documents"] == 3 and result.stats["skipped"] == 2
    assert result.stats["bytes"] == result.bytes == len("goodend")


def test_parquet_nulls_skipped_in_encoding(tmp_path: Path, gpt2) -> None:
    docs = shared_docs("c4")[:400]
    path = write_parquet(tmp_path / "n.parquet", [None, *docs[:200], None, *docs[200:]], row_group_size=150)
    with pytest.raises(ValueError, match=re.escape(f"{path}: row group 0, row 0: field 'text' is null")):
        encoded(path, gpt2, tmp_path / "o.npy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = encoded(path, gpt2, tmp_path / "o.npy", bad_records="skip")
    assert got == expected(docs, gpt2, eos=gpt2.eot_token)
    assert [str(w.message) for w in caught] == [
        f"skipped 2 bad record(s) (bad_records='skip'); the first: {path}: row group 0, row 0: "
        "field 'text' is null"
    ]


def test_empty_documents_are_an_eos_alone(tmp_path: Path, gpt2) -> None:
    for variant in ("jsonl", "parquet-zstd", "iterable"):
        inputs, options = make_input(variant, ["", "", "x", ""], tmp_path)
        read = ReadOptions(**options)
        result = write_tokens(inputs, tmp_path / "o.npy", gpt2, Layout(), Marks(), read, RunOptions())
        eot = gpt2.eot_token
        assert bpekit.load_tokens(tmp_path / "o.npy").tolist() == [eot, eot, gpt2.encode("x")[0], eot, eot]
        assert result.stats["documents"] == 4 and result.tokens == 5


def test_a_corrupt_zst_leaves_no_output(tmp_path: Path, gpt2) -> None:
    data = zstd_compress(jsonl_bytes(shared_docs("c4")))
    path = tmp_path / "c.jsonl.zst"
    path.write_bytes(data[: len(data) * 2 // 3])
    out = tmp_path / "o.npy"
    out.write_bytes(b"old")
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: not a valid .zst file"):
        bpekit.encode_file(path, out, gpt2)
    assert out.read_bytes() == b"old"


def test_the_dtype_holds_records_too(tmp_path: Path) -> None:
    o200k = bpekit_encoding("o200k_base")
    records, _ = make_input("jsonl", ["hello"], tmp_path)
    bpekit.encode_file(records, tmp_path / "o.npy", o200k)
    tokens = bpekit.load_tokens(tmp_path / "o.npy")
    assert tokens.dtype == np.uint32 and tokens.tolist() == [*o200k.encode("hello"), o200k.eot_token]


# --- the command line ----------------------------------------------------------------------------


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_train_reads_json_lines_and_says_what_it_read(tmp_path: Path, capsys) -> None:
    docs = shared_docs("c4")
    records, _ = make_input("jsonl.zst", docs, tmp_path)
    status, out, err = run_cli(
        capsys,
        "train",
        str(records),
        "--vocab-size",
        "500",
        "--special-token",
        EOT,
        "--out",
        str(tmp_path / "t"),
        "--quiet",
    )
    assert status == 0, err
    total = sum(len(d.encode()) for d in docs)
    assert f"on 1 file(s), {total / 1e6:,.1f} MB" in out
    assert "  1,000 documents\n" in out
    _vocab, merges = bpekit.train_bpe(joined_text_file(docs, tmp_path), 500, [EOT])
    from bpekit.formats.gpt2 import load_vocab_merges

    assert load_vocab_merges(tmp_path / "t" / "vocab.json", tmp_path / "t" / "merges.txt")[1] == merges


def test_cli_train_flags(tmp_path: Path, capsys) -> None:
    path = tmp_path / "records.txt"  # JSON lines under another name
    path.write_bytes(
        b'{"meta": {"body": "low lower"}}\n{"meta": {}}\nnot json\n{"meta": {"body": "a <|endoftext|>"}}\n'
    )
    args = [
        "train",
        str(path),
        "--vocab-size",
        "300",
        "--special-token",
        EOT,
        "--out",
        str(tmp_path / "t"),
        "--quiet",
    ]
    status, _, err = run_cli(capsys, *args, "--format", "jsonl", "--text-field", "meta.body")
    assert status == 2
    assert err == (
        f"bpekit train: error: {path}: line 2 (byte 32): no field 'meta.body' ('meta' has no fields)"
        f"{CLI_FIELD_HINT}\n"
    )
    more = ["--format", "jsonl", "--text-field", "meta.body", "--bad-records", "skip"]
    status, out, err = run_cli(capsys, *args, *more)
    assert status == 0, err
    assert (
        f"  2 documents; skipped 2 bad records (the first: {path}: line 2 (byte 32): no field 'meta.body' "
        "('meta' has no fields))\n" in out
    )
    one = tmp_path / "one.jsonl"
    one.write_bytes(b'{"meta": {"body": "a <|endoftext|>"}}\n')
    status, _, err = run_cli(
        capsys, "train", str(one), *args[2:], "--text-field", "meta.body", "--special-in-text", "error"
    )
    assert status == 2 and err.startswith(
        f"bpekit train: error: {one}: line 1 (byte 0): byte 2 of its text: "
    )
    assert "the text holds the special token" in err and err.count("\n") == 1
    # With --bad-records skip, a record holding a special token is a bad record too.
    status, out, err = run_cli(capsys, *args, *more, "--special-in-text", "error")
    assert status == 0, err
    assert "  1 document; skipped 3 bad records" in out


def test_cli_train_takes_quoted_globs(tmp_path: Path, capsys) -> None:
    docs = shared_docs("genesis")
    for i, doc in enumerate(docs):
        (tmp_path / f"part-{i}.jsonl.gz").write_bytes(gzip.compress(jsonl_bytes([doc])))
    status, out, err = run_cli(
        capsys,
        "train",
        str(tmp_path / "part-*.jsonl.gz"),
        "--vocab-size",
        "300",
        "--out",
        str(tmp_path / "t"),
        "--quiet",
    )
    assert status == 0, err
    assert f"on {len(docs)} file(s)" in out and f"  {len(docs)} documents\n" in out
    status, _, err = run_cli(
        capsys, "train", str(tmp_path / "*.parquet"), "--vocab-size", "300", "--out", str(tmp_path / "t")
    )
    assert (
        status == 2
        and err == f"bpekit train: error: {tmp_path / '*.parquet'}: no file matches this pattern\n"
    )


def test_cli_encode_says_which_eos_it_added_and_why(tmp_path: Path, capsys, gpt2) -> None:
    docs = shared_docs("c4")[:300]
    write_parquet(tmp_path / "a.parquet", docs[:100])
    (tmp_path / "b.jsonl").write_bytes(jsonl_bytes(docs[100:]))
    out = tmp_path / "o.npy"
    base = [
        "encode",
        str(tmp_path / "*.parquet"),
        str(tmp_path / "b.jsonl"),
        "-t",
        "gpt2",
        "-o",
        str(out),
        "--quiet",
    ]
    status, stdout, err = run_cli(capsys, *base)
    assert status == 0, err
    assert "encoded 2 file(s)," in stdout
    assert "  300 documents\n" in stdout
    assert "  eos '<|endoftext|>' (id 50256) after each record: the default for records\n" in stdout
    assert bpekit.load_tokens(out).tolist() == expected(docs, gpt2, eos=50256)

    status, stdout, err = run_cli(capsys, *base, "--no-eos")
    assert status == 0 and "  no eos: --no-eos\n" in stdout
    assert bpekit.load_tokens(out).tolist() == expected(docs, gpt2)

    status, stdout, err = run_cli(capsys, *base, "--eos", "\n", "--bos", EOT)
    assert status == 0, err
    assert "  eos '\\n' (id 198) after each record: --eos given\n" in stdout
    assert "  bos '<|endoftext|>' (id 50256) before each record: --bos given\n" in stdout
    assert bpekit.load_tokens(out).tolist() == expected(docs, gpt2, eos=198, bos=50256)

    status, _, err = run_cli(capsys, *base, "--eos", "two tokens")
    assert status == 2 and err == (
        "bpekit encode: error: 'two tokens', given as --eos, is not a single token of 'gpt2' "
        "(its special tokens: <|endoftext|>)\n"
    )
    with pytest.raises(SystemExit):
        main([*base, "--eos", EOT, "--no-eos"])  # argparse: not allowed together
    assert "not allowed with argument" in capsys.readouterr().err


def test_cli_encode_of_text_files_adds_nothing_by_default(tmp_path: Path, capsys, gpt2) -> None:
    src = tmp_path / "t.txt"
    src.write_text("hello<|endoftext|>world")
    status, stdout, err = run_cli(
        capsys, "encode", str(src), "-t", "gpt2", "-o", str(tmp_path / "o.npy"), "--quiet"
    )
    assert status == 0, err
    assert "  1 document\n" in stdout
    assert "  no eos/bos: text files keep the separators in their text (--eos TOKEN adds one)\n" in stdout
    status, stdout, err = run_cli(
        capsys, "encode", str(src), "-t", "gpt2", "-o", str(tmp_path / "o.npy"), "--quiet", "--eos", EOT
    )
    assert "  eos '<|endoftext|>' (id 50256) after each text file: --eos given\n" in stdout
    assert bpekit.load_tokens(tmp_path / "o.npy").tolist() == [
        *gpt2.encode(src.read_text(), allowed_special="all"),
        50256,
    ]


def test_cli_encode_skips_bad_records_and_says_so(tmp_path: Path, capsys) -> None:
    path = tmp_path / "b.jsonl"
    path.write_bytes(b'{"text": "a"}\n{"text": 5}\n{"text": "b"}\n')
    args = ["encode", str(path), "-t", "gpt2", "-o", str(tmp_path / "o.npy"), "--quiet"]
    status, _, err = run_cli(capsys, *args)
    assert (
        status == 2
        and err
        == f"bpekit encode: error: {path}: line 2 (byte 14): field 'text' is a number, not a string"
        f"{CLI_SKIP_HINT}\n"
    )
    status, stdout, err = run_cli(capsys, *args, "--bad-records", "skip")
    assert status == 0 and err == ""
    assert (
        f"  2 documents; skipped 1 bad record (the first: {path}: line 2 (byte 14): field 'text' is a number"
        in stdout
    )


@pytest.mark.parametrize("variant", ["jsonl", "jsonl.zst", "parquet-snappy"])
def test_cli_inspect_measures_the_text_of_records(tmp_path: Path, capsys, gpt2, variant: str) -> None:
    docs = shared_docs("c4")
    path, _ = make_input(variant, docs, tmp_path)
    status, out, err = run_cli(capsys, "inspect", "gpt2", "--file", str(path))
    assert status == 0, err
    nbytes = sum(len(d.encode()) for d in docs)
    ntokens = sum(len(ids) for ids in gpt2.encode_ordinary_batch(docs))
    assert (
        f"file        {path}: {nbytes:,} bytes -> {ntokens:,} tokens, {nbytes / ntokens:.3f} bytes/token"
        in out
    )
    assert "1,000 documents; bytes and tokens of their text, no eos" in out
    assert list(tmp_path.glob("**/*.npy")) == []


def test_cli_inspect_of_zst_text_and_format_flags(tmp_path: Path, capsys, gpt2) -> None:
    text = "hello world <|endoftext|> again\n" * 100
    path = tmp_path / "t.txt.zst"
    path.write_bytes(zstd_compress(text.encode()))
    status, out, err = run_cli(capsys, "inspect", "gpt2", "--file", str(path))
    assert status == 0, err
    n = len(gpt2.encode(text, allowed_special="all"))
    assert f"{len(text.encode()):,} bytes -> {n:,} tokens" in out
    status, out, err = run_cli(capsys, "inspect", "gpt2", "--file", str(path), "--special-in-text", "text")
    assert status == 0 and f"-> {len(gpt2.encode_ordinary(text)):,} tokens" in out
    nested = tmp_path / "n.data"
    nested.write_bytes(jsonl_bytes(["one doc", "two"], "meta.body"))
    status, out, err = run_cli(
        capsys, "inspect", "gpt2", "--file", str(nested), "--format", "jsonl", "--text-field", "meta.body"
    )
    assert status == 0, err
    assert (
        f"{len('one doctwo'):,} bytes -> {len(gpt2.encode('one doc')) + len(gpt2.encode('two'))} tokens"
        in out
    )
    status, out, err = run_cli(capsys, "inspect", "gpt2", "--file", str(nested), "--format", "jsonl")
    assert (
        status == 2
        and out == ""
        and err
        == f"bpekit inspect: error: {nested}: line 1 (byte 0): no field 'text' "
        f'(the record has "id", "meta"){CLI_FIELD_HINT}\n'
    )
