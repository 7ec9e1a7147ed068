"""``Split`` and ``Replace`` regexes read as Oniguruma (``tokenizers``' engine, Ruby
syntax) reads them, where the core's engine reads them otherwise: line anchors, Ruby's
``m`` flag, ``\\w`` and its kin, POSIX brackets (``bpekit.formats.onig``). Each pattern
is compared with ``tokenizers`` on hand-picked and hypothesis text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit.formats.gpt2 import bytes_to_unicode
from bpekit.formats.onig import rust_regex

tokenizers = pytest.importorskip("tokenizers")

PATTERNS = [
    r"^a",
    r"\s+$",
    r"^\s+|\s+$",
    r"(?m).+",
    r"(?m:a.b)",
    r"\w+",
    r"\W+",
    r"[\w']+",
    r"\b",
    r"\bthe\B",
    r"[[:alpha:]]+",
    r"[[:alnum:]_]+",
    r"[[:space:]]+",
    r"[[:upper:]][[:lower:]]*",
    r"[^[:digit:]]+",
    r"\h+",
    r"a\Z",
    r"\p{^L}+",
    r"[]a]+",
    r"[[:punct:]]+",
    r"[[:^alpha:][:digit:]]+",
    r"[[:graph:]]",
    r"(?i)ab",
    # Patterns files ship: unchanged.
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    r" ?[^(\s|[.,!?…。，、।۔،])]+",
]

HARD = [
    "b\na",
    "x \ny",
    "a\nb",
    "x²",
    "a\u200db",
    "éa",
    "a\u00a0b",
    "²",
    "①ﬁ ٣",
    "the then",
    "ab  \n",
    "a",
    "",
]


def _byte_level(
    pre: dict[str, Any] | None = None, normalizer: dict[str, Any] | None = None
) -> dict[str, Any]:
    chars = bytes_to_unicode()
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab={chars[b]: b for b in range(256)}, merges=[]))
    data = json.loads(tok.to_str())
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [*([pre] if pre else []), level]}
    data["normalizer"] = normalizer
    data["decoder"] = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": False,
    }
    return data


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Any, bpekit.Tokenizer]]:
    """Per pattern: a Split of it (Isolated, and Removed), and a Replace of it."""
    tmp = tmp_path_factory.mktemp("onig")
    out = []
    for k, pattern in enumerate(PATTERNS):
        regex = {"Regex": pattern}
        for name, data in (
            (
                "isolated",
                _byte_level({"type": "Split", "pattern": regex, "behavior": "Isolated", "invert": False}),
            ),
            (
                "removed",
                _byte_level({"type": "Split", "pattern": regex, "behavior": "Removed", "invert": False}),
            ),
            ("replace", _byte_level(normalizer={"type": "Replace", "pattern": regex, "content": "#"})),
        ):
            if name == "replace" and pattern in (r"\b", r"\bthe\B", r"\s+$", r"^\s+|\s+$"):
                continue  # may match the empty string: both refuse or differ by design
            path = tmp / f"{k}-{name}.json"
            path.write_text(json.dumps(data), encoding="utf-8")
            out.append(
                (
                    f"{pattern!r} {name}",
                    tokenizers.Tokenizer.from_file(str(path)),
                    bpekit.Tokenizer.from_hf(path),
                )
            )
    return out


def test_hard_texts(pairs: list[tuple[str, Any, bpekit.Tokenizer]]) -> None:
    for name, hf, ours in pairs:
        for text in HARD:
            assert ours.encode(text) == hf.encode(text).ids, (name, text)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(st.sampled_from(list("ab AB the\n\t_'²①٣éß\u00a0\u200d\u0301日x]")), max_size=24))
def test_hypothesis_texts(pairs: list[tuple[str, Any, bpekit.Tokenizer]], text: str) -> None:
    for name, hf, ours in pairs:
        assert ours.encode(text) == hf.encode(text).ids, (name, text)


def test_patterns_that_read_alike_are_unchanged() -> None:
    llama3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    for pattern in (PATTERNS[-2], PATTERNS[-1], llama3, r"[^\r\n\p{L}\p{N}]?\p{L}+"):
        assert rust_regex(pattern) == pattern


def test_classes_match_oniguruma_on_every_code_point() -> None:
    """Each class the translation spells otherwise, against tokenizers' Oniguruma over
    every code point (a Replace of the class by a mark, on one text of them all)."""
    from tokenizers import Regex, normalizers

    from bpekit import _core

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    text = "".join(chars)
    names = ["alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct"]
    names += ["space", "upper", "word", "xdigit"]
    classes = [r"\w", r"\W", r"\h", r"\H", r"\d", r"\s", r"[\w']", r"[^\w\d]"]
    classes += [f"[[:{n}:]]" for n in names] + [f"[[:^{n}:]]" for n in names]
    for onig in classes:
        want = normalizers.Replace(Regex(onig), "\x00").normalize_str(text)
        got = _core.hf_normalize([("Replace", rust_regex(onig), False, "\x00")], text)
        assert len(want) == len(got) == len(chars), onig
        differ = [c for c, a, b in zip(chars, want, got, strict=True) if a != b]
        assert not differ, (onig, [hex(ord(c)) for c in differ[:10]])


def test_the_multi_character_folds_are_unicodes() -> None:
    from bpekit.formats.onig import _MULTI_FOLDS

    made = set()
    for c in range(0x110000):
        folded = chr(c).casefold() if not 0xD800 <= c <= 0xDFFF else ""
        if len(folded) > 1:
            made.add(folded)
    assert made == _MULTI_FOLDS


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(?i)ss", "case-insensitive"),
        (r"(?i:the|fish)", "case-insensitive"),
        (r"[[:foo:]]", r"POSIX bracket \[:foo:\] is not"),
        (r"[\W]", r"\\W inside a bracket"),
        (r"\X", r"\\X"),
        (r"(a)\1", "back-reference"),
        (r"(?s).", "flag 's'"),
    ],
)
def test_what_reads_otherwise_is_refused_in_one_line(tmp_path: Path, pattern: str, why: str) -> None:
    path = tmp_path / "t.json"
    split = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
    path.write_text(json.dumps(_byte_level(split)), encoding="utf-8")
    with pytest.raises(ValueError, match=r"pre_tokenizer\.pretokenizers\[0\]\.pattern\.Regex: .*" + why) as e:
        bpekit.Tokenizer.from_hf(path)
    assert "\n" not in str(e.value)
