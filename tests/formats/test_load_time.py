"""Vocabularies load in time near-linear in the size of their tokens and special
tokens, whatever their number and length: 60K special tokens, a periodic special token
of 100K bytes, a 1 MB token, o200k's vocab.json without merges.

Each timed case runs in a fresh interpreter with a timeout, so that a quadratic step
fails rather than hangs, and asserts a bound ten times or more below what quadratic
loading takes on a 2-core machine, so that a slow machine does not flake.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import data_path

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
    # Comparing each special token with the whole vocabulary, and with every special
    # token before it, takes ~10 s here.
    seconds = _timed(
        BYTES + "names = [f'<|s{i}|>' for i in range(60_000)]",
        """
        tok = bpekit.Tokenizer(V, [], names)
        assert tok.encode("a<|s59999|>") == [97, 256 + 59_999]
        """,
    )
    assert seconds < 2


def test_many_disallowed_special_tokens_encode_quickly() -> None:
    # Picking the disallowed tokens out of the 60K by comparing each with every name
    # passed takes ~9 s an encode.
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
    # aho-corasick's DFA builder walks failure links as long as the token: ~27 s here.
    seconds = _timed(
        BYTES,
        """
        tok = bpekit.Tokenizer(V, [], ["x" * 100_000])
        assert tok.encode("x" * 200_001) == [256, 256, 120]
        """,
    )
    assert seconds < 2


def test_ranks_with_a_1_mb_token_load_quickly() -> None:
    # Looking up every split of the token by hashing its parts takes ~23 s here.
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
    # ~198K tokens (all of o200k's multi-byte UTF-8 tokens, the special tokens
    # inferred for such a folder), each compared with the vocabulary and the special
    # tokens before it, take minutes; loading them takes ~1 s, most of it reading
    # vocab.json. The second case passes them explicitly, whatever the inference does.
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
