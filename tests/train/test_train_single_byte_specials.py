"""Special tokens of one byte ("|", "%" between fortunes): trained with CS336's semantics,
as ``bpekit.reference`` trains them (the corpus split at the token, and the vocabulary
holding both the byte's token and the special token, under two ids), encoded to the
special id when allowed, and refused only where a format cannot hold two tokens of the
same bytes (vocab.json), before any work."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpekit
from bpekit import reference
from tests.conftest import data_path

BYTES = {i: bytes([i]) for i in range(256)}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=os.environ.copy(),
        timeout=120,
    )


def test_a_pipe_special_token_trains_as_the_reference_does(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello|world|hello there|| a|b low lower\n" * 5)
    want = reference.train_bpe(corpus, 280, ["|"])
    vocab, merges = bpekit.train_bpe(corpus, 280, ["|"])
    assert (vocab, merges) == want
    assert vocab[124] == vocab[256] == b"|"  # the byte and the special token, two ids
    assert all(b"|" not in a + b for a, b in merges)  # the corpus is split at it
    counts = bpekit.count_pretokens(corpus, ["|"])
    assert bpekit.train_from_counts(counts, 280, ["|"]) == want
    assert bpekit.train_bpe(corpus, 280, ["|"], num_threads=2, chunk_size=7) == want


def test_fortunes_split_at_percent_train_as_the_reference_does(tmp_path: Path) -> None:
    data = data_path("corpora", "fortunes_en.txt").read_bytes()[:150_000]
    corpus = tmp_path / "fortunes.txt"
    corpus.write_bytes(data.decode("utf-8", "ignore").encode("utf-8"))
    specials = ["%", "<|endoftext|>"]
    want = reference.train_bpe(corpus, 500, specials)
    assert bpekit.train_bpe(corpus, 500, specials) == want
    counts = reference.count_words(corpus.read_text(encoding="utf-8"), specials)
    assert bpekit.train_from_counts(bpekit.WordCounts(list(counts.items())), 500, specials) == want


ATOMS = ["a", "b", "ab", "aaaa", " ", "\n", "|", "||", "%", "é", "'s", "1", "<|endoftext|>"]
SPECIAL_SETS = [["|"], ["%", "|"], ["|", "<|endoftext|>"], [" "], ["\n", "<|endoftext|>"], ["a"], ["é"]]


@settings(max_examples=120, deadline=None)
@given(
    text=st.lists(st.sampled_from(ATOMS), max_size=60).map("".join),
    extra=st.integers(0, 30),
    specials=st.sampled_from(SPECIAL_SETS),
)
def test_random_texts_with_one_byte_specials_match_reference(
    text: str, extra: int, specials: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.txt"
        path.write_bytes(text.encode("utf-8"))
        size = 256 + len(specials) + extra
        want = reference.train_bpe(path, size, specials)
        assert bpekit.train_bpe(path, size, specials) == want
        counts = bpekit.count_pretokens(path, specials)
        assert bpekit.train_from_counts(counts, size, specials) == want


def test_the_tokenizer_encodes_an_allowed_one_byte_special_to_its_own_id(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab|ab|abc " * 20)
    vocab, merges = bpekit.train_bpe(corpus, 270, ["|"])
    tok = bpekit.Tokenizer(vocab, merges, ["|"])
    assert tok.special_tokens == {"|": 256}
    ab = tok.encode("ab")
    assert tok.encode("ab|ab") == [*ab, 256, *ab]
    assert tok.encode("ab|ab", allowed_special=set(), disallowed_special=()) == [*ab, 124, *ab]
    assert tok.encode_ordinary("|") == [124]
    assert tok.decode([256, 124]) == "||"
    assert tok.is_special_token(256) and not tok.is_special_token(124)
    assert pickle.loads(pickle.dumps(tok)).encode("ab|ab") == [*ab, 256, *ab]
    # A vocabulary without a second "|" keeps the special token on the byte's id.
    assert bpekit.Tokenizer(BYTES, [], ["|"]).encode("a|") == [97, 124]


def test_vocab_json_refuses_two_tokens_of_one_byte_and_tiktoken_holds_them(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab|ab|abc " * 20)
    tok = bpekit.Tokenizer(*bpekit.train_bpe(corpus, 270, ["|"]), ["|"])
    with pytest.raises(ValueError, match=r"^ids 124 and 256 are the same bytes b'\|'; vocab.json"):
        tok.save(tmp_path / "gpt2")
    assert not (tmp_path / "gpt2").exists()
    tok.save(tmp_path / "tt", format="tiktoken")
    tiktoken = pytest.importorskip("tiktoken")
    import json

    from tiktoken.load import load_tiktoken_bpe

    args = json.loads((tmp_path / "tt" / "bpe.json").read_text())
    enc = tiktoken.Encoding(**args, mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "tt" / "bpe.tiktoken")))
    assert enc.encode("ab|c", allowed_special="all") == tok.encode("ab|c")
    assert enc.encode("ab|c", disallowed_special=()) == tok.encode_ordinary("ab|c")


def test_cli_train_refuses_a_one_byte_special_before_counting(tmp_path: Path) -> None:
    # The input does not exist: the refusal comes before any reading, in one line.
    r = _cli(
        "train", "missing.txt", "--vocab-size", "300", "--special-token", "|", "--out", "tok", cwd=tmp_path
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(
        "bpekit train: error: --special-token '|' is one byte, the bytes of byte token 124"
    )
    assert "vocab.json" in r.stderr and "bpekit.train_bpe" in r.stderr
    assert not (tmp_path / "tok").exists()
