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

from collections.abc import Sequence

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
    U+FFFD (it is then held back until a later id is decoded with it)."""

    def __init__(
        self, tokenizer: Tokenizer, skip_special_tokens: bool = False, ids: Sequence[int] | None = None
    ) -> None:
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        self._ids: list[int] = [int(i) for i in ids or ()]
        self._prefix = ""
        self._prefix_index = 0
        self._specials = frozenset(tokenizer.special_tokens.values()) if skip_special_tokens else frozenset()

    def _decode(self, ids: list[int]) -> str:
        if self._specials:
            ids = [i for i in ids if i not in self._specials]
        return self.tokenizer.decode(ids)

    def step(self, id: int | Sequence[int]) -> str | None:
        """The text that ``id`` (or ids) completes, or None while it is incomplete."""
        if self._prefix == "" and self._ids:
            # Ids given at the start: their text is the prefix, once it is whole.
            start = self._decode(self._ids)
            if not start.endswith(_REPLACEMENT):
                self._prefix, self._prefix_index = start, len(self._ids)
        self._ids.extend([id] if isinstance(id, int) else [int(i) for i in id])
        text = self._decode(self._ids)
        # Lengths in UTF-8 bytes, as tokenizers compares them.
        if len(text.encode("utf-8")) <= len(self._prefix.encode("utf-8")):
            return None
        if text.endswith(_REPLACEMENT):
            return None
        if not text.startswith(self._prefix):
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
