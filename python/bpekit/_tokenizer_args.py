"""What a ``Tokenizer`` is given, checked once and converted to what the core takes.

Each check names the bad entry and why: the core's own conversions said less (``int()``
of a vocab key of 1.5 made the id 1) or something else (an id over 2**32 was an
``OverflowError`` that named nothing).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any

# What a token's bytes may be given as. Not str (no encoding is implied) and not int:
# bytes(97) is 97 NUL bytes, and a merge given as b"ab" unpacked into 97 and 98.
_BYTES_LIKE = (bytes, bytearray, memoryview)
_U32 = 1 << 32


def special_token_list(special_tokens: Iterable[str] | None) -> list[str]:
    """The special tokens as a list, repeats dropped, order kept.

    >>> special_token_list(["<|a|>", "<|b|>", "<|a|>"])
    ['<|a|>', '<|b|>']
    """
    if special_tokens is None:
        return []
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a list of strings, not a single string")
    tokens = list(dict.fromkeys(special_tokens))
    for t in tokens:
        if not isinstance(t, str) or not t:
            raise TypeError(f"special tokens must be non-empty str, got {t!r}")
    return tokens


def vocab_items(vocab: Mapping[int, bytes]) -> list[tuple[int, bytes]]:
    """``vocab``'s entries, checked (``vocab_item``); plain ints and bytes, the usual
    case, pass in one quick scan (checking each entry apart cost GPT-2's 50K 15 ms)."""
    items = list(vocab.items())
    if all(type(i) is int and type(b) is bytes for i, b in items):
        return items
    return [vocab_item(i, b) for i, b in items]


def merge_pairs(merges: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``merges``, checked (``merge_pair``); tuples of two bytes pass in one quick scan."""
    pairs = list(merges)
    if all(type(p) is tuple and len(p) == 2 and type(p[0]) is bytes and type(p[1]) is bytes for p in pairs):
        return pairs
    return [merge_pair(k, m) for k, m in enumerate(pairs)]


def vocab_item(i: Any, token: Any) -> tuple[int, bytes]:
    """A vocab entry as the core takes it, or a ``TypeError`` naming it: ``int()`` made
    the key 1.5 the id 1 (then "id 1 is given twice", or a silent overwrite).

    >>> vocab_item(1.5, b"a")
    Traceback (most recent call last):
    ...
    TypeError: vocab key 1.5 (token b'a') must be an int id, not float
    """
    if isinstance(i, bool) or not hasattr(type(i), "__index__"):
        raise TypeError(f"vocab key {i!r} (token {token!r}) must be an int id, not {type(i).__name__}")
    if not isinstance(token, _BYTES_LIKE):
        raise TypeError(f"vocab id {i!r} is {token!r}: a token must be bytes, not {type(token).__name__}")
    return operator.index(i), bytes(token)


def merge_pair(k: int, merge: Any) -> tuple[bytes, bytes]:
    """Merge #``k`` as the core takes it, or a ``TypeError`` naming it (a merge given
    as ``b"ab"`` made two tokens of 97 and 98 NUL bytes).

    >>> merge_pair(0, b"ab")
    Traceback (most recent call last):
    ...
    TypeError: merge #0 is b'ab', not a pair of tokens (bytes, bytes)
    """
    if isinstance(merge, str | bytes | bytearray | memoryview):
        raise TypeError(f"merge #{k} is {merge!r}, not a pair of tokens (bytes, bytes)")
    try:
        a, b = merge
    except (TypeError, ValueError):
        raise TypeError(f"merge #{k} is {merge!r}, not a pair of tokens (bytes, bytes)") from None
    if not isinstance(a, _BYTES_LIKE) or not isinstance(b, _BYTES_LIKE):
        bad = type(b if isinstance(a, _BYTES_LIKE) else a).__name__
        raise TypeError(f"merge #{k} is {merge!r}: its tokens must be bytes, not {bad}")
    return bytes(a), bytes(b)


def id_out_of_range(tokens: list[tuple[int, bytes]]) -> ValueError | None:
    """The error naming the first id of ``tokens`` the core cannot hold (it takes ids
    as u32 and says only that one did not fit), or None."""
    bad = next(((i, b) for i, b in tokens if not 0 <= i < _U32), None)
    if bad is None:
        return None
    return ValueError(f"vocab id {bad[0]} (token {bad[1]!r}) is outside 0..2**32-1")


def rank_items(
    mergeable_ranks: Mapping[bytes, int], special_tokens: Mapping[str, int] | None
) -> tuple[list[tuple[bytes, int]], list[tuple[str, int]]]:
    """tiktoken's ranks and special tokens as the core takes them, each id checked.

    >>> rank_items({b"a": 2**32}, None)
    Traceback (most recent call last):
    ...
    ValueError: token b'a' has rank 4294967296, outside 0..2**32-1
    """
    ranks = [(bytes(b), int(r)) for b, r in mergeable_ranks.items()]
    specials = special_token_ids(special_tokens or {})
    for token, rank in ranks:
        if not 0 <= rank < _U32:
            raise ValueError(f"token {token!r} has rank {rank}, outside 0..2**32-1")
    for text, i in specials:
        if not 0 <= i < _U32:
            raise ValueError(f"special token {text!r} has id {i}, outside 0..2**32-1")
    return ranks, specials


def special_token_ids(special_tokens: Mapping[str, int]) -> list[tuple[str, int]]:
    """``{text: id}`` as the core takes it."""
    return [(str(t), int(i)) for t, i in special_tokens.items()]


def id_list(ids: Iterable[int]) -> list[int]:
    """``ids`` as a list (a numpy array through ``tolist``, which makes Python ints)."""
    tolist = getattr(ids, "tolist", None)
    return tolist() if callable(tolist) else list(ids)


def unknown_huge_id(ids: list[int]) -> KeyError:
    """The error for an id too large for the core to take (it takes 64-bit ids and
    names any it does not hold): the same ``KeyError`` as for other unknown ids.

    >>> unknown_huge_id([1, 2**70])
    KeyError('token id 1180591620717411303424 is not in the vocabulary')
    """
    huge = next((i for i in ids if isinstance(i, int) and not -(1 << 63) <= i < 1 << 63), None)
    return KeyError(f"token id {huge} is not in the vocabulary")
