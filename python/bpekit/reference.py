"""Pure-Python reference implementations: the readable oracles the tests compare against.

They are slow on purpose: each reads like the algorithm it checks.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

# ---------------------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------------------


def split_special(text: str, special_tokens: Sequence[str]) -> list[tuple[str, bool]]:
    """Splits ``text`` into ``(segment, is_special)``, matching special tokens longest first.

    At each position the longest special token that starts there wins; text between
    special tokens is returned as ordinary segments (empty ones are dropped).

    >>> split_special("a<|x|><|x|>b", ["<|x|>", "<|x|><|x|>"])
    [('a', False), ('<|x|><|x|>', True), ('b', False)]
    """
    by_length = sorted(set(special_tokens), key=len, reverse=True)
    out: list[tuple[str, bool]] = []
    start = i = 0
    while i < len(text):
        match = next((t for t in by_length if text.startswith(t, i)), None)
        if match is None:
            i += 1
            continue
        if i > start:
            out.append((text[start:i], False))
        out.append((match, True))
        i += len(match)
        start = i
    if start < len(text):
        out.append((text[start:], False))
    return out


def merge_word(parts: list[bytes], ranks: Mapping[tuple[bytes, bytes], int]) -> list[bytes]:
    """GPT-2's BPE on one pre-token: repeatedly take the adjacent pair of lowest rank and
    merge every occurrence of it, left to right, until no pair has a rank.

    >>> merge_word([b"a", b"a", b"a"], {(b"a", b"a"): 0})
    [b'aa', b'a']
    """
    while len(parts) > 1:
        pairs = set(itertools.pairwise(parts))
        best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        merged: list[bytes] = []
        i = 0
        while i < len(parts):
            if i + 1 < len(parts) and (parts[i], parts[i + 1]) == best:
                merged.append(parts[i] + parts[i + 1])
                i += 2
            else:
                merged.append(parts[i])
                i += 1
        parts = merged
    return parts


def encode_reference(
    text: str,
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] = (),
    pattern: str | None = None,
) -> list[int]:
    """CS336 encoding: split on special tokens (longest first), pre-tokenize each
    segment with ``pattern`` (default: GPT-2's, as CS336's ``PAT``), apply the merges by
    rank inside each pre-token, and map the resulting bytes to ids. Special tokens
    missing from ``vocab`` get the next ids after the highest one, in order.

    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    >>> encode_reference("abc<|e|>", vocab, [(b"a", b"b")], ["<|e|>"])
    [256, 99, 257]
    """
    import regex

    from bpekit.patterns import GPT2

    vocab = dict(vocab)
    for tok in special_tokens:
        if tok.encode("utf-8") not in vocab.values():
            vocab[max(vocab) + 1] = tok.encode("utf-8")
    ids_of: dict[bytes, int] = {}
    for i in sorted(vocab):
        ids_of.setdefault(vocab[i], i)
    ranks: dict[tuple[bytes, bytes], int] = {}
    for rank, pair in enumerate(merges):
        ranks.setdefault(pair, rank)
    out: list[int] = []
    for segment, is_special in split_special(text, special_tokens):
        if is_special:
            out.append(ids_of[segment.encode("utf-8")])
            continue
        for piece in regex.findall(pattern or GPT2, segment):
            parts = [bytes([b]) for b in piece.encode("utf-8")]
            out.extend(ids_of[p] for p in merge_word(parts, ranks))
    return out


def decode_reference(ids: Sequence[int], vocab: Mapping[int, bytes]) -> str:
    """Joins the tokens' bytes and decodes them, replacing invalid UTF-8 with U+FFFD.

    >>> decode_reference([104, 105], {104: b"h", 105: b"i"})
    'hi'
    """
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
