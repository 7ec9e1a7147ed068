"""The corpora the dataset writers read: ``en`` as en.jsonl (one JSON record per document
of ~5 KB, made by ``formats_compare.py``'s files) and ``owt-1G`` (1 GB of
OpenWebText-like text from make_big.py), or their first megabytes for ``--quick``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from _common import DOC_SEP, big_corpus, corpus_path, write_atomic
from _formats.files import build as build_formats

OWT = "owt-1G"
# What --quick takes of each corpus, cut at a document boundary.
QUICK_BYTES = {"en": 4_000_000, OWT: 16_000_000}
SEP = DOC_SEP.encode()  # between make_big.py's documents


@dataclass(frozen=True)
class Corpus:
    name: str  # "en" or "owt-1G"
    path: Path  # the file the writers read
    text_bytes: int  # what MB/s counts
    documents: int | None  # records (en); None for text split at its special tokens


def jsonl_text_bytes(path: Path) -> tuple[int, int]:
    """The UTF-8 bytes of a JSONL file's ``text`` fields, and its records."""
    total = records = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                total += len(json.loads(line)["text"].encode("utf-8"))
                records += 1
    return total, records


def write_prefix(source: Path, dest: Path, limit: int, cut_at: bytes) -> None:
    """The first ``limit`` bytes of ``source``, cut after the last ``cut_at`` in them
    (a line's ``\\n`` kept, a separator dropped)."""
    with open(source, "rb") as f:
        head = f.read(limit)
    end = head.rfind(cut_at)
    if end == -1:
        raise SystemExit(f"{source}: no {cut_at!r} in its first {limit:,} bytes to cut a slice at")
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(dest, head[: end + (len(cut_at) if cut_at == b"\n" else 0)])


def prepare_corpora(names: list[str], quick: bool, data: str | None, make_big: Path) -> list[Corpus]:
    """The corpora ``names``, built when missing, sliced with ``quick``."""
    en_path = corpus_path("en", data=data)
    bench = en_path.parent
    corpora = []
    for name in names:
        if name == "en":
            stamp = build_formats(bench, en_path)
            path = bench / "en.jsonl"
            if quick:
                write_prefix(path, bench / "quick" / "en.jsonl", QUICK_BYTES["en"], b"\n")
                path = bench / "quick" / "en.jsonl"
                text_bytes, records = jsonl_text_bytes(path)
            else:
                text_bytes, records = stamp["documents"]["5 KB"]["bytes"], stamp["documents"]["5 KB"]["count"]
            corpora.append(Corpus("en", path, text_bytes, records))
        else:
            path = big_corpus(OWT, bench, make_big)
            if quick:
                write_prefix(path, bench / "quick" / path.name, QUICK_BYTES[OWT], SEP)
                path = bench / "quick" / path.name
            corpora.append(Corpus(OWT, path, path.stat().st_size, None))
    return corpora
