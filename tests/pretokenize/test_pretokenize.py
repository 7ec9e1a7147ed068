"""Exactness of the pre-tokenizer scanners: each named pattern's scanner gives exactly the
pieces the pinned ``regex`` package gives for the pattern's text (``regex.findall``), and
the same splits as tiktoken, on random strings weighted toward the hard cases, on every
code point, and on every file of ../shared/data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import regex
from _hard_cases import ATOMS, NOT_WHITESPACE, WHITESPACE
from _shared_data import data_path, tiktoken_encoding
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit import _core, patterns

NAMES = ["gpt2", "cl100k", "o200k"]
COMPILED = {name: regex.compile(patterns.resolve(name)) for name in NAMES}


def regex_pieces(name: str, text: str) -> list[str]:
    return COMPILED[name].findall(text)


def assert_same(name: str, text: str) -> None:
    got = bpekit.pretokenize(text, name)
    want = regex_pieces(name, text)
    if got != want:
        i = next(
            (k for k, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want))
        )
        pytest.fail(
            f"{name} on {text[:200]!r}: piece {i}: scanner {got[i : i + 3]!r}, regex {want[i : i + 3]!r}"
        )


# ---------------------------------------------------------------- random strings


atom = st.one_of(
    st.sampled_from(ATOMS),
    st.sampled_from([" ", " ", "  ", "a", "x", "'", "\n"]),
    st.builds(lambda w, n: w * n, st.sampled_from(WHITESPACE), st.integers(1, 6)),
    st.characters(exclude_categories=["Cs"]),
)
texts = st.lists(atom, max_size=40).map("".join)
SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=texts)
@example(text="some text that i'll pre-tokenize  x\n\n")
@example(text="\u3000漢字 \u0301A \u0301\u0301 中A ʰA")
@example(text="x  \n  \ny\r\n\r\n \r")
def test_scanner_matches_regex(name, text):
    assert_same(name, text)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_scanner_matches_the_regex_engine(name, text):
    """The generic engine (fancy-regex, what tiktoken runs) on the same pattern text."""
    wrapped = f"(?:{patterns.resolve(name)})"
    assert _core.pretokenizer_engine(wrapped) == "regex"
    assert bpekit.pretokenize(text, name) == bpekit.pretokenize(text, wrapped)


@pytest.mark.parametrize("encoding", ["r50k_base", "cl100k_base", "o200k_base"])
@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_pieces_encode_like_tiktoken(encoding, text):
    """tiktoken has no public split, so check what it implies: encoding our pieces one
    by one gives tiktoken's tokens for the whole text (tokens never cross its pieces)."""
    enc = tiktoken_encoding(encoding)
    name = {"r50k_base": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}[encoding]
    ours = [
        t
        for piece in bpekit.pretokenize(text, name)
        for t in enc._core_bpe.encode_single_piece(piece.encode())
    ]
    assert ours == enc.encode_ordinary(text)


# ---------------------------------------------------------------- systematic cases


@pytest.mark.parametrize("name", NAMES)
def test_whitespace_runs_before_everything(name):
    """Runs of 1-4 of each (non-)whitespace character before letters, digits,
    punctuation, other whitespace, a mark, and the end of the text."""
    after = ["a", "A", "ǅ", "中", "1", "٣", "!", "/", "'s", "\u0301", "\n", "\r\n", " ", "\t", ""]
    parts = []
    for w in WHITESPACE + NOT_WHITESPACE:
        for n in range(1, 5):
            for a in after:
                parts.append(f"x{w * n}{a}")
    for text in parts:  # one by one, so the end of the text follows each run too
        assert_same(name, text)
    assert_same(name, "".join(parts))


@pytest.mark.parametrize("name", NAMES)
def test_every_code_point_in_context(name):
    """Each code point after an apostrophe (the case-folded contractions), after a space
    and a letter, and before a mark: all 1.1M in one string per context."""
    cps = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for template in ["'{}", " {}a\u0301{} "]:
        assert_same(name, "".join(template.format(c, c) for c in cps))


@pytest.mark.parametrize("name", NAMES)
def test_long_inputs(name):
    text = ("The quick brown fox's 12345 jumps!!\r\n\r\n   über ǅ 中文  \t" * 2000) + " " * 5000
    assert_same(name, text)
    assert_same(name, "a" * 100_000 + "1" * 100_001 + "!" * 100_002 + " " * 100_003 + "b")


KERNEL_CHECK = """
import json, os, sys
import regex
import bpekit
from bpekit import _core, patterns
assert _core.scanner_kernel() == os.environ["BPEKIT_SIMD"], _core.scanner_kernel()
text = sys.stdin.read()
bad = [n for n in ["gpt2", "cl100k", "o200k"]
       if bpekit.pretokenize(text, n) != regex.findall(patterns.resolve(n), text)]
print(json.dumps(bad))
"""


@pytest.mark.parametrize("kernel", ["baseline", "avx2"])
def test_kernel_when_forced(kernel):
    """The SSE2 block kernel (what CPUs without AVX2 run) is the one in use with
    BPEKIT_SIMD=baseline, AVX2 with BPEKIT_SIMD=avx2 where the CPU has AVX2 (also
    when it has AVX-512), and each gives the regex's pieces on mixed ASCII-heavy text."""
    # The best kernel, whatever this process's BPEKIT_SIMD asks for.
    env = {k: v for k, v in os.environ.items() if k != "BPEKIT_SIMD"}
    probe = "from bpekit import _core; print(_core.scanner_kernel())"
    best = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    assert best in ("avx512", "avx2", "baseline")
    if kernel == "avx2" and best == "baseline":
        pytest.skip("this CPU lacks AVX2 (or BMI1, BMI2, LZCNT, POPCNT, which the kernel uses)")
    text = (
        "The quick brown fox's 12345 jumps!!\r\n\r\n   über ǅ 中文  \t It'S camelCase/path\n" * 500
    ) + " " * 70
    proc = subprocess.run(
        [sys.executable, "-c", KERNEL_CHECK],
        input=text,
        capture_output=True,
        text=True,
        env=dict(env, BPEKIT_SIMD=kernel),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_pretokenize_api():
    assert bpekit.pretokenize("I'll go  now") == ["I", "'ll", " go", " ", " now"]
    assert bpekit.pretokenize("I'LL go", "cl100k") == ["I", "'LL", " go"]
    assert bpekit.pretokenize("I'LL go", "o200k_base") == ["I'LL", " go"]
    assert bpekit.pretokenize("", "o200k") == []
    for name in NAMES:
        assert _core.pretokenizer_engine(name) == name
    assert _core.pretokenizer_engine(r"\S+|\s+") == "regex"
    with pytest.raises(ValueError):
        bpekit.pretokenize("x", "(")


# ---------------------------------------------------------------- the data files

CHUNK = 1 << 20
# After a lone "\n" that follows printable ASCII and precedes an ASCII letter or digit, every
# named pattern has a piece boundary that looks no further (a narrower rule than the core's
# line cuts, src/pretokenize/line_cut.rs, kept apart from them as these tests check the core).
SAFE_CUT = re.compile(r"(?<=[\x21-\x7e]\n)(?=[A-Za-z0-9])")


def chunks(text: str, limit: int | None = None):
    """``text`` in pieces of about CHUNK characters, cut only where no piece is cut."""
    start, end = 0, len(text) if limit is None else min(len(text), limit)
    while start < end:
        m = SAFE_CUT.search(text, start + CHUNK)
        stop = m.start() if m and m.start() < end else end
        yield text[start:stop]
        start = stop


def data_files():
    root = data_path()
    files = []
    for sub in ["corpora", "multilingual", "cs336"]:
        files += sorted(p for p in (root / sub).iterdir() if p.is_file())
    return files


def data_params():
    try:
        files = data_files()
    except pytest.skip.Exception:
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared/data is missing"))]
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in files]


@pytest.mark.parametrize("path", data_params())
def test_data_file_matches_regex(path):
    """gpt2 on every byte of every file; cl100k and o200k on the first 2 MB of each
    (the whole suite must stay fast: `regex` runs at ~7 MB/s on them). JSONL files are
    checked as raw text and as their decoded "text" fields."""
    raw = path.read_text(encoding="utf-8")
    texts = [raw]
    if path.suffix == ".jsonl":
        texts.append("\n<|endoftext|>\n".join(json.loads(line)["text"] for line in raw.splitlines() if line))
    for text in texts:
        for name, limit in [("gpt2", None), ("cl100k", 2 << 20), ("o200k", 2 << 20)]:
            for chunk in chunks(text, limit):
                assert_same(name, chunk)


# ---------------------------------------------------------------- counting


@pytest.mark.parametrize("name", NAMES)
def test_count_pretokens_counts_exactly_the_pieces(tmp_path, name):
    """count_pretokens (packed keys, prefetching table, merged across threads and chunks)
    equals a Counter of regex's pieces of each text between special tokens."""
    import collections
    import random

    rng = random.Random(7)
    docs = []
    for _ in range(400):
        words = [rng.choice(ATOMS) for _ in range(rng.randint(0, 60))]
        docs.append("".join(words) + rng.choice(["", "\n", " x" * 20, "a" * 40]))
    text = "<|endoftext|>".join(docs)
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    want = collections.Counter()
    for doc in text.split("<|endoftext|>"):
        want.update(p.encode() for p in regex_pieces(name, doc))
    for threads, chunk in [(1, 0), (2, 0), (2, 1000)]:
        got = bpekit.count_pretokens(
            path, ["<|endoftext|>"], pattern=name, num_threads=threads, chunk_size=chunk
        )
        assert got.to_dict() == dict(want), (threads, chunk)
