"""Reliability of loading: vocabularies load in time near-linear in the size
of their tokens and special tokens, whatever their number and length (items 13, 14), and
word counts never wrap, whether added or loaded (item 11).

Each timed case runs in a fresh interpreter with a timeout, so that a regression fails
rather than hangs, and asserts a bound ten times or more below what quadratic loading
takes on a 2-core machine, so that a slow machine does not flake.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import data_path

import bpekit

BYTES = "V = {i: bytes([i]) for i in range(256)}\n"


def _timed(setup: str, timed: str, timeout: float = 120) -> float:
    """Seconds that ``timed`` took, run after ``setup`` in a fresh interpreter; both
    are Python source, with ``bpekit`` imported."""
    code = "\n".join(
        [
            "import time, bpekit",
            textwrap.dedent(setup),
            "start = time.perf_counter()",
            textwrap.dedent(timed),
            "print(time.perf_counter() - start)",
        ]
    )
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"took over {timeout} s (a quadratic step?):\n{timed}")
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout.split()[-1])


def test_many_special_tokens_build_quickly() -> None:
    # Was ~10 s: each special token was compared with the whole vocabulary, and with
    # every special token before it.
    seconds = _timed(
        BYTES + "names = [f'<|s{i}|>' for i in range(60_000)]",
        """
        tok = bpekit.Tokenizer(V, [], names)
        assert tok.encode("a<|s59999|>") == [97, 256 + 59_999]
        """,
    )
    assert seconds < 2


def test_many_disallowed_special_tokens_encode_quickly() -> None:
    # Was ~9 s an encode: the core picked the disallowed tokens out of the 60K by
    # comparing each with every name passed.
    seconds = _timed(
        BYTES + "tok = bpekit.Tokenizer(V, [], [f'<|s{i}|>' for i in range(60_000)])",
        """
        assert tok.encode("hi", allowed_special=set()) == [104, 105]
        half = {f'<|s{i}|>' for i in range(0, 60_000, 2)}
        assert tok.encode("<|s2|>", allowed_special=half, disallowed_special=()) == [258]
        """,
    )
    assert seconds < 2


def test_periodic_special_token_builds_quickly() -> None:
    # Was ~27 s: aho-corasick's DFA builder walks failure links as long as the token.
    seconds = _timed(
        BYTES,
        """
        tok = bpekit.Tokenizer(V, [], ["x" * 100_000])
        assert tok.encode("x" * 200_001) == [256, 256, 120]
        """,
    )
    assert seconds < 2


def test_ranks_with_a_1_mb_token_load_quickly() -> None:
    # Was ~23 s: every split of the token was looked up by hashing its parts.
    seconds = _timed(
        "ranks = {bytes([i]): i for i in range(256)} | {b'x' * 500_000: 256, b'x' * 1_000_000: 257}",
        """
        tok = bpekit.Tokenizer.from_ranks(ranks, {}, pattern="gpt2")
        # A whole piece that is a token is looked up, as tiktoken does.
        assert tok.encode("x" * 1_000_000) == [257]
        """,
    )
    assert seconds < 2


def _folder_of_o200k_vocab(tmp_path: Path) -> Path:
    """A folder with o200k's vocab.json, an empty merges.txt and no bpekit.json."""
    data_path("encodings", "o200k_base.tiktoken")
    import bpekit
    from bpekit.formats.gpt2 import vocab_merges_bytes

    vocab_json, _ = vocab_merges_bytes(bpekit.get_encoding("o200k_base").vocab, [])
    (tmp_path / "vocab.json").write_bytes(vocab_json)
    (tmp_path / "merges.txt").write_text("")
    return tmp_path


@pytest.mark.parametrize("specials", ["inferred", "every multi-byte UTF-8 token"])
def test_o200k_vocab_without_merges_loads_quickly(tmp_path: Path, specials: str) -> None:
    # Hung for minutes: ~198K tokens (all of o200k's multi-byte UTF-8 tokens, the
    # special tokens inferred for such a folder) each compared with the vocabulary
    # and the special tokens before it. Now ~1 s, most of it reading vocab.json; the
    # second case passes them explicitly, whatever the inference does.
    folder = _folder_of_o200k_vocab(tmp_path)
    given = "None"
    if specials != "inferred":
        given = "[t.decode() for t in vocab.values() if len(t) > 1 and _utf8(t)]"
    seconds = _timed(
        f"""
        from bpekit.formats.gpt2 import load_vocab

        def _utf8(b):
            try:
                b.decode()
            except UnicodeDecodeError:
                return False
            return True

        folder = {str(folder)!r}
        vocab = load_vocab(folder + "/vocab.json")
        given = {given}
        assert given is None or len(given) > 150_000
        """,
        """
        tok = bpekit.load_tokenizer(folder, special_tokens=given)
        assert tok.decode(tok.encode("hello world")) == "hello world"
        """,
    )
    assert seconds < 10


# ---- item 11: word counts never wrap --------------------------------------------------

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
    # (a, a) occurs 2**63 * 2 = 2**64 times: it wrapped to 0, and (b, c) was merged.
    counts = bpekit.WordCounts([(b"aaa", 2**63), (b"bc", 1)])
    with pytest.raises(OverflowError, match="too large to train on"):
        bpekit.train_from_counts(counts, 257, [])
    _, merges = bpekit.train_from_counts(bpekit.WordCounts([(b"ab", MAX)]), 257, [])
    assert merges == [(b"a", b"b")]
