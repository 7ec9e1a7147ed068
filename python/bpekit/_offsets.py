"""What ``Tokenizer.encode_with_offsets`` does around the core: the ``trim_offsets`` of a
``tokenizer.json``'s post-processor, the ids ``add_special_tokens`` adds (offsets
``(0, 0)``, as ``tokenizers`` gives them), and texts with lone surrogates.

A ``str`` with lone surrogates has no UTF-8: its ids are those of the text as tiktoken
reads it (``bpekit._text_rules.without_surrogates``: a pair joined into the character
it encodes, a lone one U+FFFD), and its offsets are mapped back to the ``str`` given, so
a pair's character spans both its code points.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from bpekit._text_rules import without_surrogates

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["around", "around_arrays", "on_str", "on_texts", "trim_arg"]

Offsets = list[tuple[int, int]]
IdsOffsets = tuple[list[int], Offsets]


def trim_arg(
    trim: tuple[bool, bool] | None, prefix: Sequence[int], add_special_tokens: bool
) -> tuple[bool, int] | None:
    """The core's ``trim``: ``(add_prefix_space, index of the text's first id)``, or None.

    >>> trim_arg((False, True), [1], True), trim_arg((False, False), [1], True), trim_arg(None, [], False)
    ((False, 1), (False, 0), None)
    """
    if trim is None:
        return None
    prefix_space, after_template = trim
    return prefix_space, len(prefix) if add_special_tokens and after_template else 0


def _starts(text: str) -> list[int]:
    """For each character of ``without_surrogates(text)``, and its end, where it starts
    in ``text``: a surrogate pair is one character there, two code points here."""
    starts = [0]
    i, n = 0, len(text)
    while i < n:
        pair = "\ud800" <= text[i] <= "\udbff" and i + 1 < n and "\udc00" <= text[i + 1] <= "\udfff"
        i += 2 if pair else 1
        starts.append(i)
    return starts


def _mapped(offsets: Any, starts: list[int]) -> Any:
    """``offsets`` (a list of pairs or an ``(n, 2)`` array) through ``starts``."""
    if isinstance(offsets, list):
        return [(starts[s], starts[e]) for s, e in offsets]
    import numpy as np

    return np.asarray(starts, dtype=np.uint64)[offsets.astype(np.intp)]


def on_str(encode: Callable[..., tuple[Any, Any]], text: str, *args: Any) -> tuple[Any, Any]:
    """``encode(text, *args)``, made again on the text as tiktoken reads it when it has
    lone surrogates, its offsets mapped back to ``text``.

    >>> per_char = lambda t: (t.encode("utf-8"), [(i, i + 1) for i in range(len(t))])
    >>> on_str(per_char, "a\\ud83d\\ude00b")[1]  # a pair of surrogates: one character
    [(0, 1), (1, 3), (3, 4)]
    """
    try:
        return encode(text, *args)
    except UnicodeEncodeError:
        ids, offsets = encode(without_surrogates(text), *args)
        return ids, _mapped(offsets, _starts(text))


def on_texts(encode: Callable[..., list[IdsOffsets]], texts: list[str], *args: Any) -> list[IdsOffsets]:
    """``encode(texts, *args)``, made again as ``on_str`` does when a text has lone
    surrogates."""
    try:
        return encode(texts, *args)
    except UnicodeEncodeError:
        out = encode([without_surrogates(t) for t in texts], *args)
        return [(ids, _mapped(offsets, _starts(t))) for t, (ids, offsets) in zip(texts, out, strict=True)]


def around(ids: list[int], offsets: Offsets, prefix: list[int], suffix: list[int]) -> IdsOffsets:
    """``prefix`` and ``suffix`` around ``ids``, with offsets ``(0, 0)``."""
    if not prefix and not suffix:
        return ids, offsets
    return prefix + ids + suffix, [(0, 0)] * len(prefix) + offsets + [(0, 0)] * len(suffix)


def around_arrays(
    ids: npt.NDArray[np.uint32], offsets: npt.NDArray[np.uint64], prefix: list[int], suffix: list[int]
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
    """``around`` for the arrays of ``encode_with_offsets_to_numpy``."""
    if not prefix and not suffix:
        return ids, offsets
    import numpy as np

    ids = np.concatenate([np.asarray(prefix, np.uint32), ids, np.asarray(suffix, np.uint32)])
    zeros = np.zeros((len(prefix), 2), np.uint64), np.zeros((len(suffix), 2), np.uint64)
    return ids, np.concatenate([zeros[0], offsets, zeros[1]])
