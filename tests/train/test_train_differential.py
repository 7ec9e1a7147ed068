"""Native trainer == pure-Python reference, on random texts built to tie and on real files."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit import reference
from tests.conftest import data_path

SPECIALS = ["<|endoftext|>", "<|end", "<|endoftext|><|endoftext|>", "[X]"]
# Few distinct symbols so counts tie often; runs, CRLF, multi-byte UTF-8, rare whitespace.
ATOMS = [
    "a",
    "b",
    "ab",
    "aaaa",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\r",
    "é",
    "🙃",
    "'s",
    "1",
    "23",
    "!",
    ".",
    "\u3000",
    "\t",
]

texts = st.lists(st.sampled_from(ATOMS + SPECIALS), max_size=60).map("".join)


def write(tmp: Path, text: str) -> Path:
    path = tmp / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    return path


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, extra=st.integers(0, 40), specials=st.sampled_from([[], SPECIALS[:1], SPECIALS]))
def test_random_texts_match_reference(text: str, extra: int, specials: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), text)
        size = 256 + len(specials) + extra
        want = reference.train_bpe(path, size, specials)
        assert bpekit.train_bpe(path, size, specials) == want
        assert bpekit.train_bpe(path, size, specials, num_threads=2, chunk_size=7) == want


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=200), extra=st.integers(0, 30))
def test_arbitrary_unicode_matches_reference(text: str, extra: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
        assert bpekit.train_bpe(path, 256 + extra) == reference.train_bpe(path, 256 + extra)


@pytest.mark.parametrize(
    ("parts", "size", "limit"),
    [
        (("corpora", "tinystories_v2_train_head_2MiB.txt"), 700, 600_000),
        (("multilingual", "tinystories_ru_sample.txt"), 600, 300_000),
        (("multilingual", "fortunes_zh.txt"), 600, 300_000),
        (("corpora", "gutenberg_16215_jack_sheppard.txt"), 600, 300_000),  # CRLF and lone CR
        (("multilingual", "udhr2.jsonl"), 600, 300_000),
    ],
)
def test_real_files_match_reference(tmp_path: Path, parts: tuple[str, ...], size: int, limit: int) -> None:
    data = data_path(*parts).read_bytes()[:limit]
    path = tmp_path / "slice.txt"
    path.write_bytes(data.decode("utf-8", "ignore").encode("utf-8"))
    specials = ["<|endoftext|>"]
    want = reference.train_bpe(path, size, specials)
    assert bpekit.train_bpe(path, size, specials) == want


def test_threads_and_chunk_sizes_do_not_change_output() -> None:
    path = data_path("corpora", "tinystories_v2_train_head_2MiB.txt")
    want = bpekit.train_bpe(path, 2000, ["<|endoftext|>"], num_threads=1)
    for threads, chunk in [(2, 0), (2, 4096), (1, 100_000), (2, 1)]:
        assert bpekit.train_bpe(path, 2000, ["<|endoftext|>"], num_threads=threads, chunk_size=chunk) == want


def test_no_special_tokens_cuts_at_newlines_exactly(tmp_path: Path) -> None:
    # Without a document separator the chunks are cut at safe newlines; the result
    # must equal one chunk and the reference.
    data = data_path("corpora", "nltk_abc_news.txt").read_bytes()[:400_000]
    path = tmp_path / "news.txt"
    path.write_bytes(data)
    want = reference.train_bpe(path, 500, [])
    for chunk in (0, 1000, 1 << 30):
        assert bpekit.train_bpe(path, 500, [], num_threads=2, chunk_size=chunk) == want


@pytest.mark.parametrize("pattern", ["cl100k", "o200k", r"\w+|\s+|[^\w\s]+"])
def test_other_patterns_match_reference(tmp_path: Path, pattern: str) -> None:
    data = data_path("corpora", "taylorswift_wikipedia_en.txt").read_bytes()
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    want = reference.train_bpe(path, 400, [], pattern=pattern)
    assert bpekit.train_bpe(path, 400, [], pattern=pattern, num_threads=2, chunk_size=5000) == want


def test_large_merges_shared_by_threads_match_reference() -> None:
    """Merges of thousands of words are split among threads in runs of their words: the
    merges equal the reference's, whatever the threads. Words over a five-letter
    alphabet make every early pair a posting of thousands of words (the native
    trainer splits merges of 2,048 words or more), ties included."""
    import random

    rng = random.Random(26)
    counts: dict[bytes, int] = {}
    while len(counts) < 12_000:
        word = bytes(rng.choice(b"abcde") for _ in range(rng.randint(2, 12)))
        counts[word] = rng.choice([1, 1, 2, 3, 7, 40])
    words = bpekit.WordCounts(list(counts.items()))
    expected = reference.train_from_counts(counts, 256 + 60, [])
    for threads in (1, 2, 3):
        assert bpekit.train_from_counts(words, 256 + 60, num_threads=threads) == expected, threads
