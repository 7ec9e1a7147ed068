"""bpekit: exact, fast byte-level BPE: train vocabularies, encode text, build token datasets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bpekit._core import __version__, pretokenize
from bpekit.decode_stream import DecodeStream
from bpekit.encodings import get_encoding, list_encoding_names, load_tokenizer
from bpekit.models import encoding_for_model, encoding_name_for_model
from bpekit.tokenizer import Tokenizer
from bpekit.training import WordCounts, count_pretokens, train_bpe, train_from_counts

if TYPE_CHECKING:
    from bpekit.dataset_writer import encode_dataset
    from bpekit.datasets import encode_file, get_batch, load_tokens
    from bpekit.token_dataset import TokenDataset

# The dataset helpers need numpy; importing it costs ~24 MiB of resident memory,
# which a training run never needs, so they load on first use.
_LAZY = {
    "encode_dataset": "dataset_writer",
    "encode_file": "datasets",
    "get_batch": "datasets",
    "load_tokens": "datasets",
    "TokenDataset": "token_dataset",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"bpekit.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'bpekit' has no attribute {name!r}")


__all__ = [
    "DecodeStream",
    "TokenDataset",
    "Tokenizer",
    "WordCounts",
    "__version__",
    "count_pretokens",
    "encode_dataset",
    "encode_file",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_batch",
    "get_encoding",
    "list_encoding_names",
    "load_tokenizer",
    "load_tokens",
    "pretokenize",
    "train_bpe",
    "train_from_counts",
]
