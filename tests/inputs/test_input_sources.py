"""How inputs are resolved into the native reader's sources, in Python alone: paths,
directories, globs, formats, iterables, Parquet files and Hugging Face datasets read as
Arrow batches (zero-copy, nulls raised or skipped), and the options' checks. What the
core makes of the sources is tested in ``test_input_formats.py``."""

from __future__ import annotations

import gzip
import itertools
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from bpekit import sources
from bpekit.sources import file_format, resolve

pa = pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) is not installed")
pq = pytest.importorskip("pyarrow.parquet")
np = pytest.importorskip("numpy")


def kinds(inputs: Any, **options: Any) -> list[tuple[str, str]]:
    return [
        (s[0], Path(s[1]).name if s[0] in ("text", "jsonl") else s[1])
        for s in resolve(inputs, **options).sources
    ]


def texts(source: tuple) -> list[str]:
    """The documents of an ``("arrow", ...)`` or ``("str", ...)`` source, as the core reads them."""
    kind, _, it = source
    if kind == "str":
        return list(it)
    out = []
    for data, offsets, *_ in it:
        raw = bytes(data)
        assert offsets.ndim == 1 and offsets.flags.c_contiguous and offsets.dtype in (np.int32, np.int64)
        out.extend(raw[offsets[i] : offsets[i + 1]].decode() for i in range(len(offsets) - 1))
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """a/1.jsonl, a/2.txt.gz, a/.hidden.txt, a/sub/3.ndjson.zst, b.parquet-like names, c.txt."""
    (tmp_path / "a" / "sub").mkdir(parents=True)
    (tmp_path / "a" / "1.jsonl").write_text('{"text": "x"}\n')
    (tmp_path / "a" / "2.txt.gz").write_bytes(gzip.compress(b"two"))
    (tmp_path / "a" / ".hidden.txt").write_text("hidden")
    (tmp_path / "a" / "sub" / "3.ndjson.zst").write_bytes(b"")
    (tmp_path / "c.txt").write_text("c")
    return tmp_path


# --- paths, directories, globs ------------------------------------------------------------


def test_formats_by_extension() -> None:
    cases = {
        "a.txt": "text",
        "a": "text",
        "notes.md.gz": "text",
        "a.jsonl": "jsonl",
        "a.ndjson.gz": "jsonl",
        "A.JSON.ZST": "jsonl",
        "part-0.parquet": "parquet",
        "a.jsonl.bz2": "text",  # only .gz and .zst are taken off
    }
    assert {name: file_format(Path(name), None) for name in cases} == cases
    assert file_format(Path("a.txt"), "jsonl") == "jsonl"
    assert file_format(Path("a.jsonl"), "text") == "text"


@pytest.mark.parametrize("name", ["part-0.parquet.gz", "part-0.parquet.zst"])
def test_a_compressed_parquet_file_is_an_error(name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{name}: a Parquet file cannot be read through .")):
        file_format(Path(name), None)
    with pytest.raises(ValueError, match="Parquet compresses its pages inside"):
        file_format(Path("x.gz"), "parquet")


def test_directories_are_their_files_sorted_hidden_skipped(tree: Path) -> None:
    assert kinds(tree / "a") == [("jsonl", "1.jsonl"), ("text", "2.txt.gz"), ("jsonl", "3.ndjson.zst")]


def test_globs_directories_and_files_mix(tree: Path) -> None:
    got = kinds(
        [str(tree / "c.txt"), str(tree / "**" / "*.jsonl"), tree / "a" / "sub", str(tree / "a" / "?.*")]
    )
    assert got == [
        ("text", "c.txt"),
        ("jsonl", "1.jsonl"),
        ("jsonl", "3.ndjson.zst"),
        ("jsonl", "1.jsonl"),
        ("text", "2.txt.gz"),
    ]
    # A glob's matches are sorted files; ** goes into folders; hidden files are not matched.
    assert kinds(str(tree / "**" / "*")) == [
        ("jsonl", "1.jsonl"),
        ("text", "2.txt.gz"),
        ("jsonl", "3.ndjson.zst"),
        ("text", "c.txt"),
    ]
    with pytest.raises(FileNotFoundError, match="no file matches this pattern"):
        resolve(str(tree / "a*"))  # a folder alone
    assert resolve(str(tree / "a" / "*")).files == 2  # a/sub is a folder


def test_a_glob_that_matches_nothing_is_file_not_found(tree: Path) -> None:
    pattern = str(tree / "*.parquet")
    with pytest.raises(FileNotFoundError, match=re.escape(f"{pattern}: no file matches this pattern")):
        resolve([tree / "c.txt", pattern])


def test_an_existing_path_with_glob_characters_is_that_path(tmp_path: Path) -> None:
    odd = tmp_path / "data[1].txt"
    odd.write_text("x")
    (tmp_path / "data1.txt").write_text("y")  # what the pattern data[1].txt would match
    assert kinds(str(odd)) == [("text", "data[1].txt")]


def test_format_override_applies_to_every_file(tree: Path) -> None:
    assert kinds(tree / "a", format="text") == [
        ("text", "1.jsonl"),
        ("text", "2.txt.gz"),
        ("text", "3.ndjson.zst"),
    ]
    assert [s[2] for s in resolve(tree / "c.txt", format="jsonl", text_field="meta.body").sources] == [
        "meta.body"
    ]


def test_a_missing_file_in_a_list_of_documents_says_how_to_pass_documents(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=re.escape("pass iter(texts)")):
        resolve(["the first document", "the second"])
    with pytest.raises(FileNotFoundError, match=r"nope\.txt: no such file or directory$"):
        resolve([tmp_path / "nope.txt"])


# --- iterables ------------------------------------------------------------------------------


def test_iterables_are_documents_read_lazily(tmp_path: Path) -> None:
    pulled = []

    def docs():
        for d in ("a", "b", "c"):
            pulled.append(d)
            yield d

    out = resolve(docs())
    assert out.records and not out.text_files and out.files == 0
    (kind, name, it) = out.sources[0]
    assert (kind, name) == ("str", "<generator>")
    assert pulled == ["a"]  # the first item told documents from paths; nothing more is read
    assert list(it) == ["a", "b", "c"]
    assert texts(resolve(map(str.upper, ["x", "y"])).sources[0]) == ["X", "Y"]
    assert texts(resolve(iter([])).sources[0]) == []


def test_an_iterable_whose_first_item_is_not_a_str_goes_to_the_core_whole() -> None:
    # The core reports "item 0: not a str but NoneType": nothing may be dropped here.
    assert texts(resolve(iter([None, "b"])).sources[0]) == [None, "b"]


def test_an_iterable_of_path_objects_is_paths(tree: Path) -> None:
    assert kinds(sorted((tree / "a").glob("*.jsonl"))) == [("jsonl", "1.jsonl")]
    assert kinds((tree / "a").glob("*.jsonl")) == [("jsonl", "1.jsonl")]
    out = resolve([iter(["a document"]), (tree / "a").glob("*.txt.gz")])
    assert out.records and out.text_files and out.files == 1
    # bytes are no str: a document the core refuses, not a path.
    assert kinds(iter([bytes(tree / "c.txt")])) == [("str", "<list_iterator>")]


def test_lists_mix_paths_and_sources(tree: Path) -> None:
    out = resolve([tree / "c.txt", iter(["doc"]), str(tree / "a" / "*.jsonl")])
    assert [s[0] for s in out.sources] == ["text", "str", "jsonl"]
    assert out.records and out.text_files and out.files == 2


@pytest.mark.parametrize(
    ("inputs", "error", "message"),
    [
        (
            5,
            TypeError,
            "inputs must be a path (str, bytes or os.PathLike), an iterable of documents (str) or a list "
            "of paths, not int: 5",
        ),
        (["a.txt", 5], TypeError, "an input must be a path (str, bytes or os.PathLike), not int: 5"),
        (
            [["doc one", "doc two"]],
            TypeError,
            "not a list: to read a list of strings as documents, pass iter(texts)",
        ),
        ({"a.txt", "b.txt"}, TypeError, "an input may not be a set, which has no order to read in"),
        ({"text": "x"}, TypeError, "an input may not be a dict"),
        ([], ValueError, "no inputs given"),
    ],
)
def test_what_is_no_input_is_one_clear_error(inputs: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        resolve(inputs)


# --- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "error", "message"),
    [
        (
            "format",
            "csv",
            ValueError,
            'format must be "text", "jsonl", "parquet" or None (by extension), not "csv"',
        ),
        ("format", 1, TypeError, "format must be"),
        ("text_field", "", ValueError, "text_field '' has an empty part"),
        ("text_field", "a.", ValueError, "text_field 'a.' has an empty part"),
        ("text_field", None, TypeError, "text_field must be a str (a field name or a dotted path), not None"),
        ("bad_records", "ignore", ValueError, 'bad_records must be "error" or "skip", not "ignore"'),
    ],
)
def test_options_are_checked_up_front(
    tmp_path: Path, option: str, value: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        resolve(tmp_path / "missing.txt", **{option: value})


def test_special_in_text_is_checked() -> None:
    assert sources.check_special_in_text(None) is None
    assert sources.check_special_in_text("error") == "error"
    with pytest.raises(
        ValueError, match=re.escape('special_in_text must be "special", "text", "error" or None')
    ):
        sources.check_special_in_text("ordinary")


def test_skipped_records_are_a_warning_naming_the_first() -> None:
    stats = {
        "documents": 5,
        "skipped": 3,
        "skipped_examples": ["a.jsonl: line 2 (byte 9): not JSON"],
        "bytes": 10,
    }
    with pytest.warns(
        UserWarning,
        match=re.escape("skipped 3 bad record(s) (bad_records='skip'); the first: a.jsonl: line 2"),
    ):
        sources.warn_skipped(stats)


# --- Arrow batches ----------------------------------------------------------------------------


def bad_rows(batches: list) -> list:
    """The rows without text that the batches hand to the core, which counts them."""
    return [bad for batch in batches for bad in (batch[4] if len(batch) > 4 else [])]


def batches_of(
    arr: Any, bad_records: str = "error", name: str = "x", row_group: int | None = None
) -> tuple[list, list]:
    from bpekit._arrow import string_batches

    batches = list(string_batches(arr, name, row_group, 10, "text", bad_records))
    return batches, bad_rows(batches)


def test_string_batches_are_zero_copy_views_honouring_the_array_offset() -> None:
    whole = pa.array(["zero", "one", "two", "three"])
    arr = whole.slice(1, 2)
    (batch,), _ = batches_of(arr)
    data, offsets, row_group, first_row = batch
    assert (row_group, first_row) == (None, 10)
    assert offsets.tolist() == [4, 7, 10] and offsets.dtype == np.int32
    assert np.shares_memory(offsets, np.frombuffer(whole.buffers()[1], dtype=np.int32))
    assert memoryview(data).format == "B" and bytes(data) == b"zeroonetwothree"
    assert texts(("arrow", "x", iter([batch]))) == ["one", "two"]


@pytest.mark.parametrize("type_", ["large_string", "string_view", "dictionary"])
def test_other_string_types_are_read(type_: str) -> None:
    values = ["a", "", "ccc", "é"]
    if type_ == "dictionary":
        arr = pa.array(values).dictionary_encode()
    else:
        if not hasattr(pa, type_):
            pytest.skip(f"this pyarrow has no {type_}")
        arr = pa.array(values, type=getattr(pa, type_)())
    batches, _ = batches_of(arr)
    assert texts(("arrow", "x", iter(batches))) == values


def test_a_column_that_is_not_strings_is_an_error() -> None:
    with pytest.raises(
        ValueError, match=re.escape("x: column 'text' holds int64, not strings; cast it to string first")
    ):
        batches_of(pa.array([1, 2]))


def test_nulls_are_an_error_naming_the_row() -> None:
    with pytest.raises(ValueError, match=re.escape("p.parquet: row group 3, row 12: field 'text' is null")):
        batches_of(pa.array(["a", "b", None, None]), name="p.parquet", row_group=3)
    with pytest.raises(ValueError, match=re.escape("x: row 10: field 'text' is null")):
        batches_of(pa.nulls(2))


def test_skipped_nulls_keep_the_other_rows_and_their_numbers() -> None:
    arr = pa.array([None, "a", "b", None, None, "c", None])
    batches, bad = batches_of(arr, "skip", row_group=1)
    assert [(b[2], b[3], b[1].tolist()) for b in batches] == [(1, 11, [0, 1, 2]), (1, 15, [2, 3])]
    assert texts(("arrow", "x", iter(batches))) == ["a", "b", "c"]
    assert bad == [(row, "field 'text' is null") for row in (10, 13, 14, 16)]
    # A column of nulls only is one batch of no documents, its rows for the core to count.
    batches, bad = batches_of(pa.nulls(3, pa.string()), "skip")
    assert [(bytes(b[0]), b[1].tolist(), b[3]) for b in batches] == [(b"", [0], 13)]
    assert bad == [(row, "field 'text' is null") for row in (10, 11, 12)]


# --- Parquet ------------------------------------------------------------------------------------


def write_parquet(path: Path, table: Any, **options: Any) -> Path:
    pq.write_table(table, path, **options)
    return path


def parquet_texts(path: Path, text_field: str = "text", bad_records: str = "error") -> tuple[list[str], list]:
    out = resolve(path, text_field=text_field, bad_records=bad_records)
    (source,) = out.sources
    assert source[:2] == ("arrow", str(path))
    batches = list(source[2])
    bad = [(b[2], *row) for b in batches for row in bad_rows([b])]
    return texts(("arrow", str(path), iter(batches))), bad


@pytest.mark.parametrize("compression", ["zstd", "snappy", "none"])
def test_parquet_row_groups_are_read_in_order(tmp_path: Path, compression: str) -> None:
    docs = [f"document {i} " * (i % 7) for i in range(1000)]
    table = pa.table({"id": list(range(1000)), "text": docs})
    path = write_parquet(tmp_path / "p.parquet", table, row_group_size=300, compression=compression)
    assert pq.ParquetFile(path).metadata.num_row_groups == 4
    got, _ = parquet_texts(path)
    assert got == docs


def test_parquet_batches_are_bounded_and_number_rows_within_their_row_group(
    tmp_path: Path, monkeypatch
) -> None:
    from bpekit import _arrow

    monkeypatch.setattr(_arrow, "BATCH_BYTES", 1)  # the least: 64 rows a batch
    docs = [f"row {i}" for i in range(500)]
    path = write_parquet(tmp_path / "p.parquet", pa.table({"text": docs}), row_group_size=200)
    (source,) = resolve(path).sources
    seen = [(rg, first, len(offsets) - 1) for _, offsets, rg, first in source[2]]
    assert seen[:4] == [(0, 0, 64), (0, 64, 64), (0, 128, 64), (0, 192, 8)]
    assert seen[4] == (1, 0, 64) and sum(n for *_, n in seen) == 500


def test_parquet_nested_fields_and_large_strings(tmp_path: Path) -> None:
    meta = pa.array(
        [{"body": "one", "n": 1}, None, {"body": None, "n": 3}, {"body": "four", "n": 4}],
        type=pa.struct([("body", pa.large_string()), ("n", pa.int64())]),
    )
    path = write_parquet(
        tmp_path / "n.parquet", pa.table({"meta": meta, "text": ["a", "b", "c", "d"]}), row_group_size=2
    )
    with pytest.raises(ValueError, match=re.escape(f"{path}: row group 0, row 1: field 'meta.body' is null")):
        parquet_texts(path, "meta.body")
    got, bad = parquet_texts(path, "meta.body", "skip")
    assert got == ["one", "four"]
    assert bad == [(0, 1, "field 'meta.body' is null"), (1, 0, "field 'meta.body' is null")]


def test_parquet_without_the_column_names_the_columns_it_has(tmp_path: Path) -> None:
    table = pa.table({"id": [1], "content": ["x"], "meta": pa.array([{"url": "u"}])})
    path = write_parquet(tmp_path / "p.parquet", table)
    with pytest.raises(
        ValueError, match=re.escape(f"{path}: no column 'text' (its columns: id, content, meta.url)")
    ):
        resolve(path)
    with pytest.raises(ValueError, match=re.escape(f"{path}: no column 'meta.body' (its columns:")):
        resolve(path, text_field="meta.body")
    with pytest.raises(ValueError, match=re.escape(f"{path}: no column 'id.x'")):
        resolve(path, text_field="id.x")
    assert parquet_texts(path, "content")[0] == ["x"]


def test_a_file_that_is_not_parquet_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    path.write_text('{"text": "I am JSON"}\n')
    with pytest.raises(ValueError, match=re.escape(f"{path}: not a valid Parquet file (")):
        resolve(path)


def test_a_parquet_file_damaged_inside_is_an_error_naming_it(tmp_path: Path) -> None:
    docs = [f"document number {i} " * 20 for i in range(2000)]
    path = write_parquet(
        tmp_path / "p.parquet", pa.table({"text": docs}), row_group_size=500, compression="snappy"
    )
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)  # inside the pages; the footer stays whole
    assert middle + 64 < len(data) - footer
    path.write_bytes(bytes(data))
    (source,) = resolve(path).sources  # the footer reads
    with pytest.raises(ValueError, match=re.escape(f"{path}: not a valid Parquet file: row group ")):
        texts(source)


def test_parquet_without_pyarrow_says_what_to_install(tmp_path: Path, monkeypatch) -> None:
    path = write_parquet(tmp_path / "p.parquet", pa.table({"text": ["x"]}))
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    with pytest.raises(ImportError, match=re.escape("pip install 'bpekit[parquet]'")):
        resolve(path)


# --- Hugging Face datasets ------------------------------------------------------------------------


@pytest.fixture
def hf() -> Any:
    return pytest.importorskip("datasets", reason="Hugging Face datasets is not installed")


DOCS = [f"doc {i}: " + "word " * (i % 5) for i in range(10)]


def test_a_dataset_is_read_as_arrow_batches_of_its_column(hf, monkeypatch) -> None:
    from bpekit import _arrow

    monkeypatch.setattr(_arrow, "DATASET_BATCH_ROWS", 3)
    ds = hf.Dataset.from_dict({"id": list(range(10)), "text": DOCS})
    (source,) = resolve(ds).sources
    assert source[:2] == ("arrow", "dataset 'text' column")
    batches = list(source[2])
    assert [b[3] for b in batches] == [0, 3, 6, 9] and all(b[2] is None for b in batches)
    assert texts(("arrow", "", iter(batches))) == DOCS


def test_a_dataset_view_is_read_as_it_iterates(hf) -> None:
    ds = hf.Dataset.from_dict({"text": DOCS})
    view = ds.shuffle(seed=3).select(range(2, 8))
    assert texts(resolve(view).sources[0]) == list(view["text"])
    assert texts(resolve(view.filter(lambda r: r["text"].endswith(" "))).sources[0]) == [
        d for d in view["text"] if d.endswith(" ")
    ]


def test_an_iterable_dataset_is_read_lazily_through_its_map(hf) -> None:
    ids = hf.Dataset.from_dict({"text": DOCS}).to_iterable_dataset(num_shards=3)
    mapped = ids.map(lambda r: {"text": r["text"].upper()})
    assert texts(resolve(mapped).sources[0]) == [d.upper() for d in DOCS]


def test_columns_are_read_through_their_dataset(hf) -> None:
    ds = hf.Dataset.from_dict({"text": DOCS, "meta": [{"body": d[::-1]} for d in DOCS]})
    for column, want in ((ds["text"], DOCS), (ds["meta"]["body"], [d[::-1] for d in DOCS])):
        (source,) = resolve(column).sources
        assert source[0] == "arrow" and texts(source) == want
    (source,) = resolve(ds.to_iterable_dataset()["meta"]["body"]).sources
    assert source[:2] == ("arrow", "dataset 'meta.body' column")
    assert texts(source) == [d[::-1] for d in DOCS]


def test_dataset_nulls_and_missing_columns(hf) -> None:
    ds = hf.Dataset.from_dict({"text": ["a", None, "c"], "n": [1, 2, 3]})
    with pytest.raises(ValueError, match=re.escape("dataset 'text' column: row 1: field 'text' is null")):
        texts(resolve(ds).sources[0])
    batches = list(resolve(ds, bad_records="skip").sources[0][2])
    assert texts(("arrow", "x", iter(batches))) == ["a", "c"]
    assert bad_rows(batches) == [(1, "field 'text' is null")]
    with pytest.raises(
        ValueError, match=re.escape("dataset 'body' column: no column 'body' (its columns: text, n)")
    ):
        resolve(ds, text_field="body")
    with pytest.raises(ValueError, match=re.escape("column 'n' holds int64, not strings")):
        texts(resolve(ds, text_field="n").sources[0])


def test_an_iterable_dataset_of_unknown_columns_is_checked_as_it_is_read(hf) -> None:
    def rows():
        yield {"body": "a", "n": 1}

    ids = hf.IterableDataset.from_generator(rows)
    assert ids.column_names is None
    assert texts(resolve(ids, text_field="body").sources[0]) == ["a"]
    with pytest.raises(
        ValueError, match=re.escape("dataset 'text' column: no column 'text' (its columns: body, n)")
    ):
        texts(resolve(ids).sources[0])


def test_a_dataset_with_a_transform_is_read_through_it(hf) -> None:
    ds = hf.Dataset.from_dict({"text": ["a", "b"]})
    ds.set_transform(lambda batch: {"text": [t * 2 for t in batch["text"]]})
    (source,) = resolve(ds).sources
    assert source[0] == "str" and texts(source) == ["aa", "bb"]


def test_a_dataset_dict_must_name_its_split(hf) -> None:
    dd = hf.DatasetDict(
        {"train": hf.Dataset.from_dict({"text": ["a"]}), "test": hf.Dataset.from_dict({"text": ["b"]})}
    )
    with pytest.raises(
        TypeError, match=re.escape("a DatasetDict holds several splits (train, test); pass one of them")
    ):
        resolve(dd)


def test_datasets_mix_with_files(hf, tree: Path) -> None:
    ds = hf.Dataset.from_dict({"text": ["a"]})
    out = resolve([tree / "c.txt", ds, ds["text"], iter(["x"])])
    assert [s[0] for s in out.sources] == ["text", "arrow", "arrow", "str"]
    assert list(itertools.chain.from_iterable(texts(s) for s in out.sources[1:])) == ["a", "a", "x"]
