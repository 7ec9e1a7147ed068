"""Lists of ids are filled from each encoder's kept Python ints: the same ids as the
arrays, the same int objects from one call to the next, and no reference left behind
when the lists go."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import bpekit_encoding

TEXT = "Hello, world! The encoder keeps its ints: 12345 tokens, naïve café, 東京, 🙂.\n" * 20


@pytest.fixture(scope="module", params=["gpt2", "o200k_base"])
def enc(request):
    return bpekit_encoding(request.param)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300))
def test_lists_hold_the_ids_of_the_arrays(text: str) -> None:
    for name in ("gpt2", "o200k_base"):
        enc = bpekit_encoding(name)
        ids = enc.encode_ordinary(text)
        assert all(type(i) is int for i in ids)
        assert ids == enc.encode_to_numpy(text, disallowed_special=()).tolist()


def test_the_same_ids_are_the_same_int_objects(enc) -> None:
    a, b = enc.encode_ordinary(TEXT), enc.encode_ordinary(TEXT)
    assert a == b and max(a) > 256  # past CPython's own small ints
    assert all(x is y for x, y in zip(a, b, strict=True))
    (c,) = enc.encode_ordinary_batch([TEXT], num_threads=2)
    assert all(x is y for x, y in zip(a, c, strict=True))


def test_lists_leave_no_reference_behind(enc) -> None:
    ids = enc.encode_ordinary(TEXT)
    kept = max(ids)
    before = sys.getrefcount(kept)
    lists = [enc.encode_ordinary(TEXT) for _ in range(50)]
    assert sys.getrefcount(kept) > before  # the lists hold it
    del lists
    assert sys.getrefcount(kept) == before
    assert np.array_equal(enc.encode_to_numpy(TEXT), ids)
