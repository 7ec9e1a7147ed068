"""Lists of ids are filled with the process's kept Python ints: the same ids as the
arrays, the same int objects from one call to the next, ints in every way, nothing left
behind when the lists go, and no work for the cyclic garbage collector."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from _shared_data import data_path
from _subprocess import run_file
from hypothesis import given, settings
from hypothesis import strategies as st

import bpekit
from tests.conftest import bpekit_encoding

# Where bpekit keeps one int per id (CPython 3.11-3.13 with the GIL; elsewhere each id
# is a new int).
KEPT_INTS = (
    sys.implementation.name == "cpython"
    and (3, 11) <= sys.version_info[:2] <= (3, 13)
    and not sysconfig.get_config_var("Py_GIL_DISABLED")
    and not hasattr(sys, "gettotalrefcount")
)
kept_ints = pytest.mark.skipif(not KEPT_INTS, reason="ints are kept on CPython 3.11-3.13 with the GIL only")

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


@kept_ints
def test_the_same_ids_are_the_same_int_objects(enc) -> None:
    a, b = enc.encode_ordinary(TEXT), enc.encode_ordinary(TEXT)
    assert a == b and max(a) > 256  # past CPython's own small ints
    assert all(x is y for x, y in zip(a, b, strict=True))
    (c,) = enc.encode_ordinary_batch([TEXT], num_threads=2)
    assert all(x is y for x, y in zip(a, c, strict=True))


@kept_ints
def test_listed_ints_are_immortal_and_lists_leave_nothing_behind(enc) -> None:
    """A list holds the process's kept int of each id, whose count no list raises and
    no number of freed lists brings to zero (immortal as CPython 3.12 defines it; on
    3.11 a count of 2**62); lists made and freed leave no memory behind."""
    import tracemalloc

    ids = enc.encode_ordinary(TEXT)
    kept = max(ids)
    assert sys.getrefcount(kept) >= 2**30
    tracemalloc.start()
    try:
        enc.encode_ordinary(TEXT)
        before = tracemalloc.get_traced_memory()[0]
        lists = [enc.encode_ordinary(TEXT) for _ in range(50)]
        assert tracemalloc.get_traced_memory()[0] >= before + 50 * len(ids) * 8  # the lists
        del lists
        assert tracemalloc.get_traced_memory()[0] <= before + 4096
    finally:
        tracemalloc.stop()
    assert sys.getrefcount(kept) >= 2**30
    assert np.array_equal(enc.encode_to_numpy(TEXT), ids)


@kept_ints
def test_items_taken_out_of_lists_leave_the_ints_immortal(enc) -> None:
    """Items popped, removed, replaced or copied out of the lists hand the interpreter
    references the lists never counted: the kept int's count must stay where no
    decrement brings it to zero (unchanged from 3.12; on 3.11 it falls by one a
    reference from 2**62)."""
    ids = enc.encode_ordinary(TEXT)
    kept, count = ids[-1], sys.getrefcount(ids[-1])
    for _ in range(10_000):
        listed = enc.encode_ordinary(TEXT)
        popped = listed.pop()
        listed[0] = popped
        copy = list(listed)
        del listed[:], copy, popped
    after = sys.getrefcount(kept)
    if sys.version_info >= (3, 12):
        assert after == count
    else:
        assert 2**61 < after <= count
    assert enc.encode_ordinary(TEXT)[-1] == kept == ids[-1]


def test_listed_ints_are_ints_in_every_way() -> None:
    """The kept ints are copies of CPython's own: the same values, hashes, arithmetic,
    pickling and JSON as ints made by Python, zero falsy, across the chunks' borders
    (4,096 ids each) up to the largest id a vocabulary may have; one object per id,
    whatever the encoder."""
    import json
    import pickle

    gpt2, o200k = bpekit_encoding("gpt2"), bpekit_encoding("o200k_base")
    text = "".join(chr(c) for c in range(32, 127)) + TEXT + " tokenization ünïcödé 東京 🙂"
    vocab = {i: bytes([i]) for i in range(256)}
    vocab.update({4095: b"ab", 4096: b"cd", 8191: b"ef", 2_097_150: b"gh"})
    sparse = bpekit.Tokenizer(vocab, [(b"a", b"b"), (b"c", b"d"), (b"e", b"f"), (b"g", b"h")])
    assert sparse.encode("abcdefgh!") == [4095, 4096, 8191, 2_097_150, 33]
    seen: dict[int, int] = {}
    for ids in (gpt2.encode_ordinary(text), o200k.encode_ordinary(text), sparse.encode("abcdefgh!\x00")):
        for i in ids:
            made = int(str(i))
            assert type(i) is int and i == made and hash(i) == hash(made)
            assert (i + 1 - 1, i * 3 // 3, 0 - i, i % 4096) == (made, made, 0 - made, made % 4096)
            assert i.bit_length() == made.bit_length() and i.to_bytes(4, "little") == made.to_bytes(
                4, "little"
            )
            # One object per id, whatever the encoder.
            assert seen.setdefault(i, i) is i or not KEPT_INTS
        assert pickle.loads(pickle.dumps(ids)) == ids and json.loads(json.dumps(ids)) == ids
    zero = gpt2.encode_ordinary("!")
    assert zero == [0] and not zero[0] and str(zero[0]) == "0"


def test_lists_are_not_tracked_by_the_cyclic_collector_and_behave_as_lists(enc) -> None:
    """A list of ints is in no cycle: the collector is spared walking every id of every
    list kept. The lists are plain lists otherwise; one made part of a cycle by hand is
    freed once the cycle is broken."""
    import gc

    ids = enc.encode_ordinary(TEXT)
    (batch,) = enc.encode_ordinary_batch([TEXT], num_threads=2)
    assert not gc.is_tracked(ids) and not gc.is_tracked(batch) and not gc.is_tracked(enc.encode(TEXT))
    assert type(ids) is list and ids == batch
    ids.append(ids)  # a cycle by hand
    assert ids[-1] is ids and len(ids) == len(batch) + 1
    ids.pop()
    ids += [1, 2]
    ids.sort()
    assert ids == sorted([*batch, 1, 2])
    gc.collect()  # collections never see them, and leave them whole
    assert ids == sorted([*batch, 1, 2])


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(max_size=200) | st.sampled_from(["", TEXT, "<|endoftext|>x"]), max_size=40),
    threads=st.sampled_from([1, 2, 3, 7]),
)
def test_batch_lists_come_in_the_texts_order(texts: list[str], threads: int) -> None:
    # Lists are made on the calling thread as the other threads finish texts, in any
    # order: each must still land at its text's place.
    enc = bpekit_encoding("o200k_base")
    assert enc.encode_ordinary_batch(texts, num_threads=threads) == [enc.encode_ordinary(t) for t in texts]


def test_batch_raises_the_first_texts_error_and_keeps_working(enc) -> None:
    texts = [TEXT] * 50 + ["a <|endoftext|> b"] + [TEXT] * 50
    with pytest.raises(ValueError, match="endoftext"):
        enc.encode_batch(texts, num_threads=2)
    assert enc.encode_batch(texts[:50], num_threads=2) == [enc.encode(TEXT)] * 50


# In a process of its own: once hypothesis has run, its garbage-collector callback runs
# Python code during the collections that making lists sets off, and it takes the
# KeyboardInterrupt (as an "ignored" exception) before the batch's own check sees it.
CTRL_C = """
import os, signal, sys, threading, time
import bpekit

enc = bpekit.get_encoding(sys.argv[1])
text = {text!r} * 50
# 960 MB of text (one 80 KB str, listed 12,000 times): seconds of work on two threads of
# any machine, while a batch that stops when told takes ~0.1 s.
texts = [text] * 12_000
# A process started in the background by a shell inherits SIGINT ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
threading.Timer(0.1, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.monotonic()
try:
    enc.encode_ordinary_batch(texts, num_threads=2)
    print("finished")
    time.sleep(5)
except KeyboardInterrupt:
    # Without checks in the batch, the interrupt is raised only once it returns.
    print("interrupted after", round(time.monotonic() - start, 2), "s")
assert enc.encode_ordinary_batch([text], num_threads=2) == [enc.encode_ordinary(text)]
"""


@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])
def test_ctrl_c_stops_a_batch_between_texts(name: str, tmp_path: Path) -> None:
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C.format(text=TEXT))
    run = run_file(script, name, env={"BPEKIT_ENCODINGS": str(data_path("encodings"))})
    assert run.returncode == 0, run.stderr[-2000:]
    words = run.stdout.split()
    assert words[:2] == ["interrupted", "after"], run.stdout
    assert float(words[2]) < 1.5, run.stdout


def test_short_and_long_texts_from_many_threads_at_once(enc) -> None:
    """A text under 256 bytes (or code points) is encoded with the GIL held, a longer
    one with it released: both at once from 8 Python threads, wide strings and lone
    surrogates among them, each call gives the ids of a call made alone."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [
        "",
        "hi",
        "naïve café",
        "東京" * 40,
        "🙂 " * 100,
        "x\ud800y",
        TEXT[:255],
        TEXT[:256],
        TEXT,
        "東京 " * 2000,
    ]
    alone = [enc.encode(t) for t in texts]
    rounds = [texts[k % len(texts) :] + texts[: k % len(texts)] for k in range(64)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda ts: [enc.encode(t) for t in ts], rounds))
    for k, got in enumerate(results):
        shift = k % len(texts)
        assert got == alone[shift:] + alone[:shift]
