"""Readers of the trainers' formats written here from their specifications (Megatron-LM's
``megatron/core/datasets/indexed_dataset.py`` index, datatrove's
``datatrove/pipeline/tokens/tokenizer.py`` ``TokenizedFile``), independent of bpekit's
own reader; and a corpus whose documents each format test checks against the ids
bpekit encodes for them."""

from __future__ import annotations

import itertools
import json
import random
import struct
from pathlib import Path
from typing import Any

EOT = "<|endoftext|>"


def parse_megatron(prefix: Path) -> dict[str, Any]:
    """Every field of ``prefix.idx``, and the ``.bin``'s sequences cut by it."""
    data = (prefix.with_name(prefix.name + ".idx")).read_bytes()
    magic, version, code, n_seq, n_doc = struct.unpack_from("<9sQBQQ", data, 0)
    pos = 34
    lengths = list(struct.unpack_from(f"<{n_seq}i", data, pos))
    pos += 4 * n_seq
    pointers = list(struct.unpack_from(f"<{n_seq}q", data, pos))
    pos += 8 * n_seq
    doc_index = list(struct.unpack_from(f"<{n_doc}q", data, pos))
    pos += 8 * n_doc
    width = {8: 2, 4: 4}[code]
    raw = prefix.with_name(prefix.name + ".bin").read_bytes()
    fmt = "H" if width == 2 else "i"
    sequences = [
        list(struct.unpack_from(f"<{n}{fmt}", raw, p)) for p, n in zip(pointers, lengths, strict=True)
    ]
    return {
        "magic": magic,
        "version": version,
        "code": code,
        "lengths": lengths,
        "pointers": pointers,
        "doc_index": doc_index,
        "trailing": len(data) - pos,
        "bin_size": len(raw),
        "width": width,
        "sequences": sequences,
        # Each document: its sequences joined (none: no ids).
        "documents": [[t for s in sequences[a:b] for t in s] for a, b in itertools.pairwise(doc_index)],
    }


def parse_datatrove(path: Path) -> dict[str, Any]:
    """A ``.ds`` file, its ``.index`` (uint64 document ends in tokens) and
    ``.metadata`` (``name|token size``, the count, the count in SI units)."""
    meta = path.with_name(path.name + ".metadata").read_text("utf-8")
    first, count, human = meta.split("\n")
    width = int(first.rsplit("|", 1)[1])
    raw = path.read_bytes()
    ids = list(struct.unpack(f"<{len(raw) // width}{'H' if width == 2 else 'I'}", raw))
    index = path.with_name(path.name + ".index").read_bytes()
    ends = list(struct.unpack(f"<{len(index) // 8}Q", index))
    starts = [0, *ends[:-1]]
    return {
        "name": first.rsplit("|", 1)[0],
        "width": width,
        "count": int(count),
        "human": human,
        "ids": ids,
        "ends": ends,
        "index_size": len(index),
        "documents": [ids[a:b] for a, b in zip(starts, ends, strict=True)],
    }


def write_corpus(folder: Path, n: int = 60, seed: int = 11) -> tuple[Path, list[str]]:
    """JSON lines of ``n`` distinct documents: short, long (several shards of 300 ids)
    and empty ones."""
    rng = random.Random(seed)
    pool = ["the", "cat", " on", "mat", "Über", "naïve", "東京", "42", "!!", "\n", "don't"]
    texts = []
    for i in range(n):
        words = rng.choice([0, 0, 3, 30, 120]) if i != 7 else 900
        texts.append(
            "" if words == 0 and i % 2 else f"doc{i} " + " ".join(rng.choice(pool) for _ in range(words))
        )
    path = folder / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    return path, texts


def expected_documents(tok: Any, texts: list[str], eos: bool) -> list[list[int]]:
    """The ids of each document as bpekit encodes it, ``<|endoftext|>`` after each when ``eos``."""
    end = [tok.encode_single_token(EOT)] if eos else []
    return [tok.encode(t) + end for t in texts]


def split_documents(root: Path, split: str, parse: Any) -> list[list[int]]:
    """A split's documents read through a trainer's files alone (``parse`` gives each
    shard's documents), a continued document joined to its part in the shard before."""
    manifest = json.loads((root / "manifest.json").read_text())
    docs: list[list[int]] = []
    for shard in manifest["splits"][split]["shards"]:
        parts = parse(root / shard["file"])
        if shard["continues"]:
            docs[-1] = docs[-1] + parts[0]
            parts = parts[1:]
        docs.extend(parts)
    return docs


def interleaves(expected: list[list[int]], train: list[list[int]], val: list[list[int]]) -> bool:
    """Whether ``train`` and ``val`` are the documents of ``expected``, each in order (the
    split sends each document to one)."""
    t = v = 0
    for doc in expected:
        if t < len(train) and train[t] == doc:
            t += 1
        elif v < len(val) and val[v] == doc:
            v += 1
        else:
            return False
    return t == len(train) and v == len(val)
