"""The vocab and merges given to ``Tokenizer``: a value of the wrong type (a float or
str id, a str token, a merge that is not a pair of bytes) is a TypeError naming it,
while numpy integers and bytes-like tokens are still taken."""

from __future__ import annotations

import re
from typing import Any

import pytest

import bpekit

# Any: the cases below add keys and tokens of the wrong types.
BYTE_VOCAB: dict[Any, Any] = {i: bytes([i]) for i in range(256)}


@pytest.mark.parametrize(
    ("merges", "message"),
    [
        ([b"ab"], "merge #0 is b'ab', not a pair of tokens (bytes, bytes)"),
        (
            [(b"a", b"b"), (b"a", b"b", b"c")],
            "merge #1 is (b'a', b'b', b'c'), not a pair of tokens (bytes, bytes)",
        ),
        ([("a", "b")], "merge #0 is ('a', 'b'): its tokens must be bytes, not str"),
        ([(b"a", 98)], "merge #0 is (b'a', 98): its tokens must be bytes, not int"),
        (["ab"], "merge #0 is 'ab', not a pair of tokens (bytes, bytes)"),
    ],
)
def test_merges_that_are_not_pairs_of_bytes_are_named(merges: list[Any], message: str) -> None:
    # b"ab" unpacks into 97 and 98, and bytes(97) is 97 NUL bytes: a message built
    # from them would hold 97 NULs.
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.Tokenizer({**BYTE_VOCAB, 256: b"ab"}, merges)


@pytest.mark.parametrize(
    ("vocab", "message"),
    [
        ({**BYTE_VOCAB, 256.0: b"ab"}, "vocab key 256.0 (token b'ab') must be an int id, not float"),
        ({**BYTE_VOCAB, 1.5: b"ab"}, "vocab key 1.5 (token b'ab') must be an int id, not float"),
        ({**BYTE_VOCAB, "256": b"ab"}, "vocab key '256' (token b'ab') must be an int id, not str"),
        ({**BYTE_VOCAB, 256: "ab"}, "vocab id 256 is 'ab': a token must be bytes, not str"),
        ({**BYTE_VOCAB, 256: 3}, "vocab id 256 is 3: a token must be bytes, not int"),
    ],
)
def test_vocab_keys_and_tokens_of_the_wrong_type_are_named(vocab: dict[Any, Any], message: str) -> None:
    # Converted blindly, int(1.5) makes the id 1 ("token id 1 is given twice"), 256.0
    # passes silently, and bytes(3) makes a token of 3 NUL bytes.
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        bpekit.Tokenizer(vocab, [])


def test_numpy_ints_and_bytearrays_are_still_taken() -> None:
    np = pytest.importorskip("numpy")
    vocab = {np.int64(i): bytearray(b) for i, b in BYTE_VOCAB.items()} | {256: b"ab"}
    tok = bpekit.Tokenizer(vocab, [[bytearray(b"a"), memoryview(b"b")]])  # type: ignore[arg-type, list-item]
    assert tok.encode("ab") == [256]
