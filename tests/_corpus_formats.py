"""The same documents written in every input format bpekit reads, for equivalence tests:
JSON lines (plain, ``.gz``, ``.zst``), Parquet (zstd and snappy pages, several row
groups), Python iterables of ``str`` and Hugging Face datasets, beside the text file of
the documents joined by ``<|endoftext|>``.

The documents come from the shared data (``c4_sample.jsonl``, the multilingual JSON
lines); a test that needs a missing file, or a missing optional package (pyarrow,
zstandard, datasets), is skipped saying which.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _shared_data import data_path

EOT = "<|endoftext|>"
SPECIAL = [EOT]

CORPORA = {
    "c4": ("corpora", "c4_sample.jsonl"),
    "genesis": ("multilingual", "genesis_multilingual.jsonl"),
    "udhr": ("multilingual", "udhr2.jsonl"),
}


def shared_docs(name: str) -> list[str]:
    """The ``text`` of each record of a shared JSON-lines corpus."""
    path = data_path(*CORPORA[name])
    return [
        json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def jsonl_bytes(docs: list[str], field: str = "text", ensure_ascii: bool = False) -> bytes:
    """One JSON object per line; ``field`` may be dotted (``meta.body``: nested objects)."""
    lines = []
    for i, doc in enumerate(docs):
        record: Any = doc
        for part in reversed(field.split(".")):
            record = {part: record}
        record = {"id": i, **record}
        lines.append(json.dumps(record, ensure_ascii=ensure_ascii))
    return ("\n".join(lines) + "\n").encode("utf-8")


def zstd_compress(data: bytes) -> bytes:
    zstandard = pytest.importorskip(
        "zstandard", reason="zstandard (to write .zst test files) is not installed"
    )
    return zstandard.ZstdCompressor(level=3).compress(data)


def write_parquet(path: Path, docs: list[Any], compression: str = "zstd", row_group_size: int = 300) -> Path:
    pa = pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) is not installed")
    import pyarrow.parquet as pq

    table = pa.table({"id": list(range(len(docs))), "text": pa.array(docs, type=pa.string())})
    pq.write_table(table, path, compression=compression, row_group_size=row_group_size)
    return path


def hf_datasets() -> Any:
    return pytest.importorskip("datasets", reason="Hugging Face datasets is not installed")


def _file(name: str, data: Callable[[list[str]], bytes]) -> Callable[[list[str], Path], Any]:
    def make(docs: list[str], folder: Path) -> Any:
        path = folder / name
        path.write_bytes(data(docs))
        return path

    return make


def _nested(docs: list[str], folder: Path) -> tuple[Path, str]:
    path = folder / "docs.json"
    path.write_bytes(jsonl_bytes(docs, "meta.body"))
    return path, "meta.body"


# Each variant: (docs, folder) -> the input that holds those documents, one per record.
VARIANTS: dict[str, Callable[[list[str], Path], Any]] = {
    "jsonl": _file("docs.jsonl", jsonl_bytes),
    "jsonl-ascii": _file("docs.ndjson", lambda docs: jsonl_bytes(docs, ensure_ascii=True)),
    "jsonl-nested": _nested,
    "jsonl.gz": _file("docs.jsonl.gz", lambda docs: gzip.compress(jsonl_bytes(docs), compresslevel=1)),
    "jsonl.zst": _file("docs.jsonl.zst", lambda docs: zstd_compress(jsonl_bytes(docs))),
    "parquet-zstd": lambda docs, folder: write_parquet(folder / "docs.parquet", docs, "zstd"),
    "parquet-snappy": lambda docs, folder: write_parquet(folder / "docs.parquet", docs, "snappy"),
    "iterable": lambda docs, folder: (d for d in docs),
    "dataset": lambda docs, folder: hf_datasets().Dataset.from_dict({"text": docs}),
    "iterable-dataset": lambda docs, folder: (
        hf_datasets().Dataset.from_dict({"text": docs}).to_iterable_dataset(num_shards=4)
    ),
    "dataset-column": lambda docs, folder: hf_datasets().Dataset.from_dict({"text": docs})["text"],
}


def make_input(variant: str, docs: list[str], folder: Path) -> tuple[Any, dict[str, Any]]:
    """The input of ``variant`` holding ``docs``, and the options that read it."""
    made = VARIANTS[variant](docs, folder)
    if isinstance(made, tuple):
        return made[0], {"text_field": made[1]}
    return made, {}


def joined_text_file(docs: list[str], folder: Path, end: str = "") -> Path:
    """The documents joined by ``<|endoftext|>`` in a text file (``end`` after the last)."""
    path = folder / "joined.txt"
    path.write_bytes((EOT.join(docs) + end).encode("utf-8"))
    return path
