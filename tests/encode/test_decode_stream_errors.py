"""``bpekit.DecodeStream`` on ids it cannot decode: an unknown id is an error that
leaves the stream as it was (``tokenizers`` returns None for it and leaves it out of
the text), so the ids after it give ``tokenizers``' pieces; numpy integers are ids."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import bpekit_encoding

import bpekit
from bpekit.formats.hf import to_hf_json

tokenizers = pytest.importorskip("tokenizers")
from tokenizers.decoders import DecodeStream as HFDecodeStream  # noqa: E402

UNKNOWN = 10**7


@pytest.fixture(scope="module")
def pair():
    tok = bpekit_encoding("gpt2")
    return tok, tokenizers.Tokenizer.from_str(json.dumps(to_hf_json(tok)))


def test_an_unknown_id_is_refused_and_the_stream_goes_on(pair) -> None:
    tok, hf = pair
    ids = tok.encode("Héllo wörld, ça va? 👋 yes")
    ours, theirs = bpekit.DecodeStream(tok), HFDecodeStream(skip_special_tokens=False)
    for k, i in enumerate(ids):
        if k in (1, 4, 9):
            with pytest.raises(KeyError, match=str(UNKNOWN)):
                ours.step(UNKNOWN)
            assert theirs.step(hf, UNKNOWN) is None
            with pytest.raises(KeyError):
                ours.step([i, UNKNOWN])  # one bad id: none of the step's ids counts
        assert ours.step(i) == theirs.step(hf, i), k


def test_numpy_integers_are_ids(pair) -> None:
    tok, hf = pair
    ids = tok.encode("I am here, 👋 now")
    plain = [bpekit.DecodeStream(tok).step(i) for i in ids[:1]]
    stream = bpekit.DecodeStream(tok)
    got = [stream.step(np.int64(ids[0])), stream.step(np.uint32(ids[1])), stream.step(np.array(ids[2:5]))]
    theirs = HFDecodeStream(skip_special_tokens=False)
    want = [theirs.step(hf, ids[0]), theirs.step(hf, ids[1]), theirs.step(hf, ids[2:5])]
    assert got == want and got[0] == plain[0] == "I"
    prompt = bpekit.DecodeStream(tok, ids=np.array(ids[:3]))
    assert prompt.step(np.int32(ids[3])) == HFDecodeStream(ids=ids[:3], skip_special_tokens=False).step(
        hf, ids[3]
    )


@pytest.mark.parametrize("bad", [1.5, "x", b"x", None, [1.0], [[1]], object()])
def test_what_is_not_an_id_is_a_type_error_that_changes_nothing(pair, bad) -> None:
    tok, hf = pair
    ids = tok.encode("héllo")
    ours, theirs = bpekit.DecodeStream(tok), HFDecodeStream(skip_special_tokens=False)
    assert ours.step(ids[0]) == theirs.step(hf, ids[0])
    with pytest.raises(TypeError, match="an id is an integer or a list of integers"):
        ours.step(bad)
    for i in ids[1:]:
        assert ours.step(i) == theirs.step(hf, i)


def test_an_unknown_id_among_the_first_is_refused_at_once(pair) -> None:
    tok, _ = pair
    with pytest.raises(KeyError, match=str(UNKNOWN)):
        bpekit.DecodeStream(tok, ids=[40, UNKNOWN])
