"""The on-disk format of token datasets, in one place: its version, the manifest's
name, the splits, the shard formats and their file names, the id and index dtypes, and
the header layouts of ``.npy`` and llm.c files.

A dataset folder holds ``manifest.json`` (``MANIFEST``) and a folder per split
(``train/``, and ``val/`` when ``val_fraction > 0``). A split's shards are named
``NNNNN.npy`` (or ``.bin``) from ``00000``, each with its document index
``NNNNN.idx.npy``: uint64 offsets where each document (or the rest of one continued
from the shard before) starts, then the shard's length. Ids are little-endian
``uint16`` where the vocabulary fits in 65,536 ids, else ``uint32``.

Two formats add the files a trainer reads beside each shard's raw ids
(``TRAINER_FILES``), listed in the manifest's ``trainer_files`` of the shard:
``"megatron"``: ``NNNNN.bin`` and Megatron-LM's index ``NNNNN.idx`` (``MEGATRON_*``);
``"datatrove"``: ``NNNNN.ds`` with ``NNNNN.ds.index`` (each document's end, in tokens,
uint64) and ``NNNNN.ds.metadata``. Megatron picks the ids' dtype its own way
(``megatron_dtype_name``): ``int32`` (written as uint32: the same bytes) from 65,500
ids, where bpekit's rule would still take ``uint16``.

The writer is Rust: ``src/dataset/shard.rs`` (llm.c's magic numbers and header, the
file names) and ``src/dataset/npy.rs`` (the ``.npy`` header's length) hold the same
numbers, and ``tests/datasets/test_dataset_spec.py`` checks that the two agree.

>>> shard_name("val", 3, "llmc"), index_name("val", 3)
('val/00003.bin', 'val/00003.idx.npy')
>>> id_dtype_name(50257, None), id_dtype_name(200019, None)
('uint16', 'uint32')
>>> shard_name("train", 0, "datatrove"), trainer_file_names("train", 0, "datatrove")
('train/00000.ds', ['train/00000.ds.index', 'train/00000.ds.metadata'])
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# numpy is imported only where an array is made or a numpy dtype is given: importing
# it starts OpenBLAS's threads, which spin for ~0.1 s of CPU; on a 2-core machine
# that is taken from the encoder's threads (perf, a cold 2-thread `bpekit encode`).

__all__ = [
    "FORMAT_VERSION",
    "ID_BYTES",
    "INDEX_DTYPE",
    "INDEX_SUFFIX",
    "LLMC_HEADERS",
    "LLMC_HEADER_BYTES",
    "MANIFEST",
    "MEGATRON_CODES",
    "MEGATRON_MAGIC",
    "NPY_HEADER_BYTES",
    "SHARD_FORMATS",
    "SPLITS",
    "TRAINER_FILES",
    "id_dtype_name",
    "index_name",
    "little",
    "megatron_dtype_name",
    "pick_dtype",
    "shard_name",
    "split_names",
    "trainer_file_names",
]

# The version of the layout below; a reader refuses a manifest of another.
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SPLITS = ("train", "val")
# "npy": a .npy array; "bin": raw little-endian ids (np.memmap); "llmc": llm.c's .bin;
# "megatron": raw ids and Megatron-LM's .idx; "datatrove": raw ids (.ds) and its index.
SHARD_FORMATS = ("npy", "bin", "llmc", "megatron", "datatrove")
_EXTENSIONS = {"npy": "npy", "bin": "bin", "llmc": "bin", "megatron": "bin", "datatrove": "ds"}
# The files a trainer reads beside a shard's ids, by the suffix after NNNNN.
TRAINER_FILES = {"megatron": ("idx",), "datatrove": ("ds.index", "ds.metadata")}
# Megatron-LM's index (megatron/core/datasets/indexed_dataset.py): its magic, then the
# version 1 (u64) and the ids' dtype code (u8), of which bpekit writes these two.
MEGATRON_MAGIC = b"MMIDIDX\x00\x00"
MEGATRON_CODES = {8: "uint16", 4: "int32"}
# A shard's document index beside it: x.idx.npy for x.npy (or x.bin).
INDEX_SUFFIX = ".idx.npy"
INDEX_DTYPE = "<u8"
# The ids' dtypes, by name, and their bytes.
ID_BYTES = {"uint16": 2, "uint32": 4}
# The writer's .npy header (shards and indexes) has a fixed length, whatever the
# array's: a shard is streamed after a placeholder header patched at the end.
NPY_HEADER_BYTES = 128
# llm.c's token files: 256 little-endian int32 (1,024 bytes), header[0] the magic,
# header[1] the version, header[2] the number of tokens; then the ids.
LLMC_HEADERS = {"uint16": (20240520, 1), "uint32": (20240801, 7)}
LLMC_HEADER_BYTES = 1024


def split_names(val_fraction: float) -> tuple[str, ...]:
    """The splits a dataset has: ``train``, and ``val`` when ``val_fraction > 0``."""
    return SPLITS if val_fraction > 0 else SPLITS[:1]


def shard_name(split: str, k: int, shard_format: str) -> str:
    """Shard ``k`` of ``split``, relative to the dataset folder."""
    return f"{split}/{k:05d}.{_EXTENSIONS[shard_format]}"


def index_name(split: str, k: int) -> str:
    """The document index of shard ``k`` of ``split``, relative to the dataset folder."""
    return f"{split}/{k:05d}{INDEX_SUFFIX}"


def trainer_file_names(split: str, k: int, shard_format: str) -> list[str]:
    """The files a trainer reads beside shard ``k`` of ``split`` (none for the others)."""
    return [f"{split}/{k:05d}.{suffix}" for suffix in TRAINER_FILES.get(shard_format, ())]


def megatron_dtype_name(n_vocab: int) -> str:
    """The ids' dtype as Megatron-LM's ``DType.optimal_dtype`` picks it for a vocabulary:
    uint16 below 65,500 ids, else int32, whose bytes are uint32's for any id bpekit writes.

    >>> megatron_dtype_name(50257), megatron_dtype_name(65500), megatron_dtype_name(65536)
    ('uint16', 'uint32', 'uint32')
    """
    return "uint16" if n_vocab < 65500 else "uint32"


def id_dtype_name(n_vocab: int, dtype: npt.DTypeLike | None) -> str:
    """``"uint16"`` or ``"uint32"``: picked for ``n_vocab``, or ``dtype`` checked
    (``n_vocab=0``: its name and byte order alone).

    >>> id_dtype_name(50257, "uint32")
    'uint32'
    >>> id_dtype_name(70000, "uint16")
    Traceback (most recent call last):
    ...
    ValueError: uint16 cannot hold the ids of a 70000-token vocabulary; use uint32
    """
    if dtype is None:
        return "uint16" if n_vocab <= 1 << 16 else "uint32"
    if isinstance(dtype, str) and dtype in ID_BYTES:
        name = dtype
    else:
        import numpy as np

        resolved = np.dtype(dtype)
        if resolved.byteorder == ">" or (resolved.byteorder == "=" and sys.byteorder == "big"):
            raise ValueError(f"dtype {dtype!r} is big-endian; token files are little-endian uint16 or uint32")
        name = resolved.name
    if name not in ID_BYTES:
        raise ValueError(f"dtype must be uint16 or uint32, not {name}")
    if name == "uint16" and n_vocab > 1 << 16:
        raise ValueError(f"uint16 cannot hold the ids of a {n_vocab}-token vocabulary; use uint32")
    return name


def pick_dtype(n_vocab: int, dtype: npt.DTypeLike | None = None) -> np.dtype[Any]:
    """``uint16`` when every id fits (``n_vocab <= 65536``), else ``uint32``; or check ``dtype``.

    >>> pick_dtype(50257).name, pick_dtype(200019).name
    ('uint16', 'uint32')
    """
    import numpy as np

    return np.dtype(id_dtype_name(n_vocab, dtype))


def little(name: str) -> np.dtype[Any]:
    """The little-endian numpy dtype of ``"uint16"`` or ``"uint32"``."""
    import numpy as np

    return np.dtype("<u" + str(ID_BYTES[name]))
