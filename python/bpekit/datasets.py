"""The old name of ``bpekit.dataset``, kept so that ``from bpekit.datasets import
encode_file`` (and the rest of the package's public names) goes on working; new code
imports ``bpekit.dataset`` (or the names from ``bpekit``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bpekit import dataset as _dataset

if TYPE_CHECKING:
    from bpekit.dataset import (
        FORMAT_VERSION,
        LLMC_HEADERS,
        RECORDS_DEFAULT,
        SHARD_FORMATS,
        Layout,
        Marks,
        TokenDataset,
        encode_dataset,
        encode_file,
        get_batch,
        load_tokens,
        pick_dtype,
        read_manifest,
    )

__all__ = [
    "FORMAT_VERSION",
    "LLMC_HEADERS",
    "RECORDS_DEFAULT",
    "SHARD_FORMATS",
    "Layout",
    "Marks",
    "TokenDataset",
    "encode_dataset",
    "encode_file",
    "get_batch",
    "load_tokens",
    "pick_dtype",
    "read_manifest",
]


def __getattr__(name: str) -> Any:
    # As the package loads them: each on first use.
    if name in __all__:
        return getattr(_dataset, name)
    raise AttributeError(f"module 'bpekit.datasets' has no attribute {name!r}")


def __dir__() -> list[str]:
    # dir() and help() list the names served on first use.
    return sorted({*globals(), *__all__})
