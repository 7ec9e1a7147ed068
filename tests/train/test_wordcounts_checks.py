"""WordCounts are checked: a word that is not bytes is named; counts never wrap past
2**64-1, whether added, loaded from a file or trained on; and a word-counts file with
bytes after its last record, or cut short, is an error saying where."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import bpekit


def test_word_counts_name_a_word_that_is_not_bytes() -> None:
    # Not PyO3's "Can't extract `str` to `Vec`", which names neither the item nor
    # what was expected.
    with pytest.raises(TypeError, match=r"counts\[1\] is \('ab', 1\): a word must be bytes, not str"):
        bpekit.WordCounts([(b"a", 1), ("ab", 1)])  # type: ignore[list-item]


MAX = 2**64 - 1


def test_adding_counts_past_2_64_raises_overflow_error() -> None:
    full = bpekit.WordCounts([(b"x", MAX)])
    with pytest.raises(OverflowError, match=r"total count pass 2\*\*64-1: 18446744073709551615 \+ 1"):
        full + bpekit.WordCounts([(b"x", 1)])
    # Other words, whose total would wrap; in place, the counts are left unchanged.
    half = bpekit.WordCounts([(b"x", 2**63)])
    with pytest.raises(OverflowError):
        half.update(bpekit.WordCounts([(b"y", 2**63)]))
    assert (half.to_dict(), half.total) == ({b"x": 2**63}, 2**63)
    half.update(bpekit.WordCounts([(b"x", 2**63 - 1)]))
    assert half[b"x"] == half.total == MAX
    # A word given twice to the constructor is added up, checked as well.
    with pytest.raises(OverflowError, match="at pair #1"):
        bpekit.WordCounts([(b"x", MAX), (b"x", 1)])
    with pytest.raises(OverflowError, match="at pair #1"):
        bpekit.WordCounts([(b"x", MAX), (b"y", 1)])


def _counts_file(n: int, records: list[tuple[int, bytes]], tail: bytes = b"") -> bytes:
    """A word-counts file (docs/wordcounts.md) of pattern ``p``, no special tokens, ``n``
    words by its header, then ``records`` and ``tail``. Its header is 29 bytes."""
    out = b"BPEKITWC" + struct.pack("<II", 1, 1) + b"p" + struct.pack("<IQ", 0, n)
    for count, word in records:
        out += struct.pack("<QI", count, len(word)) + word
    return out + tail


def test_load_rejects_counts_that_wrap_naming_the_record(tmp_path: Path) -> None:
    path = tmp_path / "crafted.wc"
    path.write_bytes(_counts_file(2, [(MAX - 1, b"x"), (1, b"y")]))
    assert bpekit.WordCounts.load(path).total == MAX
    for second in [b"x", b"y"]:  # the same word (its count wraps) or another (the total)
        path.write_bytes(_counts_file(2, [(MAX, b"x"), (1, second)]))
        with pytest.raises(ValueError) as e:
            bpekit.WordCounts.load(path)
        assert str(e.value) == (
            f"{path}: word record 1 of 2 (byte offset 42): its count 1 makes the total count pass 2**64-1"
        )


def test_load_rejects_bytes_after_the_last_record(tmp_path: Path) -> None:
    path = tmp_path / "tail.wc"
    path.write_bytes(_counts_file(1, [(3, b"x")], b"\0\0"))
    with pytest.raises(ValueError) as e:
        bpekit.WordCounts.load(path)
    assert (
        str(e.value)
        == f"{path}: 2 byte(s) after its 1 word records, from byte offset 42: the file is corrupt"
    )
    # A header that undercounts its records, and a saved file with bytes appended.
    path.write_bytes(_counts_file(1, [(3, b"x"), (4, b"y")]))
    with pytest.raises(ValueError, match="13 byte\\(s\\) after its 1 word records, from byte offset 42"):
        bpekit.WordCounts.load(path)
    saved = tmp_path / "saved.wc"
    bpekit.WordCounts([(b"ab", 3)]).save(saved)
    size = saved.stat().st_size
    saved.write_bytes(saved.read_bytes() + b"\n")
    with pytest.raises(ValueError, match=f"1 byte\\(s\\) after its 1 word records, from byte offset {size}"):
        bpekit.WordCounts.load(saved)


def test_load_says_where_a_file_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "cut.wc"
    path.write_bytes(_counts_file(2, [(3, b"x"), (4, b"yy")])[:-1])
    with pytest.raises(ValueError) as e:
        bpekit.WordCounts.load(path)
    assert str(e.value) == (
        f"{path}: file is truncated: it ends at byte offset 55, in word record 1 of 2 (from byte offset 42)"
    )


def test_training_on_counts_whose_pair_counts_would_wrap_raises_overflow_error() -> None:
    # (a, a) occurs 2**63 * 2 = 2**64 times: a u64 count would wrap to 0, and (b, c)
    # would be merged.
    counts = bpekit.WordCounts([(b"aaa", 2**63), (b"bc", 1)])
    with pytest.raises(OverflowError, match="too large to train on"):
        bpekit.train_from_counts(counts, 257, [])
    _, merges = bpekit.train_from_counts(bpekit.WordCounts([(b"ab", MAX)]), 257, [])
    assert merges == [(b"a", b"b")]
