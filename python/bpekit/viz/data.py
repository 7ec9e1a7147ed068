"""What the visualizer shows, computed once in Python: the tokens of the text (capped, so
that a huge text still gives a page a browser opens) and the vocabulary packed for the
page's script.

The vocabulary is sent as its merges, not as every token's bytes: a merged token's bytes
are its two parts' bytes, so the page rebuilds them, and o200k's 200,000 tokens take
~1.6 MB of base64 (6 bytes a merge) rather than a JSON array of strings several times
that. Only the tokens no merge builds (the 256 bytes, special tokens, a vocabulary's
extra tokens) travel with their bytes.

Both work on any tokenizer-like object (``TokenizerLike``): ``bpekit.Tokenizer``, or
another that encodes, decodes and shows its vocabulary the same way.
"""

from __future__ import annotations

import base64
import sys
from array import array
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bpekit import _core


class TokenizerLike(Protocol):
    """What the visualizer reads of a tokenizer (``bpekit.Tokenizer`` has all of it)."""

    @property
    def name(self) -> str: ...

    @property
    def n_vocab(self) -> int: ...

    @property
    def vocab(self) -> Mapping[int, bytes]: ...

    @property
    def merges(self) -> Sequence[tuple[bytes, bytes]]: ...

    @property
    def special_tokens(self) -> Mapping[str, int]: ...

    def encode(self, text: str, *, allowed_special: Literal["all"] | Collection[str]) -> list[int]: ...

    def decode_bytes(self, ids: list[int]) -> bytes: ...

    def decode_single_token_bytes(self, token: int) -> bytes: ...


# The text view shows at most this many tokens or text bytes: a browser lays out 200,000
# coloured spans in a few seconds, and many more make the page unusable.
MAX_TOKENS = 200_000
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class TextTokens:
    """The tokens of a text, of which the first ``len(ids)`` are shown."""

    ids: list[int]
    pieces: list[bytes]
    total_tokens: int
    total_bytes: int
    total_chars: int
    max_tokens: int = MAX_TOKENS
    max_bytes: int = MAX_BYTES

    @property
    def capped(self) -> bool:
        return len(self.ids) < self.total_tokens

    @property
    def bytes_per_token(self) -> float:
        return self.total_bytes / self.total_tokens if self.total_tokens else 0.0


def tokenize_text(
    tok: TokenizerLike, text: str, max_tokens: int = MAX_TOKENS, max_bytes: int = MAX_BYTES
) -> TextTokens:
    """The tokens of ``text`` (special tokens in it recognised, so that a document's
    ``<|endoftext|>`` shows as the one token a model sees), the first ones whose bytes fit
    ``max_tokens`` and ``max_bytes`` kept for the view; the counts are of the whole text."""
    ids = tok.encode(text, allowed_special="all")
    total_bytes = len(tok.decode_bytes(ids))
    shown: list[int] = []
    pieces: list[bytes] = []
    size = 0
    for i in ids[:max_tokens]:
        piece = tok.decode_single_token_bytes(i)
        size += len(piece)
        if size > max_bytes:
            break
        shown.append(i)
        pieces.append(piece)
    return TextTokens(shown, pieces, len(ids), total_bytes, len(text), max_tokens, max_bytes)


def token_text(piece: bytes) -> str | None:
    """The text of a token's bytes, or ``None`` when they are not valid UTF-8 on their
    own (part of a character that the next token ends): those are shown in hex.

    >>> token_text(b" caf\\xc3\\xa9"), token_text(b"\\xe6\\x97")
    (' café', None)
    """
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return None


def hex_bytes(piece: bytes) -> str:
    """The bytes of a token that is no text on its own, as the page and terminal show them.

    >>> hex_bytes(b"\\xe6\\x97")
    'e6 97'
    """
    return piece.hex(" ")


def _id_width(n: int) -> int:
    """Bytes per id in the packed merges: the fewest that hold every id and one more
    value, all ones, which marks a merge whose parts are not tokens."""
    width = 1
    while n >= (1 << (8 * width)) - 1:
        width += 1
    return width


def _pack(values: list[int], width: int) -> str:
    """``values`` as base64 of ``width``-byte little-endian integers, one byte plane after
    another (the page reads byte ``p`` of value ``k`` at ``p * len(values) + k``): the
    low planes of small ids vary, the high ones are mostly zeros."""
    raw = array("L" if array("I").itemsize < 4 else "I", values)
    if sys.byteorder == "big":
        raw.byteswap()
    data = raw.tobytes()
    planes = b"".join(data[p :: raw.itemsize] for p in range(width))
    return base64.b64encode(planes).decode("ascii")


def vocab_payload(tok: TokenizerLike) -> dict[str, Any]:
    """The vocabulary as the page's script reads it (see ``viz.js``, ``buildVocab``):

    - ``merges``: left and right ids of every merge in rank order, packed by ``_pack``;
    - ``jumps``: ``[k, id]`` where merge ``k`` makes token ``id`` and ``id`` is not the
      previous merge's plus one (none for tiktoken's encodings and most others);
    - ``leaves``: ``[id, base64 bytes]`` of the tokens that no merge builds from tokens
      built before it;
    - ``specials``: ``[text, id]``; ``is_ranks``: a tiktoken-style encoding, whose
      tokens' rank is their id (else a token's rank is its merge's).
    """
    vocab = tok.vocab
    merges = tok.merges
    specials = tok.special_tokens
    special_ids = set(specials.values())
    n_vocab = max(tok.n_vocab, max(vocab, default=-1) + 1)
    width = _id_width(n_vocab)
    none = (1 << (8 * width)) - 1

    # An ordinary token's id wins over a special token with the same bytes.
    ids_of: dict[bytes, int] = {}
    for i, b in vocab.items():
        if i not in special_ids:
            ids_of.setdefault(b, i)
    for i, b in vocab.items():
        ids_of.setdefault(b, i)

    # Replays what the page does: a merge builds its token when both parts are built
    # (every part a single byte or made by an earlier merge, in a well-formed BPE).
    built = {i for i, b in vocab.items() if len(b) == 1 and i not in special_ids}
    merged: set[int] = set()
    lefts: list[int] = []
    rights: list[int] = []
    jumps: list[list[int]] = []
    expected = 256
    for k, (a, b) in enumerate(merges):
        left, right, made = ids_of.get(a), ids_of.get(b), ids_of.get(a + b)
        if left is None or right is None or made is None:
            left = right = made = none
        lefts.append(left)
        rights.append(right)
        if made != expected:
            jumps.append([k, made])
        expected = made + 1
        if made != none and made not in built and left in built and right in built:
            built.add(made)
            merged.add(made)
    leaves = [[i, base64.b64encode(b).decode("ascii")] for i, b in sorted(vocab.items()) if i not in merged]
    return {
        "n_tokens": len(vocab),
        "n_vocab": n_vocab,
        "n_merges": len(merges),
        "width": width,
        "merges": _pack(lefts + rights, width),
        "jumps": jumps,
        "leaves": leaves,
        "specials": sorted(([t, i] for t, i in specials.items()), key=lambda s: s[1]),
        "is_ranks": _is_ranks(tok),
    }


def _is_ranks(tok: TokenizerLike) -> bool:
    """Whether ``tok`` is a tiktoken-style encoding. Only a bpekit tokenizer's core
    knows how it was built; any other tokenizer is shown with its merges' ranks."""
    core = getattr(tok, "_core", None)
    return isinstance(core, _core.Encoder) and core.is_ranks
