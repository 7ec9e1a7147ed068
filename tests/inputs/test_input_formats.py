"""Counting and training on JSON lines, Parquet, ``.gz`` / ``.zst``, iterables of ``str``
and Hugging Face datasets: each record is a document, so the results equal those of the
documents joined by ``<|endoftext|>`` in a text file, whatever the thread count or chunk
size; bad records are errors naming their place, or skipped and counted.

Encoding the same inputs is tested in ``test_input_encode.py``; how inputs are resolved,
in Python alone, in ``test_input_sources.py``.
"""

from __future__ import annotations

import gzip
import json
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from _corpus_formats import (
    EOT,
    SPECIAL,
    VARIANTS,
    joined_text_file,
    jsonl_bytes,
    make_input,
    shared_docs,
    write_parquet,
    zstd_compress,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit.training import count_with_stats


def counts_of(inputs: Any, specials: list[str] | None = None, **options: Any) -> bpekit.WordCounts:
    return bpekit.count_pretokens(inputs, SPECIAL if specials is None else specials, **options)


# --- equivalence with the joined text --------------------------------------------------


@pytest.mark.parametrize("corpus", ["c4", "genesis", "udhr"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_counts_equal_those_of_the_joined_text(tmp_path: Path, corpus: str, variant: str) -> None:
    docs = shared_docs(corpus)
    inputs, options = make_input(variant, docs, tmp_path)
    counts, stats = count_with_stats(inputs, SPECIAL, **options)
    assert counts == counts_of(joined_text_file(docs, tmp_path))
    assert stats["documents"] == len(docs) and stats["skipped"] == 0
    assert stats["bytes"] == sum(len(d.encode()) for d in docs)


@pytest.mark.parametrize("variant", ["jsonl", "jsonl.zst", "parquet-snappy", "iterable", "dataset"])
def test_training_equals_training_on_the_joined_text(tmp_path: Path, variant: str) -> None:
    docs = shared_docs("c4")
    inputs, options = make_input(variant, docs, tmp_path)
    want = bpekit.train_bpe(joined_text_file(docs, tmp_path), 1000, SPECIAL)
    assert bpekit.train_bpe(inputs, 1000, SPECIAL, **options) == want


def test_training_on_multilingual_records_equals_the_joined_text(tmp_path: Path) -> None:
    docs = shared_docs("genesis") + shared_docs("udhr")[:100]
    inputs, _ = make_input("jsonl.zst", docs, tmp_path)
    want = bpekit.train_bpe(joined_text_file(docs, tmp_path), 2000, SPECIAL, pattern="o200k")
    assert bpekit.train_bpe(inputs, 2000, SPECIAL, pattern="o200k") == want


@pytest.mark.parametrize("variant", ["jsonl", "jsonl.gz", "jsonl.zst", "parquet-zstd", "iterable", "dataset"])
def test_threads_and_chunk_sizes_change_nothing(tmp_path: Path, variant: str) -> None:
    docs = shared_docs("c4")
    want = counts_of(joined_text_file(docs, tmp_path))
    for threads in (1, 2, 3):
        for chunk_size in (1024, 0):
            inputs, options = make_input(variant, docs, tmp_path)  # an iterable is read once
            got = counts_of(inputs, num_threads=threads, chunk_size=chunk_size, **options)
            assert got == want, (threads, chunk_size)


def test_inputs_of_every_kind_mix_in_one_count(tmp_path: Path) -> None:
    docs = shared_docs("c4")
    parts = [docs[:200], docs[200:500], docs[500:700], docs[700:]]
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "a.jsonl").write_bytes(jsonl_bytes(parts[0]))
    (tmp_path / "shards" / "b.jsonl.zst").write_bytes(zstd_compress(jsonl_bytes(parts[1])))
    write_parquet(tmp_path / "c.parquet", parts[2])
    inputs = [str(tmp_path / "shards"), str(tmp_path / "*.parquet"), iter(parts[3])]
    counts, stats = count_with_stats(inputs, SPECIAL)
    assert counts == counts_of(joined_text_file(docs, tmp_path))
    assert stats["documents"] == 1000 and stats["files"] == 3


def test_a_glob_of_shards_equals_one_file(tmp_path: Path) -> None:
    docs = shared_docs("c4")
    for i in range(4):
        (tmp_path / f"shard-{i:05d}.jsonl.gz").write_bytes(
            gzip.compress(jsonl_bytes(docs[i * 250 : (i + 1) * 250]))
        )
    assert counts_of(str(tmp_path / "shard-*.jsonl.gz")) == counts_of(joined_text_file(docs, tmp_path))


def test_format_overrides_the_extension(tmp_path: Path) -> None:
    docs = shared_docs("genesis")
    (tmp_path / "records.txt").write_bytes(jsonl_bytes(docs))
    assert counts_of(tmp_path / "records.txt", format="jsonl") == counts_of(joined_text_file(docs, tmp_path))
    # A .jsonl read as text counts its JSON syntax, as bpekit did before formats.
    raw = tmp_path / "raw.jsonl"
    raw.write_bytes(jsonl_bytes(docs))
    as_text = counts_of(raw, format="text")
    assert as_text[b'{"'] > 0 and as_text == counts_of(tmp_path / "records.txt")


# --- what a record's text is ----------------------------------------------------------------

# Every JSON escape, nested fields, astral characters as surrogate pairs, CRLF line ends
# and blank lines, records holding <|endoftext|>.
ESCAPES_JSONL = (
    b'{"text": "line\\nbreak\\ttab \\"quoted\\" back\\\\slash \\/slash \\b\\f\\r end"}\r\n'
    b'{"text": "\\u00e9t\\u00c9 \\u4e2d\\u6587 \\ud83d\\ude00 \\ud834\\udd1e mixed \\u0041"}\n'
    b"\n"
    b"   \n"
    b'{"text": "raw \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80 and <|endoftext|> inside", "n": [1, {"a": null}]}\n'
    b'{"text": ""}\n'
    b'{"n": 1, "text": "<|endoftext|>"}'
)
ESCAPES_DOCS = [
    'line\nbreak\ttab "quoted" back\\slash /slash \b\f\r end',
    "\u00e9t\u00c9 \u4e2d\u6587 \U0001f600 \U0001d11e mixed A",
    "raw été 😀 and <|endoftext|> inside",
    "",
    "<|endoftext|>",
]


def test_json_escapes_are_decoded_and_nothing_else_changes(tmp_path: Path) -> None:
    path = tmp_path / "escapes.jsonl"
    path.write_bytes(ESCAPES_JSONL)
    for special_in_text in ("special", "text"):
        counts, stats = count_with_stats(path, SPECIAL, special_in_text=special_in_text)
        want = counts_of(iter(ESCAPES_DOCS), special_in_text=special_in_text)
        assert counts == want, special_in_text
        assert stats["documents"] == 5  # blank lines are no records; the empty one is
    assert counts_of(path, special_in_text="special") == counts_of(joined_text_file(ESCAPES_DOCS, tmp_path))


def test_special_tokens_in_records_are_text_by_default(tmp_path: Path) -> None:
    docs = ["a<|endoftext|>b", "<|endoftext|>", "plain text", "x <|endoftext|>"]
    inputs, _ = make_input("jsonl", docs, tmp_path)
    # As text: the same counts as the documents apart with no special token in them.
    sep = "<|doc|>"
    apart = tmp_path / "apart.txt"
    apart.write_text(sep.join(docs))
    as_text = counts_of(apart, [sep]).to_dict()
    assert counts_of(inputs).to_dict() == as_text
    assert counts_of(inputs, special_in_text="text").to_dict() == as_text
    assert (as_text[b"<|"], as_text[b" <|"], as_text[b"endoftext"]) == (2, 1, 3)
    # As special tokens: the joined text's counts.
    assert counts_of(inputs, special_in_text="special") == counts_of(joined_text_file(docs, tmp_path))
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{inputs}: line 1 (byte 0): byte 1 of its text: the text holds the special token "
            '"<|endoftext|>" (special_in_text="error"; pass "text" to read it as text'
        ),
    ):
        counts_of(inputs, special_in_text="error")
    # With bad_records="skip", the records holding one are bad records: left out, counted.
    counts, stats = count_with_stats(inputs, SPECIAL, special_in_text="error", bad_records="skip")
    assert counts == counts_of(iter(["plain text"]))
    assert (stats["documents"], stats["skipped"]) == (1, 3)


def test_special_in_text_applies_to_text_files_too(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("one<|endoftext|>two three<|endoftext|>")
    assert counts_of(path, special_in_text="text").to_dict() == counts_of(path, []).to_dict()
    assert counts_of(path, special_in_text="special") == counts_of(path)
    with pytest.raises(
        ValueError, match=re.escape(f'{path}: byte 3: the text holds the special token "<|endoftext|>"')
    ):
        counts_of(path, special_in_text="error")


def test_special_in_text_error_names_the_item_of_an_iterable() -> None:
    with pytest.raises(
        ValueError, match=re.escape("<list_iterator>: item 1: byte 4 of its text: the text holds")
    ):
        counts_of(iter(["fine", "not <|endoftext|> fine"]), special_in_text="error")


# Documents of any characters (lone surrogates aside, which UTF-8 cannot hold), JSON's
# escaped ones often, and special tokens whole or cut.
json_text = st.lists(
    st.one_of(
        st.text(st.characters(codec="utf-8"), max_size=8),
        st.sampled_from(["\n", "\r\n", "\t", '"', "\\", "/", "\b", "\f", "\x00", "\u2028", "😀", " ", "é"]),
        st.sampled_from([EOT, "<|endof", "text|>", "<|"]),
    ),
    max_size=8,
).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(json_text, max_size=12), ensure_ascii=st.booleans())
def test_any_documents_through_json_lines_count_as_the_joined_text(
    docs: list[str], ensure_ascii: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "docs.jsonl"
        path.write_bytes(jsonl_bytes(docs, ensure_ascii=ensure_ascii))
        want = counts_of(joined_text_file(docs, Path(folder)))
        assert counts_of(path, special_in_text="special", chunk_size=64) == want
        assert counts_of(iter(docs), special_in_text="special") == want
        counts, stats = count_with_stats(path, SPECIAL, special_in_text="special")
        assert stats["documents"] == len(docs) and counts == want


# --- bad records ----------------------------------------------------------------------------


def bad_jsonl(tmp_path: Path, name: str = "bad.jsonl") -> Path:
    """Good records 1, 7 and 9; a bad one on each other line, each of a different kind."""
    path = tmp_path / name
    path.write_bytes(
        b'{"text": "good one"}\n'  # line 1, byte 0
        b"not json\n"  # line 2, byte 21
        b'{"body": "no text"}\n'  # line 3, byte 30
        b'{"text": 42}\n'  # line 4, byte 50
        b'{"text": "bad \xff byte"}\n'  # line 5, byte 63; the bad byte at 77
        b'{"text": "cut\n'  # line 6, byte 85
        b'{"text": "good two"}\n'  # line 7, byte 99
        b'{"text": ["a list"]}\n'  # line 8, byte 120
        b'{"text": "good three"}'  # line 9, byte 141, no newline at the end
    )
    return path


BAD_LINES = [
    r"line 2 \(byte 22\): not JSON \(",
    r"line 3 \(byte 30\): no field 'text'",
    r"line 4 \(byte 50\): field 'text' is a number, not a string",
    r"line 5 \(byte 77\): invalid UTF-8",
    r"line 6 \(byte \d+\): not JSON \(",
    r"line 8 \(byte 120\): field 'text' is an array, not a string",
]
GOOD = ["good one", "good two", "good three"]


FIRST = b'{"text": "good"}\n'  # 17 bytes: the bad line starts at byte 17


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json", "not JSON ("),
        (b'{"text": "cut', "not JSON ("),
        (b'["text"]', "not a JSON object but an array"),
        (b'{"body": "no text"}', "no field 'text'"),
        (b'{"text": 42}', "field 'text' is a number, not a string"),
        (b'{"text": null}', "field 'text' is null, not a string"),
        (b'{"text": true}', "field 'text' is a boolean, not a string"),
        (b'{"text": ["a"]}', "field 'text' is an array, not a string"),
        (b'{"text": {"a": "b"}}', "field 'text' is an object, not a string"),
    ],
)
def test_each_bad_record_is_an_error_naming_file_line_and_byte(
    tmp_path: Path, line: bytes, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(FIRST + line + b"\n" + FIRST)
    # A record's byte is where it starts, or where its JSON syntax fails.
    byte = r"(1[89]|2\d|30)" if message.startswith("not JSON") else "17"
    with pytest.raises(
        ValueError, match=f"^{re.escape(f'{path}: line 2 (byte ')}{byte}\\): {re.escape(message)}"
    ):
        counts_of(path)
    counts, stats = count_with_stats(path, SPECIAL, bad_records="skip")
    assert counts == counts_of(iter(["good", "good"])) and stats["skipped"] == 1


def test_invalid_utf8_is_named_at_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(FIRST + b'{"text": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=f"^{re.escape(f'{path}: line 2 (byte 30): invalid UTF-8')}"):
        counts_of(path)


def test_bad_records_in_one_file_are_named_in_order(tmp_path: Path) -> None:
    path = bad_jsonl(tmp_path)
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: {BAD_LINES[0]}"):
        counts_of(path)
    counts, stats = count_with_stats(path, SPECIAL, bad_records="skip")
    assert counts == counts_of(iter(GOOD))
    assert stats["documents"] == 3 and stats["skipped"] == 6
    assert len(stats["skipped_examples"]) == 5
    for example, pattern in zip(stats["skipped_examples"], BAD_LINES, strict=False):
        assert re.fullmatch(f"{re.escape(str(path))}: {pattern}.*", example), example


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_line_numbers_hold_deep_in_a_file_cut_into_chunks(
    tmp_path: Path, compressed: bool, threads: int
) -> None:
    """Lines are numbered from the file's start in every chunk and block, and naming
    each of many bad lines stays linear (the file's newlines are counted once, not
    once per bad line)."""
    path = tmp_path / ("many.jsonl.zst" if compressed else "many.jsonl")

    def write(lines: list[str]) -> None:
        data = ("\n".join(lines) + "\n").encode()
        path.write_bytes(zstd_compress(data) if compressed else data)

    lines = [json.dumps({"text": f"doc {i}"}) if i % 3 else f"bad {i}" for i in range(30_000)]
    write(lines)
    _, stats = count_with_stats(path, SPECIAL, bad_records="skip", chunk_size=4096, num_threads=threads)
    assert stats["skipped"] == 10_000 and stats["documents"] == 20_000
    # Only line 24,001 bad: named with its number and byte, whichever chunk holds it.
    lines = [json.dumps({"text": f"doc {i}"}) for i in range(30_000)]
    lines[24_000] = "bad"
    write(lines)
    start = len(("\n".join(lines[:24_000]) + "\n").encode())
    with pytest.raises(ValueError, match=f"^{re.escape(f'{path}: line 24001 (byte {start}): not JSON')}"):
        counts_of(path, chunk_size=4096, num_threads=threads)


def test_skipped_records_are_a_warning_with_the_count_and_the_first(tmp_path: Path) -> None:
    path = bad_jsonl(tmp_path)
    with pytest.warns(
        UserWarning,
        match=re.escape(f"skipped 6 bad record(s) (bad_records='skip'); the first: {path}: line 2"),
    ):
        bpekit.count_pretokens(path, bad_records="skip")
    with pytest.warns(UserWarning, match="skipped 6 bad record"):
        bpekit.train_bpe(path, 300, bad_records="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bpekit.count_pretokens(iter(GOOD), bad_records="skip")  # nothing skipped: no warning


def test_invalid_utf8_is_named_at_its_byte_in_the_decompressed_file(tmp_path: Path) -> None:
    data = bad_jsonl(tmp_path).read_bytes()
    path = tmp_path / "bad.jsonl.zst"
    path.write_bytes(zstd_compress(data))
    _, stats = count_with_stats(path, SPECIAL, bad_records="skip")
    assert f"{path}: line 5 (byte {data.index(0xFF)}): invalid UTF-8" in stats["skipped_examples"]


@pytest.mark.parametrize("errors", ["replace", "ignore"])
def test_invalid_utf8_in_records_decodes_as_bytes_decode_on_request(tmp_path: Path, errors: str) -> None:
    path = tmp_path / "r.jsonl"
    raw = [b"caf\xe9 au lait", b"ok", b"\xf0\x9f\x98 cut emoji"]
    path.write_bytes(b"".join(b'{"text": "' + r + b'"}\n' for r in raw))
    want = [r.decode("utf-8", errors) for r in raw]
    assert counts_of(path, errors=errors) == counts_of(iter(want))


def test_a_non_str_item_of_an_iterable_is_a_bad_record() -> None:
    with pytest.raises(ValueError, match=re.escape("<list_iterator>: item 2: not a str but int")):
        counts_of(iter(["a", "b", 5, "c"]))
    with pytest.raises(ValueError, match=re.escape("<generator>: item 0: not a str but bytes")):
        counts_of(x for x in [b"bytes", "b"])
    counts, stats = count_with_stats(iter(["a", None, "b", 5]), SPECIAL, bad_records="skip")
    assert counts == counts_of(iter(["a", "b"]))
    assert stats["skipped_examples"] == [
        "<list_iterator>: item 1: not a str but NoneType",
        "<list_iterator>: item 3: not a str but int",
    ]


def test_an_exception_of_an_iterable_reaches_the_caller_unchanged() -> None:
    class Boom(Exception):
        pass

    def docs():
        yield "a"
        raise Boom("from the iterable")

    with pytest.raises(Boom, match="from the iterable"):
        counts_of(docs())


def test_parquet_nulls_are_errors_or_skipped_and_counted(tmp_path: Path) -> None:
    docs = shared_docs("c4")[:700]
    with_nulls = [*docs[:350], None, *docs[350:], None]
    path = write_parquet(tmp_path / "n.parquet", with_nulls, row_group_size=300)
    with pytest.raises(
        ValueError, match=f"^{re.escape(str(path))}: row group 1, row 50: field 'text' is null$"
    ):
        counts_of(path)
    with pytest.warns(UserWarning, match="skipped 2 bad record"):
        bpekit.count_pretokens(path, bad_records="skip")
    counts, stats = count_with_stats(path, SPECIAL, bad_records="skip")
    assert counts == counts_of(iter(docs))
    assert stats["skipped"] == 2 and stats["documents"] == 700
    assert stats["skipped_examples"] == [
        f"{path}: row group 1, row 50: field 'text' is null",
        f"{path}: row group 2, row 101: field 'text' is null",
    ]


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".txt.gz", ".jsonl.zst", ".txt.zst"])
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_corrupt_compressed_file_is_an_error_naming_it(tmp_path: Path, suffix: str, damage: str) -> None:
    data = jsonl_bytes(shared_docs("c4")[:200])
    packed = gzip.compress(data) if suffix.endswith(".gz") else zstd_compress(data)
    path = tmp_path / f"docs{suffix}"
    if damage == "garbage":
        path.write_bytes(b"this was never compressed\n" * 10)
    else:
        path.write_bytes(packed[: len(packed) // 2])
    kind = suffix.rsplit(".", 1)[1]
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: not a valid .{kind} file"):
        counts_of(path)


def test_a_corrupt_parquet_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "docs.parquet"
    path.write_bytes(jsonl_bytes(["not parquet"]))
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: not a valid Parquet file"):
        counts_of(path)
    good = write_parquet(tmp_path / "good.parquet", shared_docs("c4"), "snappy", 250)
    data = bytearray(good.read_bytes())
    data[len(data) // 3 : len(data) // 3 + 200] = bytes(200)
    good.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"^{re.escape(str(good))}: not a valid Parquet file: row group"):
        counts_of(good)


def test_empty_documents_are_documents(tmp_path: Path) -> None:
    docs = ["", "a", "", "", "b c", ""]
    inputs, _ = make_input("jsonl", docs, tmp_path)
    counts, stats = count_with_stats(inputs, SPECIAL)
    assert stats["documents"] == 6 and counts == counts_of(iter(["a", "b c"]))
    _, stats = count_with_stats(write_parquet(tmp_path / "e.parquet", docs), SPECIAL)
    assert stats["documents"] == 6
    _, stats = count_with_stats(iter(docs), SPECIAL)
    assert stats["documents"] == 6


def test_missing_field_in_nested_objects_is_named(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    path.write_bytes(b'{"meta": {"body": "x"}}\n{"meta": {"title": "y"}}\n{"meta": "flat"}\n')
    with pytest.warns(UserWarning, match="skipped 2 bad record"):
        assert counts_of(path, text_field="meta.body", bad_records="skip") == counts_of(iter(["x"]))
    with pytest.raises(ValueError, match=re.escape(f"{path}: line 2 (byte 24): no field 'meta.body'")):
        counts_of(path, text_field="meta.body")


def test_the_stats_count_documents_and_text_bytes(tmp_path: Path) -> None:
    docs = shared_docs("genesis")
    text = tmp_path / "t.txt"
    text.write_text("text file")
    _, stats = count_with_stats([text, *[make_input("jsonl", docs, tmp_path)[0]]], SPECIAL)
    assert stats == {
        "documents": len(docs) + 1,
        "skipped": 0,
        "skipped_examples": [],
        "bytes": len("text file") + sum(len(d.encode()) for d in docs),
        "files": 2,
    }


def test_json_lines_options_are_checked_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "missing.jsonl"
    for options, message in [
        ({"special_in_text": "yes"}, 'special_in_text must be "special", "text", "error" or None'),
        ({"bad_records": "drop"}, 'bad_records must be "error" or "skip", not "drop"'),
        ({"format": "csv"}, 'format must be "text", "jsonl", "parquet" or None'),
        ({"text_field": "a..b"}, "text_field 'a..b' has an empty part"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            bpekit.count_pretokens(path, **options)
        with pytest.raises(ValueError, match=re.escape(message)):
            bpekit.train_bpe(path, 300, **options)


def test_records_keep_json_field_order_and_unicode_keys(tmp_path: Path) -> None:
    path = tmp_path / "k.jsonl"
    rows = [{"id": 1, "tëxt": "accented key", "text": "plain key"}, {"text": "second", "tëxt": "x"}]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    assert counts_of(path) == counts_of(iter(["plain key", "second"]))
    assert counts_of(path, text_field="tëxt") == counts_of(iter(["accented key", "x"]))
