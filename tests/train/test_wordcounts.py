"""WordCounts: counting phases, saving, loading and adding shards."""

from __future__ import annotations

from pathlib import Path

import pytest

import bpekit
from bpekit import _core, reference
from tests.conftest import data_path


def test_counts_equal_reference_counts(tmp_path: Path) -> None:
    text = "Hello, world! Hello<|endoftext|> world's end\r\n\n  x"
    path = tmp_path / "t.txt"
    path.write_text(text, newline="")
    counts = bpekit.count_pretokens(path, ["<|endoftext|>"])
    assert counts.to_dict() == dict(reference.count_words(text, ["<|endoftext|>"]))
    assert counts.total == sum(reference.count_words(text, ["<|endoftext|>"]).values())
    assert counts[b" world"] == 2 and b"Hello" in counts and b"<|endoftext|>" not in counts
    assert counts.special_tokens == ["<|endoftext|>"]


def test_most_common_is_deterministic(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("b a b a c")
    assert bpekit.count_pretokens(path).most_common(2) == [(b" a", 2), (b" b", 1)]


def test_save_load_add_shards_trains_like_whole(tmp_path: Path) -> None:
    src = data_path("corpora", "tinystories_v2_train_head_2MiB.txt").read_bytes()
    cut = src.index(b"<|endoftext|>", len(src) // 2)
    (tmp_path / "a.txt").write_bytes(src[:cut])
    (tmp_path / "b.txt").write_bytes(src[cut:])
    whole = bpekit.count_pretokens([tmp_path / "a.txt", tmp_path / "b.txt"], ["<|endoftext|>"])
    a = bpekit.count_pretokens(tmp_path / "a.txt", ["<|endoftext|>"])
    b = bpekit.count_pretokens(tmp_path / "b.txt", ["<|endoftext|>"])
    a.save(tmp_path / "a.wc")
    b.save(tmp_path / "b.wc")
    summed = bpekit.WordCounts.load(tmp_path / "a.wc") + bpekit.WordCounts.load(tmp_path / "b.wc")
    assert summed == whole
    assert len(summed) == len(whole) and summed.total == whole.total
    assert bpekit.train_from_counts(summed, 1000, ["<|endoftext|>"]) == bpekit.train_from_counts(
        whole, 1000, ["<|endoftext|>"]
    )


def test_counts_from_different_patterns_do_not_add(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("hello world")
    with pytest.raises(ValueError, match="different patterns"):
        bpekit.count_pretokens(path) + bpekit.count_pretokens(path, pattern="o200k")


def test_load_rejects_garbage(tmp_path: Path) -> None:
    bad = tmp_path / "bad.wc"
    bad.write_bytes(b"not a counts file")
    with pytest.raises(ValueError, match="not a bpekit word-counts file"):
        bpekit.WordCounts.load(bad)
    good = tmp_path / "good.wc"
    bpekit.WordCounts([(b"ab", 3)]).save(good)
    good.write_bytes(good.read_bytes()[:-1])
    with pytest.raises(ValueError, match="truncated") as truncated:
        bpekit.WordCounts.load(good)
    # A binary file has no lines: the message names the byte offset.
    end = good.stat().st_size
    start = end + 1 - (8 + 4 + 2)  # the record of b"ab" lacks its last byte
    assert str(truncated.value) == (
        f"{good}: file is truncated: it ends at byte offset {end}, "
        f"in word record 0 of 1 (from byte offset {start})"
    )
    with pytest.raises(FileNotFoundError):
        bpekit.WordCounts.load(tmp_path / "missing.wc")
    # A folder is named as a folder, not "not a bpekit word-counts file (too short)".
    with pytest.raises(IsADirectoryError, match="directory"):
        bpekit.WordCounts.load(tmp_path)


def test_most_common_takes_counters_n() -> None:
    counts = bpekit.WordCounts([(b"ab", 3), (b"c", 5)])
    assert counts.most_common(1) == [(b"c", 5)]
    # As collections.Counter: a negative n gives nothing (it raised OverflowError).
    assert counts.most_common(-1) == []


def test_counts_sent_as_bytes_add_up_or_change_nothing() -> None:
    """What a distributed count's reducer does with each unit's counts:
    ``CountsSum.add_bytes`` of ``_to_bytes`` adds exactly; damaged bytes, a total past
    2**64-1 or another pattern are errors that name the bytes and leave the sum as it
    was."""
    a = bpekit.WordCounts([(b" low", 3), (b"er", 2), (b"fifteen-bytes!!", 1), (b"sixteen-bytes!!!", 2)])
    b = bpekit.WordCounts([(b" low", 1), (b"est", 4), (b"", 1), (b"er\0", 6), (b"fifteen-bytes!!\0", 1)])
    total = _core.CountsSum()

    def summed() -> bpekit.WordCounts:
        return bpekit.WordCounts._from_bytes(total.to_bytes())

    assert len(summed()) == 0
    total.add_bytes(a._to_bytes())
    total.add_bytes(b._to_bytes())
    assert summed() == a + b and summed().pattern == a.pattern
    data = b._to_bytes()
    got = summed().to_dict()
    assert got[b"er"] == 2 and got[b"er\0"] == 6 and got[b""] == 1 and got[b"sixteen-bytes!!!"] == 2
    for damaged, why in [
        (data[:-1], "unit 3: cut short in word record 4 of 5"),
        (data + b"x", "unit 3: 1 byte\\(s\\) after its 5 word records"),
        (b"BPEKITWX" + data[8:], "unit 3: not a bpekit word-counts file \\(bad magic\\)"),
    ]:
        with pytest.raises(ValueError, match=why):
            total.add_bytes(damaged, "unit 3")
    huge = bpekit.WordCounts([(b"x", 2**64 - 5)])
    with pytest.raises(OverflowError, match=r"^unit 4: .*pass 2\*\*64-1"):
        total.add_bytes(huge._to_bytes(), "unit 4")
    with pytest.raises(ValueError, match=r"^unit 5: .*different patterns"):
        total.add_bytes(bpekit.WordCounts([(b"x", 1)], pattern="cl100k")._to_bytes(), "unit 5")
    assert summed() == a + b
