"""``bpekit.minbpe`` against minbpe's documented behaviour and against a slow reference
written from its algorithm (``_minbpe_reference``): merges (ties included), ids, and
``.model`` / ``.vocab`` files byte for byte."""

from __future__ import annotations

from pathlib import Path

import _minbpe_reference as ref
import pytest
import regex
from conftest import bpekit_encoding, data_path
from hypothesis import given, settings
from hypothesis import strategies as st

from bpekit import minbpe
from bpekit.minbpe import (
    GPT2_SPLIT_PATTERN,
    GPT4_SPECIAL_TOKENS,
    GPT4_SPLIT_PATTERN,
    BasicTokenizer,
    GPT4Tokenizer,
    RegexTokenizer,
)

SPECIALS_STRING = """
<|endoftext|>Hello world this is one document
<|endoftext|>And this is another document
<|endoftext|><|fim_prefix|>And this one has<|fim_suffix|> tokens.<|fim_middle|> FIM
<|endoftext|>Last document!!! 👋<|endofprompt|>
""".strip()


def _taylor() -> str:
    return data_path("corpora", "taylorswift_wikipedia_en.txt").read_text(encoding="utf-8")


TEST_STRINGS = ["", "?", "hello world!!!? (안녕하세요!) lol123 😉", "FILE"]


def _unpack(text: str) -> str:
    return _taylor() if text == "FILE" else text


def test_wikipedia_example() -> None:
    """minbpe's README: "aaabdaaabac", 3 merges -> [258, 100, 258, 97, 99]."""
    for factory in (BasicTokenizer, RegexTokenizer):
        tok = factory()
        tok.train("aaabdaaabac", 256 + 3)
        assert tok.encode("aaabdaaabac") == [258, 100, 258, 97, 99]
        assert tok.decode([258, 100, 258, 97, 99]) == "aaabdaaabac"
        assert tok.merges == {(97, 97): 256, (256, 97): 257, (257, 98): 258}


@pytest.mark.parametrize("factory", [BasicTokenizer, RegexTokenizer, GPT4Tokenizer])
@pytest.mark.parametrize("text", TEST_STRINGS)
def test_encode_decode_identity(factory, text: str) -> None:
    text = _unpack(text)
    tok = factory()
    assert tok.decode(tok.encode(text)) == text


@pytest.mark.parametrize("text", [*TEST_STRINGS, "mixed 中文 русский ✨ e\u0301 \n\n  end\n  "])
def test_gpt4_equals_cl100k(text: str) -> None:
    """GPT4Tokenizer gives cl100k_base's ids (minbpe's test), offline; minbpe's GPT-4
    pattern has no ``\\s++$``, so a final run of whitespace holding a line break ends
    after it there, as minbpe's does (cl100k's today takes the run whole)."""
    text = _unpack(text)
    tok = GPT4Tokenizer()
    enc = bpekit_encoding("cl100k_base")
    chunks = regex.findall(GPT4_SPLIT_PATTERN, text)
    want = [i for c in chunks for i in enc._encode_single_piece(c)]
    assert tok.encode(text) == want
    if not text.endswith("  "):
        assert tok.encode(text) == enc.encode(text)


def test_gpt4_special_tokens() -> None:
    tok = GPT4Tokenizer()
    enc = bpekit_encoding("cl100k_base")
    assert tok.encode(SPECIALS_STRING, allowed_special="all") == enc.encode(
        SPECIALS_STRING, allowed_special="all"
    )
    assert tok.special_tokens == GPT4_SPECIAL_TOKENS
    assert tok.decode(tok.encode(SPECIALS_STRING, allowed_special="all")) == SPECIALS_STRING
    assert len(tok.merges) == 100256 - 256
    # The byte shuffle: a byte's id is its cl100k rank, and the vocab holds shuffled bytes.
    assert tok.encode("a") == [tok.byte_shuffle[ord("a")]] == [64]
    space = tok.byte_shuffle[32]
    assert tok.vocab[tok.merges[(space, space)]] == bytes([space, space])
    with pytest.raises(NotImplementedError):
        tok.train("x", 300)


def test_allowed_special_modes() -> None:
    tok = RegexTokenizer()
    tok.train(_taylor()[:20_000], 300)
    tok.register_special_tokens({"<|endoftext|>": 300, "<|x|>": 301})
    text = "a<|endoftext|>b<|x|>c"
    assert tok.encode(text, allowed_special="all") == [
        *tok.encode_ordinary("a"),
        300,
        *tok.encode_ordinary("b"),
        301,
        99,
    ]
    assert tok.encode(text, allowed_special="none") == tok.encode_ordinary(text)
    assert tok.encode(text, allowed_special={"<|x|>"})[-2:] == [301, 99]
    with pytest.raises(AssertionError):
        tok.encode(text)
    with pytest.raises(ValueError, match="not understood"):
        tok.encode(text, allowed_special="some")
    assert tok.decode([300, 104]) == "<|endoftext|>h"


def test_custom_pattern_drops_what_it_does_not_match() -> None:
    """minbpe splits with ``re.findall``, which keeps only the matches."""
    tok = RegexTokenizer(r"\w+")
    tok.train("hello hello world, hello!", 260)
    assert tok.encode("hello, world") == ref.encode_regex("hello, world", tok.merges, r"\w+")
    assert tok.decode(tok.encode("a b")) == "ab"


# ---- training: the same merges as minbpe's algorithm ---------------------------------

TIE_TEXTS = [
    "abcdefgh" * 3,
    "ab ba ab ba cd dc",
    "aaaa bbbb aaaa bbbb abab",
    "xyzzy zyx yxz zzz xxx yyy",
    "the cat the hat the bat",
    "🙂🙃🙂🙃 é e\u0301 ééé",
]


def _same_merges(train_ours, train_ref) -> None:
    """The same merges, or the same refusal (minbpe's ``max`` of no pairs)."""
    try:
        want = train_ref()
    except ValueError:
        with pytest.raises(ValueError, match="no pair is left to merge"):
            train_ours()
        return
    assert train_ours() == want


def _basic(text: str, n: int) -> dict:
    tok = BasicTokenizer()
    tok.train(text, n)
    return tok.merges


def _regex(text: str, n: int, pattern: str = GPT4_SPLIT_PATTERN) -> dict:
    tok = RegexTokenizer(pattern)
    tok.train(text, n)
    return tok.merges


@pytest.mark.parametrize("text", TIE_TEXTS)
def test_tie_heavy_texts_merge_as_minbpe(text: str) -> None:
    for n in (257, 262, 270, 290):
        _same_merges(lambda n=n: _basic(text, n), lambda n=n: ref.train_basic(text, n))
        _same_merges(lambda n=n: _regex(text, n), lambda n=n: ref.train_regex(text, n, GPT4_SPLIT_PATTERN))


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(st.sampled_from(list("ab c\n'sdé🙂1")), min_size=2, max_size=80),
    merges=st.integers(1, 20),
)
def test_hypothesis_merges_and_ids_equal_minbpe(text: str, merges: int) -> None:
    for pattern in (GPT4_SPLIT_PATTERN, GPT2_SPLIT_PATTERN):
        want = None
        try:
            want = ref.train_regex(text, 256 + merges, pattern)
        except ValueError:  # minbpe's max() of no pairs: too few for so many merges
            with pytest.raises(ValueError, match="no pair is left to merge"):
                RegexTokenizer(pattern).train(text, 256 + merges)
            continue
        tok = RegexTokenizer(pattern)
        tok.train(text, 256 + merges)
        assert tok.merges == want
        assert tok.encode(text) == ref.encode_regex(text, want, pattern)
        assert tok.encode(text[::-1]) == ref.encode_regex(text[::-1], want, pattern)
    try:
        want = ref.train_basic(text, 256 + merges)
    except ValueError:
        return
    basic = BasicTokenizer()
    basic.train(text, 256 + merges)
    assert basic.merges == want
    assert basic.encode(text) == ref.encode_chunk(text.encode(), want)


def test_long_text_merges_equal_minbpe() -> None:
    text = _taylor()[:30_000]
    tok = RegexTokenizer()
    tok.train(text, 256 + 60)
    assert tok.merges == ref.train_regex(text, 256 + 60, GPT4_SPLIT_PATTERN)
    assert tok.encode(text) == ref.encode_regex(text, tok.merges, GPT4_SPLIT_PATTERN)
    basic = BasicTokenizer()
    basic.train(text[:8_000], 256 + 40)
    assert basic.merges == ref.train_basic(text[:8_000], 256 + 40)


def test_patterns_split_as_the_regex_package() -> None:
    """The scanners that serve minbpe's two patterns split as ``regex.findall`` does."""
    from bpekit import _core

    texts = [_taylor()[:50_000], "a\n  ", "x  \n\n  ", " \t\n\r\n y", "don't 123456 中文", "\n"]
    for text in texts:
        assert _core.pretokenize(text, "llama3") == regex.findall(GPT4_SPLIT_PATTERN, text)
        assert _core.pretokenize(text, "gpt2") == regex.findall(GPT2_SPLIT_PATTERN, text)


# ---- files -------------------------------------------------------------------------


def _minbpe_files(tok: minbpe.Tokenizer, prefix: Path) -> tuple[bytes, bytes]:
    """The ``.model`` and ``.vocab`` minbpe's own ``save`` writes (its code, verbatim in
    behaviour: see ``_minbpe_reference``'s source)."""
    model = ["minbpe v1\n", f"{tok.pattern}\n", f"{len(tok.special_tokens)}\n"]
    model += [f"{s} {i}\n" for s, i in tok.special_tokens.items()]
    model += [f"{a} {b}\n" for a, b in tok.merges]
    inverted = {idx: pair for pair, idx in tok.merges.items()}
    vocab = []
    for idx, token in tok.vocab.items():
        s = minbpe.render_token(token)
        if idx in inverted:
            a, b = inverted[idx]
            vocab.append(
                f"[{minbpe.render_token(tok.vocab[a])}][{minbpe.render_token(tok.vocab[b])}] -> [{s}] {idx}\n"
            )
        else:
            vocab.append(f"[{s}] {idx}\n")
    return "".join(model).encode(), "".join(vocab).encode("utf-8")


@pytest.mark.parametrize("factory", [BasicTokenizer, RegexTokenizer])
@pytest.mark.parametrize("specials", [False, True])
def test_save_load_round_trip(factory, specials: bool, tmp_path: Path) -> None:
    text = _taylor()[:20_000]
    tok = factory()
    tok.train(text, 256 + 64)
    if specials and isinstance(tok, RegexTokenizer):
        tok.register_special_tokens({"<|endoftext|>": 100257, "<|im_start|>": 100258})
        tok.vocab = tok._build_vocab()
    prefix = tmp_path / "tok"
    tok.save(str(prefix))
    model, vocab = _minbpe_files(tok, prefix)
    assert (tmp_path / "tok.model").read_bytes() == model
    assert (tmp_path / "tok.vocab").read_bytes() == vocab
    back = factory()
    back.load(str(tmp_path / "tok.model"))
    assert (
        back.merges == tok.merges
        and back.special_tokens == tok.special_tokens
        and back.pattern == tok.pattern
    )
    assert back.encode(text[:5000]) == tok.encode(text[:5000])
    if specials and isinstance(back, RegexTokenizer):
        s = "x<|endoftext|>y"
        assert back.encode(s, allowed_special="all") == tok.encode(s, allowed_special="all")
        assert back.decode(back.encode(s, allowed_special="all")) == s


def test_load_errors_name_the_file_and_line(tmp_path: Path) -> None:
    cases = {
        "minbpe v2\n\n0\n": r"line 1: 'minbpe v2' is not 'minbpe v1'",
        "minbpe v1\n": r"ends at line 1, before line 2 \(the pattern\)",
        "minbpe v1\npat\nx\n": r"line 3: 'x' is not the number of special tokens",
        "minbpe v1\npat\n2\n<|a|> 300\n": r"ends at line 4, before line 5 \(a special token\)",
        "minbpe v1\npat\n0\n97 97\n97\n": r"line 5: '97' is not a merge 'ID ID'",
        "minbpe v1\npat\n0\n97 300\n": r"line 4: merge \(97, 300\) names a token not made yet",
    }
    for k, (content, message) in enumerate(cases.items()):
        path = tmp_path / f"m{k}.model"
        path.write_text(content)
        with pytest.raises(ValueError, match=f"m{k}.model, {message}" if "line" in message[:5] else message):
            RegexTokenizer().load(str(path))
    with pytest.raises(ValueError, match=r"ends in \.model"):
        RegexTokenizer().load(str(tmp_path / "x.txt"))
