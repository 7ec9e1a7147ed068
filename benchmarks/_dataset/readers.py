"""Reading a dataset back the way its users do (``np.load``, ``np.memmap``, llm.c's
header), and hashes that say whether two outputs hold the same ids or the same bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from _common import sha256_file

# llm.c's token files: magic -> (version, id dtype); a header of 256 int32.
LLMC: dict[int, tuple[int, type[np.unsignedinteger[Any]]]] = {
    20240520: (1, np.uint16),
    20240801: (7, np.uint32),
}
LLMC_HEADER_BYTES = 256 * 4
Ids = np.ndarray[Any, Any]


def read_shard(path: Path, shard_format: str, dtype: str) -> Ids:
    """A shard's ids: ``np.load`` (npy), ``np.memmap`` (bin), llm.c's header, then the ids (llmc)."""
    if shard_format == "npy":
        ids: Ids = np.load(path, mmap_mode="r")
        return ids
    if shard_format == "bin":
        return np.memmap(path, dtype=np.dtype(dtype), mode="r")
    header = np.fromfile(path, dtype="<i4", count=256)
    magic, version, tokens = (int(x) for x in header[:3])
    if magic not in LLMC or LLMC[magic][0] != version:
        raise ValueError(f"{path}: not an llm.c token file (magic {magic}, version {version})")
    expected = LLMC_HEADER_BYTES + tokens * np.dtype(LLMC[magic][1]).itemsize
    if path.stat().st_size != expected:
        raise ValueError(f"{path}: {path.stat().st_size:,} bytes, but its header says {expected:,}")
    return np.memmap(path, dtype=LLMC[magic][1], mode="r", offset=LLMC_HEADER_BYTES, shape=(tokens,))


def split_arrays(root: Path, manifest: dict[str, Any], split: str = "train") -> Iterator[Ids]:
    """The ids of each shard of ``split``, in order."""
    for shard in manifest.get("splits", {}).get(split, {}).get("shards", []):
        yield read_shard(root / shard["file"], manifest["format"], manifest["dtype"])


class IdsHash:
    """A hash of a sequence of ids, whatever their dtype or how they are cut in arrays."""

    def __init__(self) -> None:
        self.h, self.tokens = hashlib.sha256(), 0

    def update(self, ids: Ids) -> None:
        step = 1 << 22
        for i in range(0, len(ids), step):
            self.h.update(np.ascontiguousarray(ids[i : i + step], dtype="<u4").tobytes())
        self.tokens += len(ids)

    def result(self) -> tuple[int, str]:
        return self.tokens, self.h.hexdigest()[:16]


def ids_of(arrays: Iterable[Ids]) -> tuple[int, str]:
    """How many ids ``arrays`` hold, and their ``IdsHash``."""
    h = IdsHash()
    for a in arrays:
        h.update(a)
    return h.result()


def file_hashes(root: Path) -> dict[str, str]:
    """The sha256 of every file of a dataset folder but its manifest, by relative path."""
    return {
        str(p.relative_to(root)): sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }
