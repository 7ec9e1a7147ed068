"""``Tokenizer.encode_batch_to_numpy``: one flat array of ids and the offsets of each
text, equal to ``encode_batch`` (with ``eos`` after each text when given)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import bpekit_encoding, data_path
from hypothesis import given, settings
from hypothesis import strategies as st

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tok():
    return bpekit_encoding("gpt2")


def split(ids: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
    return [ids[a:b].tolist() for a, b in itertools.pairwise(offsets)]


@pytest.mark.parametrize("threads", [1, 2])
def test_equals_encode_batch_on_real_documents(tok, threads: int) -> None:
    text = data_path("corpora", "c4_sample.jsonl").read_text(encoding="utf-8")
    texts = [*text.splitlines()[:300], "", "é" * 50, "日本語のテキスト"]
    ids, offsets = tok.encode_batch_to_numpy(texts, threads)
    assert ids.dtype == np.uint32 and offsets.dtype == np.uint64
    assert offsets[0] == 0 and offsets[-1] == len(ids) and len(offsets) == len(texts) + 1
    assert split(ids, offsets) == tok.encode_batch(texts, threads)
    ids, offsets = tok.encode_batch_to_numpy(texts, threads, eos=EOT)
    assert split(ids, offsets) == [[*t, tok.eot_token] for t in tok.encode_batch(texts, threads)]
    assert split(*tok.encode_batch_to_numpy(texts, eos=tok.eot_token)) == split(ids, offsets)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=12))
def test_equals_encode_batch_on_any_text(texts: list[str]) -> None:
    tok = bpekit_encoding("gpt2")
    texts = [t.replace(EOT, "") for t in texts]
    assert split(*tok.encode_batch_to_numpy(texts)) == tok.encode_batch(texts)


def test_special_tokens_and_lone_surrogates_follow_encode_batch(tok) -> None:
    texts = [f"a{EOT}b", "x\ud800y"]
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode_batch_to_numpy(texts)
    got = tok.encode_batch_to_numpy(texts, allowed_special="all")
    assert split(*got) == tok.encode_batch(texts, allowed_special="all")
    assert tok.encode_batch_to_numpy([])[1].tolist() == [0]


@pytest.mark.parametrize("threads", [2, 4])
def test_a_lone_surrogate_or_special_token_deep_in_a_large_batch(tok, threads: int) -> None:
    """The ids are copied into the array as the texts are done, in order, while later
    ones are still being encoded: a text met late still ends the batch as it should."""
    texts = [f"doc {i} " + "words and more words " * (i % 50) for i in range(3000)]
    texts[2500] = "x\ud800y"
    got = tok.encode_batch_to_numpy(texts, threads, eos=EOT)
    assert split(*got) == [[*t, tok.eot_token] for t in tok.encode_batch(texts, threads)]
    texts[2700] = f"a{EOT}b"
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode_batch_to_numpy(texts, threads)


def test_eos_must_be_one_token(tok) -> None:
    with pytest.raises(ValueError, match="eos 'two words' is not a single token of 'gpt2'"):
        tok.encode_batch_to_numpy(["a"], eos="two words")
    with pytest.raises(ValueError, match="eos id 50257 is not in the vocabulary of 50257 ids"):
        tok.encode_batch_to_numpy(["a"], eos=50257)


def test_the_readme_datasets_map_example(tok) -> None:
    datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is not installed")
    texts = ["first text", "", "Über naïve 東京 don't", "x" * 5000]

    def tokenize(batch: dict) -> dict:
        ids, offsets = tok.encode_batch_to_numpy(batch["text"], eos="<|endoftext|>")
        return {"ids": [ids[a:b] for a, b in itertools.pairwise(offsets)]}

    ds = datasets.Dataset.from_dict({"text": texts})
    ds = ds.map(tokenize, batched=True, batch_size=3, remove_columns=["text"])
    assert ds["ids"] == [[*tok.encode_ordinary(t), tok.eot_token] for t in texts]
