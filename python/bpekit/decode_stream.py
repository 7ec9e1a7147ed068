"""``DecodeStream``: text of ids that arrive one at a time (a generation loop), given
out only where it is whole, with the semantics of ``tokenizers.decoders.DecodeStream``.

A character whose UTF-8 bytes are split across tokens is held back until its last byte
comes: ``step`` returns None until then, and then the whole character.

>>> import bpekit
>>> tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [])
>>> stream = DecodeStream(tok)
>>> [stream.step(i) for i in "hé!".encode()]
['h', None, 'é', '!']
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

from bpekit.tokenizer import Tokenizer

__all__ = ["DecodeStream"]

_REPLACEMENT = "\ufffd"


class DecodeStream:
    """Decodes ids as they come. ``ids``: ids already generated (a prompt), whose text is
    not given out again; ``skip_special_tokens``: leave special tokens' text out.

    How: the ids since the text given out before last are decoded again with each new
    id; when their text has grown and does not end in U+FFFD (an incomplete character),
    what is past the previous text is given out. ``tokenizers`` does exactly this, so
    both give out the same pieces, including where a token's text really ends in
    U+FFFD (it is then held back until a later id is decoded with it).

    An id the vocabulary lacks is a ``KeyError`` and leaves the stream as it was: the
    next ids give the text they would have given without it (``tokenizers`` returns
    None for such an id and leaves it out of the text). Ids may be numpy integers."""

    def __init__(
        self, tokenizer: Tokenizer, skip_special_tokens: bool = False, ids: Iterable[int] | None = None
    ) -> None:
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        self._ids: list[int] = _ids(() if ids is None else ids)
        self._prefix = ""
        self._prefix_index = 0
        self._specials = frozenset(tokenizer.special_tokens.values()) if skip_special_tokens else frozenset()
        # An unknown id among the first ones is refused here, not at every step.
        self._decode(self._ids)

    def _decode(self, ids: list[int]) -> str:
        if self._specials:
            ids = [i for i in ids if i not in self._specials]
        return self.tokenizer.decode(ids)

    def step(self, id: int | Iterable[int]) -> str | None:
        """The text that ``id`` (or ids) completes, or None while it is incomplete."""
        new_ids = _ids(id)
        if self._prefix == "" and self._ids:
            # Ids given at the start: their text is the prefix, once it is whole.
            start = self._decode(self._ids)
            if not start.endswith(_REPLACEMENT):
                self._prefix, self._prefix_index = start, len(self._ids)
        before = len(self._ids)
        self._ids.extend(new_ids)
        try:
            text = self._decode(self._ids)
        except BaseException:
            # An unknown id: the stream goes on as if it had not come.
            del self._ids[before:]
            raise
        # Lengths in UTF-8 bytes, as tokenizers compares them.
        if len(text.encode("utf-8")) <= len(self._prefix.encode("utf-8")):
            return None
        if text.endswith(_REPLACEMENT):
            return None
        if not text.startswith(self._prefix):
            del self._ids[before:]
            raise ValueError(
                f"the text of the ids so far, {text!r}, does not start with the text given out "
                f"before, {self._prefix!r}"
            )
        new = text[len(self._prefix) :]
        new_index = len(self._ids) - self._prefix_index
        self._ids = self._ids[self._prefix_index :]
        self._prefix = self._decode(self._ids)
        self._prefix_index = new_index
        return new


def _ids(ids: int | Iterable[int]) -> list[int]:
    """One id or several as a list of ints: numpy integers too, never floats or
    strings (a ``TypeError``, as ``tokenizers`` gives)."""
    try:
        if isinstance(ids, str | bytes):
            raise TypeError
        if isinstance(ids, Iterable):
            return [operator.index(i) for i in ids]
        return [operator.index(ids)]
    except TypeError:
        raise TypeError(f"an id is an integer or a list of integers, not {ids!r:.60}") from None
