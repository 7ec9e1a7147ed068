"""bpekit: exact, fast byte-level BPE: train vocabularies, encode text, build token datasets.

Start with ``train_bpe`` (or ``count_pretokens`` then ``train_from_counts``), ``Tokenizer``
and ``get_encoding``, and ``encode_dataset`` / ``TokenDataset`` / ``get_batch``.

The package's modules, in layers, lowest first. A module imports only modules of its
own layer or lower ones (inside functions and for type hints too), never the package
``bpekit`` itself, and no files import each other, directly or in a ring;
``scripts/check_py_layers.py`` reads this list and checks all three.

1. ``_core``, ``_atomic``, ``_lock``, ``_paths``, ``_stores``, ``_progress``, ``_threads``,
   ``_utf8``, ``_text_rules``, ``_encode_rules``, ``_offsets``, ``_tokenizer_args``,
   ``_openai_models``, ``patterns``, ``torch``: the native core (Rust) and the helpers
   that need nothing else of bpekit: atomic files, output locks, paths, URLs of object
   stores (listed and read through fsspec), progress bars, argument checks,
   tiktoken's text and special-token rules, offsets around the core, the model table, the named pre-tokenizer
   patterns, minbpe's BPE as tensor operations.
2. ``options``, ``reference``: the typed options, each defined once; the readable
   pure-Python BPE that the fast paths are tested against.
3. ``sources``, ``_arrow``, ``_unstable``, ``formats``, ``viz``: inputs -> documents;
   tiktoken's unstable-tail encodings; tokenizer file formats, which read and write the
   core encoder and plain data; the visualizer, which takes any tokenizer-like object.
4. ``tokenizer``, ``training``: ``Tokenizer``, the API object over the core encoder
   (it loads, saves and shows itself through the layer below); training.
5. ``encodings``, ``models``, ``minbpe``, ``decode_stream``, ``hf_transformers``: OpenAI's
   encodings and model names, minbpe's classes, streaming decode, transformers' fast
   tokenizers on bpekit, all built on ``Tokenizer``.
6. ``dataset``, ``datasets``: token datasets: the on-disk format, the writer, the
   reader ``TokenDataset`` and ``get_batch`` (``datasets``: the old name).
7. ``distributed``: counting and dataset writing over a process pool or Ray.
8. ``cli``: the ``bpekit`` command.
9. ``bpekit``: this module, the public face.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bpekit._core import __version__, pretokenize
from bpekit.decode_stream import DecodeStream
from bpekit.encodings import get_encoding, list_encoding_names, load_tokenizer
from bpekit.models import encoding_for_model, encoding_name_for_model
from bpekit.tokenizer import Tokenizer
from bpekit.training import WordCounts, count_pretokens, train_bpe, train_from_counts

if TYPE_CHECKING:
    from bpekit.dataset import TokenDataset, encode_dataset, encode_file, get_batch, load_tokens
    from bpekit.hf_transformers import patch_transformers, transformers_patched, unpatch_transformers

# The dataset helpers need numpy; importing it costs ~24 MiB of resident memory,
# which a training run never needs, so they load on first use.
_LAZY = {
    "encode_dataset": "dataset",
    "encode_file": "dataset",
    "get_batch": "dataset",
    "load_tokens": "dataset",
    "TokenDataset": "dataset",
    # transformers' tokenizers on bpekit: imports transformers only when patching.
    "patch_transformers": "hf_transformers",
    "unpatch_transformers": "hf_transformers",
    "transformers_patched": "hf_transformers",
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
    "patch_transformers",
    "pretokenize",
    "train_bpe",
    "train_from_counts",
    "transformers_patched",
    "unpatch_transformers",
]
