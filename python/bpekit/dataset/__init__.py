"""Token datasets: ids written to files and read back, for training.

- ``spec``: the on-disk format (names, versions, constants, header layouts).
- ``options``: ``Layout`` (shards, their format, the val split, dtype, checksums) and
  ``Marks`` (the tokens around documents and after files), beside
  ``bpekit.options.ReadOptions`` and ``RunOptions``.
- ``job``: the options resolved against the tokenizer and the inputs (``Job``), which
  the core reads.
- ``tokens``: one ``.npy`` of ids: ``encode_file``, ``load_tokens``, ``get_batch``.
- The dataset writer: ``writer`` (``encode_dataset``), ``folder`` (the output folder's
  ownership, what is kept of an earlier run), ``manifest``, ``shards`` (the shards
  written and recorded in the manifest as they finish).
- The reader: ``reader`` (``TokenDataset``), ``files`` (each file of ids checked
  against the manifest, and mapped).

``bpekit.distributed.dataset`` writes the same datasets from units encoded apart.
``bpekit.datasets`` is this package's old name.

>>> import bpekit.dataset as dataset
>>> dataset.Layout().shard_tokens == 2**28, dataset.FORMAT_VERSION
(True, 1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bpekit.dataset.manifest import read_manifest
    from bpekit.dataset.options import RECORDS_DEFAULT, Layout, Marks
    from bpekit.dataset.reader import TokenDataset
    from bpekit.dataset.spec import FORMAT_VERSION, LLMC_HEADERS, SHARD_FORMATS, pick_dtype
    from bpekit.dataset.tokens import encode_file, get_batch, load_tokens
    from bpekit.dataset.writer import encode_dataset

# Each name loads its module on first use: ``bpekit.encode_file`` needs neither the
# dataset writer nor the reader (the writer's folder lock imports ``socket``, which a
# process under a tight memory limit cannot even map).
_MODULES = {
    "FORMAT_VERSION": "spec",
    "LLMC_HEADERS": "spec",
    "RECORDS_DEFAULT": "options",
    "SHARD_FORMATS": "spec",
    "Layout": "options",
    "Marks": "options",
    "TokenDataset": "reader",
    "encode_dataset": "writer",
    "encode_file": "tokens",
    "get_batch": "tokens",
    "load_tokens": "tokens",
    "pick_dtype": "spec",
    "read_manifest": "manifest",
}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        import importlib

        return getattr(importlib.import_module(f"bpekit.dataset.{_MODULES[name]}"), name)
    raise AttributeError(f"module 'bpekit.dataset' has no attribute {name!r}")


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


def __dir__() -> list[str]:
    # dir() and help() list the names served on first use.
    return sorted({*globals(), *__all__})
