"""``encode_iterable`` yields exactly ``encode`` of the joined text, for any split, in
memory bounded independently of the input length."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from adapters import get_tokenizer
from conftest import bpekit_encoding, data_path

from bpekit.formats.gpt2 import load_vocab_merges

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tok():
    vocab, merges = load_vocab_merges(
        data_path("cs336", "gpt2_vocab.json"), data_path("cs336", "gpt2_merges.txt")
    )
    return get_tokenizer(vocab, merges, [EOT, EOT + EOT, "<|x|>"])


def _splits(text: str, rnd: random.Random) -> dict[str, list[str]]:
    """Ways to cut ``text``: by lines, random sizes, every char, and at tricky places."""
    out = {"lines": text.splitlines(keepends=True), "chars": list(text), "whole": [text]}
    for k in range(3):
        cuts, i = [], 0
        while i < len(text):
            j = min(len(text), i + rnd.randint(1, 40 * (k + 1)))
            cuts.append(text[i:j])
            i = j
        out[f"random{k}"] = cuts
    for needle in (EOT, "   ", "\n\n", "Hello", "🙃"):
        at = text.find(needle)
        if at >= 0:
            mid = at + len(needle) // 2 + (1 if len(needle) == 1 else 0)
            out[f"inside {needle!r}"] = [text[:mid], text[mid:]]
    return out


TEXTS = [
    "Hello there.\nWorld   <|endoftext|><|endoftext|> and\n\nmore<|endoftext|>x\nYes  \n",
    "no newline at all, just words and <|x|> specials<|endoftext|>",
    "Once upon a time.\nThe end.\n\n\n   \n<|endoftext|>\nHello 🙃🙃\nNext line1\n2nd\n",
    "<|endoftext|>",
    "<|endoftext|>\n\n",
    "\n\n\n",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_any_split_equals_encode(tok, text: str) -> None:
    expected = tok.encode(text)
    for how, parts in _splits(text, random.Random(len(text))).items():
        assert "".join(parts) == text
        assert list(tok.encode_iterable(parts)) == expected, how


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_real_text_random_chunks(name: str) -> None:
    enc = bpekit_encoding(name)
    text = data_path("corpora", "tinystories_v2_train_head_2MiB.txt").read_text(encoding="utf-8")[:300_000]
    text += data_path("multilingual", "fortunes_zh.txt").read_text(encoding="utf-8")[:100_000]
    expected = enc.encode(text, allowed_special="all")
    rnd = random.Random(1)
    parts, i = [], 0
    while i < len(text):
        j = min(len(text), i + rnd.randint(1, 3000))
        parts.append(text[i:j])
        i = j
    assert list(enc.encode_iterable(parts, allowed_special="all")) == expected
    assert list(enc.encode_iterable(text.splitlines(keepends=True), allowed_special="all")) == expected


def test_disallowed_special_raises_like_encode() -> None:
    enc = bpekit_encoding("gpt2")
    with pytest.raises(ValueError, match="disallowed special token"):
        list(enc.encode_iterable(["hello <|endof", "text|> world"]))


def test_buffer_stays_small(tok) -> None:
    # Internal check: after each line only the unfinished tail is buffered.
    from bpekit import _core  # noqa: F401

    stream = tok._core.stream(None, [])
    for _ in range(10_000):
        stream.feed("Once upon a time there was a cat.\n")
    assert stream.pending < 1000


MEMORY_SCRIPT = textwrap.dedent(
    """
    import resource, sys
    sys.path.insert(0, sys.argv[4])
    from adapters import get_tokenizer
    from bpekit.formats.gpt2 import load_vocab_merges

    vocab, merges = load_vocab_merges(sys.argv[1], sys.argv[2])
    tok = get_tokenizer(vocab, merges, ["<|endoftext|>"])
    path = sys.argv[3]

    def run(limit_items=None):
        n = h = 0
        with open(path, encoding="utf-8") as f:
            for i in tok.encode_iterable(f):
                n += 1
                h = (h * 1000003 + i) & 0xFFFFFFFFFFFF
                if limit_items is not None and n >= limit_items:
                    break
        return n, h

    run(200_000)  # warm up: allocator pools, caches
    rss = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
    # As CS336's test_encode_iterable_memory_usage: address space = current RSS + 1 MB.
    resource.setrlimit(resource.RLIMIT_AS, (rss + 1_000_000, resource.RLIM_INFINITY))
    n, h = run()
    print(n, h)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is Linux-only here")
def test_encode_iterable_memory_usage(tok, tmp_path: Path) -> None:
    stories = data_path("corpora", "tinystories_v2_train_head_2MiB.txt").read_text(encoding="utf-8")
    text = ""
    while len(text) < 5_000_000:
        text += stories
    text = text[:5_000_000]
    path = tmp_path / "tinystories_sample_5M.txt"
    path.write_text(text, encoding="utf-8")
    vocab_path = data_path("cs336", "gpt2_vocab.json")
    merges_path = data_path("cs336", "gpt2_merges.txt")
    here = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(vocab_path), str(merges_path), str(path), here],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    vocab, merges = load_vocab_merges(vocab_path, merges_path)
    ids = get_tokenizer(vocab, merges, [EOT]).encode(path.read_text(encoding="utf-8"))
    h = 0
    for i in ids:
        h = (h * 1000003 + i) & 0xFFFFFFFFFFFF
    assert proc.stdout.split() == [str(len(ids)), str(h)]


# Characters around line ends that matter for where a stream may cut: whitespace of
# all kinds (U+3000, U+0085, U+001C), "/" (o200k's punctuation runs take "\n/"),
# punctuation, CJK, digits, apostrophes, CR.
_PIECES = [
    *"ab Z9'./-\n\n\r\t",
    "\u3000",
    "\x85",
    "\x1c",
    "中文",
    "。",
    "🙃",
    "<|endoftext|>",
    "don't",
    "\n/",
]


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_random_splits_near_newlines(name: str) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    enc = bpekit_encoding(name)

    @settings(max_examples=300, deadline=None)
    @given(
        parts=st.lists(st.sampled_from(_PIECES), max_size=40),
        cuts=st.lists(st.integers(0, 200), max_size=8),
    )
    def check(parts: list[str], cuts: list[int]) -> None:
        text = "".join(parts)
        points = sorted({min(c, len(text)) for c in cuts})
        chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
        expected = enc.encode(text, allowed_special="all")
        assert list(enc.encode_iterable(chunks, allowed_special="all")) == expected

    check()


def test_buffer_stays_small_for_any_script() -> None:
    enc = bpekit_encoding("o200k_base")
    stream = enc._core.stream(None, [])
    lines = ["这是一个很长的中文句子，没有空格。\n", "Привет, мир!\n", "٣٤٥ عربي\n", "naïve café\n"]
    for i in range(20_000):
        stream.feed(lines[i % len(lines)])
    assert stream.pending < 1000


def _is_line_cut(text: str, p: int, name: str) -> bool:
    """Mirror of ``cut_at_newline`` in src/pretokenize/line_cut.rs (no special tokens): before
    a non-whitespace character that follows a "\n", gpt2 cuts before the "\n", cl100k
    and o200k after it (and not before a "/")."""

    def space(c: str) -> bool:
        return c.isspace() or "\x1c" <= c <= "\x1f"

    if name == "gpt2":
        return 0 < p < len(text) - 1 and text[p] == "\n" and not space(text[p + 1])
    return 1 <= p < len(text) and text[p - 1] == "\n" and not space(text[p]) and text[p] != "/"


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_stream_cut_rule_splits_no_piece(name: str) -> None:
    """The property the stream relies on: encoding the two sides of a cut apart gives the
    ids of the whole (checked at every cut of random texts)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    enc = bpekit_encoding(name)

    @settings(max_examples=400, deadline=None)
    @given(parts=st.lists(st.sampled_from(_PIECES), max_size=30))
    def check(parts: list[str]) -> None:
        text = "".join(parts)
        whole = enc.encode_ordinary(text)
        for p in range(len(text)):
            if _is_line_cut(text, p, name.split("_")[0]):
                assert enc.encode_ordinary(text[:p]) + enc.encode_ordinary(text[p:]) == whole, (text, p)

    check()
