"""One file of token ids (a shard) as the reader sees it: what the manifest says of it
(``Shard``), its header, size and document index checked against that, its sha256, and
its ids memory-mapped. A single file given alone (``.npy``, llm.c ``.bin``, raw
``.bin``, a Megatron ``.bin`` with its ``.idx``, a datatrove ``.ds``) is opened here as
one shard; the trainers' indexes are read here too (``megatron_offsets``,
``datatrove_offsets``), as their writers' sources define them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bpekit.dataset.manifest import REWRITE
from bpekit.dataset.spec import (
    INDEX_DTYPE,
    INDEX_SUFFIX,
    LLMC_HEADER_BYTES,
    LLMC_HEADERS,
    MEGATRON_CODES,
    MEGATRON_MAGIC,
    id_dtype_name,
    little,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Shard",
    "check_ids_file",
    "check_index_file",
    "check_sha256",
    "check_trainer_files",
    "datatrove_offsets",
    "field",
    "map_ids",
    "megatron_offsets",
    "npy_header",
    "open_file",
]


@dataclass(frozen=True)
class Shard:
    """One file of ids and what the manifest says of it.

    ``offset`` is the byte where the ids start (the ``.npy`` header's length, llm.c's
    1,024, 0 for a raw ``.bin``); ``documents`` counts the documents that start in the
    shard, and ``continues`` says that its first part ends the previous shard's last
    document. ``index`` is the document index (``NNNNN.idx.npy``), ``None`` for a single
    file that has none beside it (then the file is one document); ``index_format`` says
    whose index it is (``"npy"``, or ``"megatron"``/``"datatrove"`` for a trainer's file
    given alone). ``trainer_files``: the trainer's files beside a dataset's shard, each
    ``(path, size, sha256)``.
    """

    path: Path
    index: Path | None
    tokens: int
    documents: int
    continues: bool
    dtype: np.dtype[Any]
    offset: int
    sha256: str | None = None
    index_sha256: str | None = None
    index_format: str = "npy"
    trainer_files: tuple[tuple[Path, int, str | None], ...] = ()

    @property
    def parts(self) -> int:
        """The entries of the document index less one: documents and a continued part."""
        return self.documents + self.continues


def field(d: dict[str, Any], key: str, kind: Any, place: Any) -> Any:
    """``d[key]``, checked to be a ``kind`` (a count: an int, 0 or more)."""
    if key not in d:
        raise ValueError(f"{place}: no {key!r}; the manifest is damaged or not from bpekit")
    value = d[key]
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    else:
        ok = isinstance(value, kind)
    if not ok:
        name = getattr(kind, "__name__", kind)
        want = "a count (a whole number, 0 or more)" if kind is int else f"a {name}"
        raise ValueError(f"{place}: {key!r} is {value!r}, not {want}; the manifest is damaged")
    return value


def _size(path: Path, what: str) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing ({what} listed in the manifest); {REWRITE}") from None


def npy_header(path: Path) -> tuple[np.dtype[Any], tuple[int, ...], int]:
    """The dtype, shape and data offset of a ``.npy`` file, from its header alone."""
    from tokenize import TokenError

    from numpy.lib import format as npy

    with open(path, "rb") as f:
        try:
            version = npy.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = npy.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, _, dtype = npy.read_array_header_2_0(f)
            else:
                raise ValueError(f".npy version {version[0]}.{version[1]} is not read here")
        except (ValueError, EOFError, SyntaxError, TokenError) as e:  # numpy parses the header as Python
            raise ValueError(f"{path}: not a readable .npy file ({e})") from None
        return dtype, shape, f.tell()


def check_ids_file(shard: Shard, fmt: str) -> int:
    """Checks a shard's file against what the manifest says of it (its size, and the
    header of a ``.npy`` or llm.c file); returns the byte where its ids start."""
    path, tokens, dtype = shard.path, shard.tokens, shard.dtype
    size = _size(path, "a shard")
    if fmt == "npy":
        got, shape, offset = npy_header(path)
        if got != dtype or shape != (tokens,):
            raise ValueError(
                f"{path}: holds {got} of shape {shape}, but the manifest says {tokens:,} {dtype.name} ids; "
                f"the shard is corrupt or from another run: {REWRITE}"
            )
    elif fmt == "llmc":
        offset = LLMC_HEADER_BYTES
        header = _llmc_header(path)
        magic, version = LLMC_HEADERS[dtype.name]
        if header is None or header != (magic, version, tokens):
            raise ValueError(
                f"{path}: its llm.c header {header} is not (magic {magic}, version {version}, {tokens:,} "
                f"tokens) as {dtype.name} ids need; the shard is corrupt or from another run: {REWRITE}"
            )
    else:
        offset = 0
    want = offset + tokens * dtype.itemsize
    if size != want:
        raise ValueError(
            f"{path}: {size:,} bytes, not the {want:,} that its {tokens:,} {dtype.name} ids (as the manifest "
            f"says) take; the shard is truncated or was changed: {REWRITE}"
        )
    return offset


def check_index_file(path: Path, entries: int) -> None:
    """Checks a document index's header and size: ``entries`` uint64 offsets."""
    import numpy as np

    size = _size(path, "a document index")
    dtype, shape, offset = npy_header(path)
    if dtype != np.dtype(INDEX_DTYPE) or shape != (entries,) or size != offset + 8 * entries:
        raise ValueError(
            f"{path}: {size:,} bytes holding {dtype} of shape {shape}, but the manifest calls for "
            f"{entries:,} uint64 offsets; the index is corrupt: {REWRITE}"
        )


def _llmc_header(path: Path) -> tuple[int, int, int] | None:
    """Magic, version and token count of an llm.c file, ``None`` when it is too short."""
    import numpy as np

    with open(path, "rb") as f:
        head = f.read(LLMC_HEADER_BYTES)
    if len(head) < LLMC_HEADER_BYTES:
        return None
    magic, version, tokens = np.frombuffer(head[:12], dtype="<i4").tolist()
    return magic, version, tokens


def check_sha256(path: Path, want: str | None) -> None:
    if want is None:
        return
    with open(path, "rb") as f:
        got = hashlib.file_digest(f, "sha256").hexdigest()
    if got != want.lower():
        raise ValueError(
            f"{path}: sha256 {got} differs from the manifest's {want}; the file is corrupt: {REWRITE}"
        )


def open_file(path: Path, fmt: str | None, dtype: npt.DTypeLike | None) -> tuple[str, np.dtype[Any], Shard]:
    """A single file of ids as one shard: its format, dtype and the shard (with the
    document index beside it, ``x.idx.npy``, when there is one; Megatron's ``x.idx``
    or datatrove's ``x.ds.index`` for those formats)."""
    size = path.stat().st_size
    if fmt is None:
        fmt = "npy" if path.suffix == ".npy" else "datatrove" if path.suffix == ".ds" else "bin"
        header = _llmc_header(path) if fmt == "bin" else None
        # A .bin with an x.idx beside it is a Megatron pair, read (and its index checked)
        # as one: a damaged index must fail, not let the ids pass for raw uint16.
        if fmt == "bin" and path.with_suffix(".idx").exists():
            fmt = "megatron"
        elif header is not None and header[0] in {magic for magic, _ in LLMC_HEADERS.values()}:
            fmt = "llmc"
    if fmt == "megatron":
        return fmt, *_open_megatron(path, size, dtype)
    if fmt == "datatrove":
        return fmt, *_open_datatrove(path, size, dtype)
    read = {"npy": _read_npy, "llmc": _read_llmc, "bin": _read_bin}[fmt]
    resolved, tokens, offset = read(path, size, dtype)
    index = path.with_name(path.name.removesuffix(path.suffix) + INDEX_SUFFIX)
    if not index.exists():
        return fmt, resolved, Shard(path, None, tokens, 1 if tokens else 0, False, resolved, offset)
    entries = npy_header(index)[1]
    if len(entries) != 1 or entries[0] < 1:
        raise ValueError(f"{index}: not a document index (a 1-D array of uint64 offsets)")
    check_index_file(index, entries[0])
    return fmt, resolved, Shard(path, index, tokens, entries[0] - 1, False, resolved, offset)


def _open_megatron(path: Path, size: int, dtype: npt.DTypeLike | None) -> tuple[np.dtype[Any], Shard]:
    """A Megatron ``.bin`` as one shard, its ``.idx`` giving the dtype and the documents."""
    import numpy as np

    index = path.with_suffix(".idx")
    if not index.exists():
        raise FileNotFoundError(f"{index}: missing; a Megatron .bin is read with its .idx beside it")
    name, offsets = megatron_offsets(index)
    if dtype is not None and id_dtype_name(0, dtype) != name:
        raise ValueError(f"{path}: its .idx says {name} ids, not {np.dtype(dtype)}")
    resolved = little(name)
    tokens = int(offsets[-1])
    if size != tokens * resolved.itemsize:
        raise ValueError(
            f"{path}: {size:,} bytes, but its .idx counts {tokens:,} {name} ids "
            f"({tokens * resolved.itemsize:,} bytes); the pair is truncated or does not belong together"
        )
    return resolved, Shard(path, index, tokens, len(offsets) - 1, False, resolved, 0, index_format="megatron")


def _open_datatrove(path: Path, size: int, dtype: npt.DTypeLike | None) -> tuple[np.dtype[Any], Shard]:
    """A datatrove ``.ds`` as one shard: the token size from ``dtype``, else its
    ``.ds.metadata``, else datatrove's default of 2; the documents from ``.ds.index``."""
    meta = path.with_name(path.name + ".metadata")
    name = None if dtype is None else id_dtype_name(0, dtype)
    if name is None and meta.exists():
        first = meta.read_text("utf-8", "replace").split("\n", 1)[0]
        width = first.rsplit("|", 1)[-1]
        name = {"2": "uint16", "4": "uint32"}.get(width)
        if name is None:
            raise ValueError(f"{meta}: its first line {first!r} does not end in |2 or |4 (the token size)")
    resolved = little(name or "uint16")
    if size % resolved.itemsize:
        raise ValueError(f"{path}: {size:,} bytes is not a whole number of {resolved.name} ids")
    tokens = size // resolved.itemsize
    index = path.with_name(path.name + ".index")
    if not index.exists():
        return resolved, Shard(path, None, tokens, 1 if tokens else 0, False, resolved, 0)
    offsets = datatrove_offsets(index, tokens)
    return resolved, Shard(
        path, index, tokens, len(offsets) - 1, False, resolved, 0, index_format="datatrove"
    )


def megatron_offsets(path: Path) -> tuple[str, np.ndarray]:
    """The ids' dtype (``"uint16"``, or ``"uint32"`` for Megatron's int32) and where each
    document starts (then the end: uint64, in tokens) from a Megatron ``.idx``: the
    magic, version 1 (u64), dtype code (u8), sequence and document-index counts (u64),
    then the sequences' lengths (int32) and byte offsets (int64) and the document
    indices (int64, from 0: each document's first sequence, then the count)."""
    import numpy as np

    data = path.read_bytes()

    def bad(why: str) -> ValueError:
        return ValueError(f"{path}: not a Megatron index bpekit reads: {why}")

    if data[:9] != MEGATRON_MAGIC:
        raise bad(f"it starts {data[:9]!r}, not {MEGATRON_MAGIC!r}")
    if len(data) < 34:
        raise bad(f"{len(data)} bytes, shorter than its 34-byte header")
    version, code, sequences, documents = (
        int.from_bytes(data[9:17], "little"),
        data[17],
        int.from_bytes(data[18:26], "little"),
        int.from_bytes(data[26:34], "little"),
    )
    if version != 1:
        raise bad(f"version {version}, not 1")
    if code not in MEGATRON_CODES:
        raise bad(f"dtype code {code} is not token ids (8: uint16, 4: int32)")
    name = "uint16" if MEGATRON_CODES[code] == "uint16" else "uint32"
    if len(data) != 34 + 12 * sequences + 8 * documents or documents < 1:
        raise bad(f"{len(data):,} bytes for {sequences:,} sequences and {documents:,} document indices")
    lengths = np.frombuffer(data, "<i4", sequences, 34).astype(np.int64)
    pointers = np.frombuffer(data, "<i8", sequences, 34 + 4 * sequences)
    doc_index = np.frombuffer(data, "<i8", documents, 34 + 12 * sequences)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    if (lengths < 0).any() or not np.array_equal(pointers, starts[:-1] * little(name).itemsize):
        raise bad("its sequences do not follow one another in the .bin")
    if doc_index[0] != 0 or doc_index[-1] != sequences or (np.diff(doc_index) < 0).any():
        raise bad("its document indices do not run from 0 to the sequence count")
    return name, starts[doc_index].astype(np.uint64)


def datatrove_offsets(path: Path, tokens: int) -> np.ndarray:
    """Where each document starts (then the end: uint64) from a datatrove ``.ds.index``
    of ``tokens`` ids: each document's end in tokens, uint64, nothing else."""
    import numpy as np

    data = path.read_bytes()
    ends = np.frombuffer(data[: len(data) - len(data) % 8], "<u8")
    last = int(ends[-1]) if len(ends) else 0
    ok = len(data) % 8 == 0 and last == tokens
    # Compared as uint64: cast to int64, an end of 2**63 or more wrapped negative.
    if not ok or (len(ends) > 1 and (ends[1:] < ends[:-1]).any()) or (len(ends) and int(ends.max()) > tokens):
        raise ValueError(
            f"{path}: not the datatrove index of {tokens:,} ids (uint64 document ends, rising to {tokens:,})"
        )
    return np.concatenate([np.zeros(1, np.uint64), ends])


def check_trainer_files(shard: Shard, fmt: str, offsets: np.ndarray) -> None:
    """Checks the trainer's files beside a dataset's shard: their sha256, and that their
    documents are those of bpekit's index (``offsets``)."""
    import numpy as np

    for path, _, sha256 in shard.trainer_files:
        check_sha256(path, sha256)
        if path.name.endswith(".idx"):
            name, got = megatron_offsets(path)
            if name != shard.dtype.name:
                raise ValueError(
                    f"{path}: says {name} ids, but the manifest says {shard.dtype.name}; {REWRITE}"
                )
        elif path.name.endswith(".ds.index"):
            got = datatrove_offsets(path, shard.tokens)
        else:
            continue
        if not np.array_equal(got, offsets):
            raise ValueError(f"{path}: its documents differ from those of {shard.index}; {REWRITE}")


def _read_npy(path: Path, size: int, dtype: npt.DTypeLike | None) -> tuple[np.dtype[Any], int, int]:
    """The dtype, number of ids and data offset of a ``.npy`` file of ids."""
    import numpy as np

    got, shape, offset = npy_header(path)
    if len(shape) != 1 or got.kind not in "ui":
        raise ValueError(f"{path}: expected a 1-D integer array of token ids, got {got} of shape {shape}")
    if dtype is not None and np.dtype(dtype) != got:
        raise ValueError(f"{path}: holds {got} ids, not {np.dtype(dtype)}; dtype= is for raw .bin files")
    want = offset + shape[0] * got.itemsize
    if size != want:
        raise ValueError(f"{path}: {size:,} bytes, not the {want:,} its header says; the file is truncated")
    return got, shape[0], offset


def _read_llmc(path: Path, size: int, dtype: npt.DTypeLike | None) -> tuple[np.dtype[Any], int, int]:
    """The dtype, number of ids and data offset of an llm.c ``.bin``, from its header."""
    import numpy as np

    header = _llmc_header(path)
    name = {v: k for k, v in LLMC_HEADERS.items()}.get(header[:2]) if header is not None else None
    if header is None or name is None:
        wanted = " or ".join(f"magic {m} with version {v}" for m, v in LLMC_HEADERS.values())
        raise ValueError(f"{path}: not an llm.c token file: its header is {header}, not {wanted}")
    if dtype is not None and id_dtype_name(0, dtype) != name:
        raise ValueError(f"{path}: an llm.c file of {name} ids (its header says), not {np.dtype(dtype)}")
    tokens, resolved = header[2], little(name)
    want = LLMC_HEADER_BYTES + tokens * resolved.itemsize
    if tokens < 0 or size != want:
        raise ValueError(
            f"{path}: an llm.c header for {tokens:,} {name} ids, but {size:,} bytes, not {want:,}; the "
            "file is truncated, or not llm.c's (format='bin' reads it raw)"
        )
    return resolved, tokens, LLMC_HEADER_BYTES


def _read_bin(path: Path, size: int, dtype: npt.DTypeLike | None) -> tuple[np.dtype[Any], int, int]:
    """The dtype and number of ids of a raw ``.bin`` of ``dtype`` (default uint16) ids."""
    name = id_dtype_name(0, "uint16" if dtype is None else dtype)
    resolved = little(name)
    if size % resolved.itemsize:
        raise ValueError(
            f"{path}: {size:,} bytes is not a whole number of {name} ids; give the dtype it was "
            "written with (dtype='uint32'), or the file is truncated"
        )
    return resolved, size // resolved.itemsize, 0


def map_ids(shard: Shard) -> np.ndarray:
    """The ids of ``shard``, memory-mapped read-only (an empty array for no ids: a file
    cannot be mapped for none)."""
    import numpy as np

    if shard.tokens == 0:
        return np.empty(0, dtype=shard.dtype)
    return np.memmap(shard.path, dtype=shard.dtype, mode="r", offset=shard.offset, shape=(shard.tokens,))
