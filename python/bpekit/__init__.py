"""bpekit: exact, fast byte-level BPE: train vocabularies, encode text, build token datasets."""

from bpekit._core import __version__, pretokenize
from bpekit.encodings import get_encoding, list_encoding_names
from bpekit.tokenizer import Tokenizer
from bpekit.training import WordCounts, count_pretokens, train_bpe, train_from_counts

__all__ = [
    "Tokenizer",
    "WordCounts",
    "__version__",
    "count_pretokens",
    "get_encoding",
    "list_encoding_names",
    "pretokenize",
    "train_bpe",
    "train_from_counts",
]
