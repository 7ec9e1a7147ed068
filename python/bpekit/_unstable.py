"""tiktoken's encodings of text whose end is not final: ``_encode_bytes`` (bytes that may
end inside a character) and ``encode_with_unstable`` (the ids that are final, and every
way the rest could be encoded once more text follows), with tiktoken's exact rules.

The last pre-token of a text may merge with what follows, so its ids (and, where the
pattern's splits before it could vanish, those of the whitespace tokens before it)
are not final: their bytes are the *unstable* bytes.

Both work on the core encoder; ``Tokenizer`` checks the special-token arguments first.
"""

from __future__ import annotations

import bisect
import re

from bpekit import _core

# Rust's char::is_whitespace (Unicode White_Space), which tiktoken tests the last
# unstable character with; Python's str.isspace also holds U+001C-U+001F.
_WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def sorted_token_bytes(core: _core.Encoder) -> list[bytes]:
    """The bytes of every token but the special tokens, sorted (tiktoken's
    ``token_byte_values``; ``encode_with_unstable`` searches them)."""
    specials = {i for _, i in core.special_tokens()}
    return sorted(b for i, b in core.vocab().items() if i not in specials)


def encode_with_last_piece(core: _core.Encoder, text: str, allowed: frozenset[str]) -> tuple[list[int], int]:
    """The ids of ``text`` (the special tokens of ``allowed`` as such, others as text)
    and how many of them the last pre-token gave (0 when a special token ends it)."""
    ids = core.encode(text, sorted(allowed), [])
    start = 0
    if allowed:
        # Leftmost-longest, as the core matches special tokens.
        specials = re.compile("|".join(map(re.escape, sorted(allowed, key=len, reverse=True))))
        for m in specials.finditer(text):
            start = m.end()
    pieces = _core.pretokenize(text[start:], core.pattern) if start < len(text) else []
    if not pieces:
        return ids, 0
    return ids, len(core.encode_single_piece(pieces[-1].encode("utf-8")))


def _widen(core: _core.Encoder, ids: list[int], n: int) -> int:
    """tiktoken's ``_increase_last_piece_token_len``: a pattern split before trailing
    whitespace may vanish (cl100k's ``\\s*[\\r\\n]+``), so whitespace tokens right before
    a last pre-token that starts with whitespace are unstable too."""

    def all_space(i: int) -> bool:
        return all(b in b" \n\t" for b in core.token_bytes(i))

    if n > 0 and all_space(ids[-n]):
        while n < len(ids) and all_space(ids[-n - 1]):
            n += 1
    return n


def encode_bytes(core: _core.Encoder, data: bytes) -> list[int]:
    """tiktoken's ``_encode_bytes``: valid UTF-8 encodes as text (special tokens as
    text); otherwise the bytes after the valid start are encoded with the unstable
    bytes before them, as one piece."""
    try:
        return core.encode(data.decode("utf-8"), [], [])
    except UnicodeDecodeError as e:
        valid = e.start
    ids, n = encode_with_last_piece(core, data[:valid].decode("utf-8"), frozenset())
    n = _widen(core, ids, n)
    if ids and n > 0:
        unstable = core.decode_bytes(ids[-n:]) + data[valid:]
        del ids[-n:]
    else:
        unstable = data[valid:]
    if unstable:
        ids.extend(core.encode_single_piece(unstable, True))
    return ids


def encode_with_unstable(
    core: _core.Encoder, text: str, allowed: frozenset[str], tokens: list[bytes]
) -> tuple[list[int], list[list[int]]]:
    """tiktoken's ``encode_with_unstable``: the final ids, and the ways the unstable
    bytes may be encoded once text follows (each a list of ids covering them), in no
    order. ``tokens``: ``sorted_token_bytes(core)``, which the caller keeps: for o200k
    it takes ~0.15 s to build, and a call that has it ~2 ms."""
    ids, n = encode_with_last_piece(core, text, allowed)
    if n == 0:
        return ids, []
    n = _widen(core, ids, n)
    unstable = core.decode_bytes(ids[-n:])
    del ids[-n:]
    if not unstable:
        return ids, []
    completions: set[tuple[int, ...]] = set()
    # Every token that starts with the unstable bytes.
    at = bisect.bisect_left(tokens, unstable)
    while at < len(tokens) and tokens[at].startswith(unstable):
        completions.add((_id(core, tokens[at]),))
        at += 1
    # A token straddling the end: the unstable bytes' end followed by a token's bytes,
    # encoded again, up to the ids that cover the unstable bytes.
    for i in range(1, len(unstable)):
        prefix, suffix = unstable[:i], unstable[i:]
        at = bisect.bisect_left(tokens, suffix)
        while at < len(tokens) and tokens[at].startswith(suffix):
            possible = prefix + tokens[at]
            try:
                encoded = core.encode(possible.decode("utf-8"), [], [])
            except UnicodeDecodeError:
                encoded = core.encode_single_piece(possible, False)
            seq, covered = [], 0
            for t in encoded:
                seq.append(t)
                covered += len(core.token_bytes(t))
                if covered >= len(unstable):
                    break
            completions.add(tuple(seq))
            at += 1
    # A whitespace character at the end may split from what is before it (gpt2's
    # \s+(?!\S)), making tokens possible that merging would otherwise hide.
    if len(unstable) > 1:
        last, size = _last_char(unstable)
        if last is not None and last in _WHITE_SPACE and len(unstable) > size:
            head = core.encode_single_piece(unstable[:-size], False)
            completions.add(tuple(head + core.encode_single_piece(unstable[-size:], False)))
    return ids, [list(c) for c in completions]


def _id(core: _core.Encoder, token: bytes) -> int:
    found = core.token_id(token)
    if found is None:
        raise KeyError(token)
    return found


def _last_char(data: bytes) -> tuple[str | None, int]:
    """The character the bytes end with and its length in bytes; None where they do not
    end with a whole one (bstr's ``decode_last_utf8``)."""
    for k in range(1, min(4, len(data)) + 1):
        if data[-k] & 0xC0 != 0x80:
            try:
                c = data[-k:].decode("utf-8")
            except UnicodeDecodeError:
                return None, 1
            return (c, k) if len(c) == 1 else (None, 1)
    return None, 1
