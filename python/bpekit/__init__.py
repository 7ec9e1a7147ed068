"""bpekit: exact, fast byte-level BPE: train vocabularies, encode text, build token datasets."""

from bpekit._core import __version__, pretokenize
from bpekit.training import WordCounts, count_pretokens, train_bpe, train_from_counts

__all__ = [
    "WordCounts",
    "__version__",
    "count_pretokens",
    "pretokenize",
    "train_bpe",
    "train_from_counts",
]
