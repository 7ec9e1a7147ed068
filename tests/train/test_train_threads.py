"""The merge loop on many threads gives the merges of one thread and of the reference.

The native trainer keeps its pair counts in one shard per thread and splits merges of
2,048 words or more among the threads; neither may change a merge or a tie.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

import bpekit
from bpekit import reference
from tests.conftest import data_path

THREADS = (1, 2, 4)
SPECIALS = ["<|endoftext|>"]
# Few symbols so counts tie often; multi-byte characters that merges split.
ATOMS = ["a", "b", "ab", "aaaa", " ", "  ", "\n", "é", "🙃", "'s", "1", "!", "\u3000", "<|endoftext|>"]


def train_all(counts: dict[bytes, int], size: int, specials: list[str], threads: tuple[int, ...]) -> None:
    """Every thread count gives the reference's vocabulary and merges."""
    want = reference.train_from_counts(counts, size, specials)
    words = bpekit.WordCounts(list(counts.items()))
    for n in threads:
        assert bpekit.train_from_counts(words, size, specials, num_threads=n) == want, f"{n} threads"


@settings(max_examples=60, deadline=None)
@given(text=st.lists(st.sampled_from(ATOMS), max_size=80).map("".join), extra=st.integers(0, 40))
def test_small_texts_on_any_threads_match_reference(text: str, extra: int) -> None:
    # Small merges run on one thread, but on the counts in 2 and 4 shards.
    counts = dict(reference.count_words(text, SPECIALS))
    train_all(counts, 256 + len(SPECIALS) + extra, SPECIALS, THREADS)


# Alphabets whose early pairs are each held by thousands of words: ASCII, and
# multi-byte characters whose bytes are merged before the characters are whole.
ALPHABETS = [b"abcde", b"ab", "aé🙃".encode(), "éè".encode() + b"x"]


@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    alphabet=st.sampled_from(ALPHABETS),
    n_words=st.integers(2_500, 6_000),
    max_len=st.integers(2, 14),
    weights=st.sampled_from([(1,), (0, 1, 2), (1, 1, 2, 3, 7, 40), (1, 10**12)]),
)
def test_large_merges_on_any_threads_match_reference(
    seed: int, alphabet: bytes, n_words: int, max_len: int, weights: tuple[int, ...]
) -> None:
    rng = random.Random(seed)
    counts: dict[bytes, int] = {}
    # Short words over two letters run out before n_words; a bounded number of tries.
    for _ in range(4 * n_words):
        if len(counts) == n_words:
            break
        word = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, max_len)))
        counts[word] = rng.choice(weights)
    train_all(counts, 256 + 40, [], (*THREADS, 8))


def test_shared_corpus_on_any_threads_matches_reference() -> None:
    # 1 MB of a dictionary: 25K distinct words; the first merges touch thousands.
    data = data_path("corpora", "dict_gcide.txt").read_bytes()[:1_000_000]
    text = data.decode("utf-8", "ignore")
    counts = dict(reference.count_words(text, SPECIALS))
    holders = Counter(pair for word in counts for pair in set(itertools.pairwise(word)))
    assert max(holders.values()) > 2_048  # so that the threads share merges
    train_all(counts, 256 + 1 + 120, SPECIALS, (*THREADS, 3, 8))
