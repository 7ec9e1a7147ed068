"""bpekit: exact, fast byte-level BPE: train vocabularies, encode text, build token datasets."""

from bpekit._core import __version__, pretokenize
from bpekit.datasets import encode_file, get_batch, load_tokens
from bpekit.encodings import get_encoding, list_encoding_names, load_tokenizer
from bpekit.tokenizer import Tokenizer
from bpekit.training import WordCounts, count_pretokens, train_bpe, train_from_counts

__all__ = [
    "Tokenizer",
    "WordCounts",
    "__version__",
    "count_pretokens",
    "encode_file",
    "get_batch",
    "get_encoding",
    "list_encoding_names",
    "load_tokenizer",
    "load_tokens",
    "pretokenize",
    "train_bpe",
    "train_from_counts",
]
