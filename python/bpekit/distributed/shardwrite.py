"""A worker's half of a dataset's shards: one shard written from the pieces of unit
files its plan names (``shardplan.ShardPlan``; its ids by the core,
``_core.write_shard_file``), with its document index and the files its format adds for
a trainer, each appearing whole or not at all, and hashed as it is written. The bytes
are those ``src/dataset/shard.rs`` writes: the headers, indexes and side files here
follow ``npy.rs``, ``shard.rs``, ``megatron.rs`` and ``datatrove.rs``, and the tests
compare every file with one machine's.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bpekit import _core
from bpekit._atomic import _mode_for
from bpekit.dataset.spec import LLMC_HEADERS, MEGATRON_MAGIC, NPY_HEADER_BYTES, index_name, shard_name

__all__ = ["ShardTask", "header", "side_files", "write_shard"]


def npy_header(descr: str, length: int) -> bytes:
    """``npy.rs``'s fixed-length header of a 1-D array."""
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({length},), }}".encode()
    out = b"\x93NUMPY\x01\x00" + (NPY_HEADER_BYTES - 10).to_bytes(2, "little") + text
    return out.ljust(NPY_HEADER_BYTES - 1, b" ") + b"\n"


def header(fmt: str, width: int, tokens: int) -> bytes:
    """A shard's header in format ``fmt``: ``.npy``'s, llm.c's 256 int32, or none."""
    if fmt == "npy":
        return npy_header("<u2" if width == 2 else "<u4", tokens)
    if fmt == "llmc":
        magic, version = LLMC_HEADERS["uint16" if width == 2 else "uint32"]
        words = [magic, version, min(tokens, 2**31 - 1)] + [0] * 253
        return b"".join(w.to_bytes(4, "little", signed=True) for w in words)
    return b""


def _metric(n: int) -> str:
    """``humanize.metric(n, unit="T")``, as ``datatrove.rs``'s ``metric``."""
    value = float(n)
    exponent = 0 if n == 0 else math.floor(math.log10(value))
    old = (exponent // 3) * 3
    scaled = value / 10.0**old
    digits = max(0, 2 - exponent % 3)
    rounded = float(f"{scaled:.{digits}f}")
    if exponent < 30 and rounded >= 10.0 ** (exponent % 3 + 1):
        exponent += 1
        new = (exponent // 3) * 3
        scaled /= 10.0 ** (new - old)
        digits = max(0, 2 - exponent % 3)
    k = exponent // 3
    prefix = "" if k == 0 else "kMGTPEZYRQ"[k - 1 : k]
    return f"{scaled:.{digits}f} {prefix}T"


def side_files(
    fmt: str, width: int, starts: list[int], tokens: int, tokenizer: str
) -> list[tuple[str, bytes]]:
    """The files a trainer reads beside a shard (suffix, bytes), as ``shard.rs`` writes them."""
    ends = [*starts[1:], tokens]
    lengths = [e - s for s, e in zip(starts, ends, strict=True)]
    if fmt == "megatron":
        seqs = [(s, n) for s, n in zip(starts, lengths, strict=True) if n > 0]
        out = bytearray(MEGATRON_MAGIC + (1).to_bytes(8, "little") + bytes([8 if width == 2 else 4]))
        out += len(seqs).to_bytes(8, "little") + (len(starts) + 1).to_bytes(8, "little")
        out += b"".join(min(n, 2**31 - 1).to_bytes(4, "little", signed=True) for _, n in seqs)
        out += b"".join((s * width).to_bytes(8, "little", signed=True) for s, _ in seqs)
        count = 0
        out += count.to_bytes(8, "little")
        for n in lengths:
            count += n > 0
            out += count.to_bytes(8, "little")
        return [("idx", bytes(out))]
    if fmt == "datatrove":
        index = b"".join(e.to_bytes(8, "little") for e in ends)
        name = "".join("_" if c in "|\n\r" else c for c in tokenizer) or "bpekit"
        meta = f"{name}|{width}\n{tokens}\n{_metric(tokens)}"
        return [("ds.index", index), ("ds.metadata", meta.encode())]
    return []


@dataclass(frozen=True)
class ShardTask:
    """What a worker is told to write one shard: the dataset folder, the shard's split,
    number and format, the ids' width, the tokenizer's name (datatrove's metadata),
    whether to hash, its token count, document starts and pieces (``ShardPlan``), and
    the unit files its pieces name, by unit."""

    root: str
    split: str
    k: int
    format: str
    width: int
    tokenizer: str
    checksums: bool
    tokens: int
    starts: list[int]
    pieces: list[tuple[int, int, int]]
    units: dict[int, str]


class _Whole:
    """A file written under a temporary name beside ``path`` and renamed over it only
    once whole (a failure removes it), hashed as written when ``hash``."""

    def __init__(self, path: Path, hash: bool) -> None:
        self.path = path
        # The temporary name the core's writers give (".00000.npy.<16 hex>.tmp"), which a
        # rerun knows as this dataset's own and removes: a worker killed mid-write
        # (a run that failed cancels its shards' tasks) leaves it behind.
        self.tmp = str(path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp")
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd, _mode_for(path))
            self.file = os.fdopen(fd, "wb", buffering=0)
        except BaseException:
            os.close(fd)
            os.unlink(self.tmp)
            raise
        self.sha = hashlib.sha256() if hash else None
        self.size = 0

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            n = self.file.write(view)
            view = view[n or 0 :]
        if self.sha is not None:
            self.sha.update(data)
        self.size += len(data)

    def commit(self) -> tuple[int, str | None]:
        self.file.close()
        os.replace(self.tmp, self.path)
        return self.size, None if self.sha is None else self.sha.hexdigest()

    def abandon(self) -> None:
        self.file.close()
        Path(self.tmp).unlink(missing_ok=True)


def _write_file(path: Path, hash: bool, fill: Callable[[_Whole], None]) -> tuple[int, str | None]:
    """Writes what ``fill`` writes to ``path``, whole or not at all; errors name it."""
    out = None
    try:
        out = _Whole(path, hash)
        fill(out)
        return out.commit()
    except OSError as e:
        if out is not None:
            out.abandon()
        raise OSError(e.errno, e.strerror or str(e), str(path)) from None
    except BaseException:
        if out is not None:
            out.abandon()
        raise


def write_shard(task: ShardTask) -> dict[str, Any]:
    """Writes shard ``task.k`` of ``task.split`` and its index (and side files); returns
    their sizes and sha256 (None unless ``task.checksums``)."""
    root = Path(task.root)
    name = shard_name(task.split, task.k, task.format)
    head = header(task.format, task.width, task.tokens)
    # The ids go in the core, read straight from the unit files and written with
    # direct I/O: Python's buffered writes copied each byte into the page cache.
    size, sha = _core.write_shard_file(
        str(root / name), head, task.pieces, task.units, task.width, task.checksums
    )
    if size != len(head) + task.tokens * task.width:
        raise RuntimeError(f"{root / name}: {size} bytes written, not the planned; please report this")
    index = index_name(task.split, task.k)
    starts = [*task.starts, task.tokens]
    data = npy_header("<u8", len(starts)) + b"".join(s.to_bytes(8, "little") for s in starts)
    _, index_sha = _write_file(root / index, task.checksums, functools.partial(_Whole.write, data=data))
    side = []
    for suffix, data in side_files(task.format, task.width, task.starts, task.tokens, task.tokenizer):
        file = f"{task.split}/{task.k:05d}.{suffix}"
        n, h = _write_file(root / file, task.checksums, functools.partial(_Whole.write, data=data))
        side.append({"file": file, "size": n, "sha256": h})
    return {"size": size, "sha256": sha, "index_sha256": index_sha, "trainer_files": side}
