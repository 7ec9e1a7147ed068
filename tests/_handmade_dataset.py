"""Token datasets written by hand with numpy, the format as its notes give it: for the
tests of the reader (``TokenDataset``) and of ``bpekit inspect``, which must read any
cut the format allows, not only those bpekit's writer makes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from bpekit.dataset import LLMC_HEADERS


def cut(docs: list[list[int]], shard_tokens: int) -> list[dict[str, Any]]:
    """Shards as the format notes cut them: each filled to ``shard_tokens``, a document
    that does not fit cut, its first part ending the shard and the rest starting the next
    ("continues"). The writer cuts between documents instead, and only a document longer
    than a shard: this cut makes more kinds of continued part (a document cut with others
    before and after it), which the reader must read either way. Each shard: ids, index
    (part starts, then the length), documents, continues."""
    shards: list[dict[str, Any]] = []
    ids: list[int] = []
    starts: list[int] = []
    documents, continues = 0, False

    def flush() -> None:
        shards.append(
            {"ids": ids, "index": [*starts, len(ids)], "documents": documents, "continues": continues}
        )

    for doc in docs:
        if len(ids) == shard_tokens:
            flush()
            ids, starts, documents, continues = [], [], 0, False
        starts.append(len(ids))
        documents += 1
        rest = list(doc)
        while True:
            take = shard_tokens - len(ids)
            ids, rest = ids + rest[:take], rest[take:]
            if not rest:
                break
            flush()
            ids, starts, documents, continues = [], [0], 0, True
    if starts:
        flush()
    return shards


def write_ids(path: Path, ids: list[int], fmt: str, dtype: str) -> None:
    arr = np.array(ids, dtype="<" + np.dtype(dtype).str[1:])
    if fmt == "npy":
        np.save(path, arr)
    elif fmt == "bin":
        arr.tofile(path)
    else:
        header = np.zeros(256, dtype="<i4")
        header[0], header[1] = LLMC_HEADERS[dtype]
        header[2] = len(arr)
        path.write_bytes(header.tobytes() + arr.tobytes())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_dataset(
    root: Path,
    splits: dict[str, list[dict[str, Any]]],
    fmt: str = "npy",
    dtype: str = "uint16",
    shard_tokens: int = 8,
    complete: bool = True,
) -> dict[str, Any]:
    """A dataset folder of the given splits' shards (from ``cut`` or made by hand), with
    its manifest; returns the manifest."""
    root.mkdir(parents=True, exist_ok=True)
    ext = "npy" if fmt == "npy" else "bin"
    manifest_splits = {}
    for name, shards in splits.items():
        (root / name).mkdir(exist_ok=True)
        entries = []
        for k, shard in enumerate(shards):
            file, index = f"{name}/{k:05d}.{ext}", f"{name}/{k:05d}.idx.npy"
            write_ids(root / file, shard["ids"], fmt, dtype)
            np.save(root / index, np.array(shard["index"], dtype=np.uint64))
            entries.append(
                {
                    "file": file,
                    "index": index,
                    "tokens": len(shard["ids"]),
                    "documents": shard["documents"],
                    "continues": shard["continues"],
                    "sha256": sha256(root / file),
                    "index_sha256": sha256(root / index),
                    "sources": [{"input": 0, "first_document": 0, "documents": shard["documents"]}],
                }
            )
        manifest_splits[name] = {
            "tokens": sum(e["tokens"] for e in entries),
            "documents": sum(e["documents"] for e in entries),
            "shards": entries,
        }
    manifest = {
        "format_version": 1,
        "bpekit_version": "0.1.0",
        "complete": complete,
        "tokenizer": {"name": "gpt2", "path": None, "files": {"gpt2.tiktoken": "ab" * 32}},
        "format": fmt,
        "dtype": dtype,
        "shard_tokens": shard_tokens,
        "val_fraction": 0.25 if "val" in splits else 0.0,
        "seed": 0,
        "eos": {"token": "<|endoftext|>", "id": 50256},
        "bos": None,
        "options": {"text_field": "text", "special_in_text": None},
        "inputs": [{"name": "data/a.jsonl", "size": 123, "mtime_ns": 456}],
        "splits": manifest_splits,
        "totals": {
            "tokens": sum(s["tokens"] for s in manifest_splits.values()),
            "documents": sum(s["documents"] for s in manifest_splits.values()),
            "bytes": 1000,
            "skipped": 0,
        },
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def edit_manifest(root: Path, change) -> None:
    manifest = json.loads((root / "manifest.json").read_text())
    change(manifest)
    (root / "manifest.json").write_text(json.dumps(manifest))


# Documents of 3, 7, 0, 19, 2 and 4 tokens: with shards of 8 the 7-token document is cut
# after 5, the empty one sits between two cut documents, the 19-token one spans three
# shards (the middle one all of it), the last one is cut too, and the last shard is short.
DOCS = [[1, 2, 3], list(range(4, 11)), [], list(range(20, 39)), [50, 51], [60, 61, 62, 63]]


def plain(doc: np.ndarray) -> list[int]:
    return np.asarray(doc).tolist()
