"""Pure-Python reference implementation: the readable oracle the tests compare against.

It follows Stanford CS336 assignment 1 to the letter and trades all speed for
clarity. Training:

1. Read the corpus as raw UTF-8 bytes (no newline translation) and decode it.
2. Split on every special token (longest first); special tokens are never merged.
3. Pre-tokenize each segment with the GPT-2 regex and count each piece's bytes.
4. Repeatedly merge the most frequent adjacent pair; a tie goes to the
   lexicographically greater pair ``(bytes_a, bytes_b)``. Pair counts overlap
   (``aaa`` holds ``(a, a)`` twice) and are updated incrementally: only the words
   holding the merged pair are recounted.

Worked example (the CS336 handout's, with a whitespace pre-tokenizer):

>>> counts = {b"low": 5, b"lower": 2, b"widest": 3, b"newest": 6}
>>> vocab, merges = train_from_counts(counts, 256 + 6, [])
>>> merges
[(b's', b't'), (b'e', b'st'), (b'o', b'w'), (b'l', b'ow'), (b'w', b'est'), (b'n', b'e')]
"""

from __future__ import annotations

import itertools
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

import regex

from bpekit.patterns import GPT2, resolve

Pair = tuple[bytes, bytes]


def split_on_special_tokens(text: str, special_tokens: Sequence[str]) -> list[str]:
    """The text between special tokens (the tokens themselves dropped).

    >>> split_on_special_tokens("a<|x|>b<|x|><|x|>c", ["<|x|>"])
    ['a', 'b', '', 'c']
    """
    if not special_tokens:
        return [text]
    # Longest first, so a token that contains another wins where both match.
    alternation = "|".join(regex.escape(t) for t in sorted(special_tokens, key=len, reverse=True))
    parts: list[str] = regex.split(alternation, text)
    return parts


def pretokenize(text: str, pattern: str = GPT2) -> list[str]:
    """The pieces of ``text``: the pattern's matches in order, and the text between
    them as pieces of their own, so that no text is dropped (what HF's ``Split`` with
    ``Isolated`` does; ``regex.findall`` would skip it). Empty matches give no piece.

    >>> pretokenize("I'll go  now")
    ['I', "'ll", ' go', ' ', ' now']
    >>> pretokenize("abc 12 def", r"\\d")
    ['abc ', '1', '2', ' def']
    """
    pieces: list[str] = []
    end = 0
    for m in regex.finditer(resolve(pattern), text):
        if m.start() > end:
            pieces.append(text[end : m.start()])
        if m.group():
            pieces.append(m.group())
        end = max(end, m.end())
    if end < len(text):
        pieces.append(text[end:])
    return pieces


def count_words(text: str, special_tokens: Sequence[str] = (), pattern: str = GPT2) -> Counter[bytes]:
    """How often each pre-token (as UTF-8 bytes) occurs in ``text``.

    >>> count_words("ab ab<|x|>ab", ["<|x|>"])
    Counter({b'ab': 2, b' ab': 1})
    """
    counts: Counter[bytes] = Counter()
    for segment in split_on_special_tokens(text, special_tokens):
        counts.update(piece.encode("utf-8") for piece in pretokenize(segment, pattern))
    return counts


def _pairs(word: Sequence[bytes]) -> Iterable[Pair]:
    return itertools.pairwise(word)


def _merge_word(word: tuple[bytes, ...], pair: Pair) -> tuple[bytes, ...]:
    """Replaces each occurrence of ``pair``, left to right, by its concatenation.

    >>> _merge_word((b"a", b"a", b"a"), (b"a", b"a"))
    (b'aa', b'a')
    """
    out: list[bytes] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def train_from_counts(
    word_counts: Mapping[bytes, int], vocab_size: int, special_tokens: Sequence[str] = ()
) -> tuple[dict[int, bytes], list[Pair]]:
    """The merge loop on pre-token counts: returns ``(vocab, merges)``.

    Vocabulary ids: bytes 0..255 by value, then the special tokens in order, then
    one id per merge in creation order.
    """
    if vocab_size < 256 + len(special_tokens):
        raise ValueError(f"vocab_size {vocab_size} is below 256 + {len(special_tokens)} special tokens")
    words = {w: tuple(bytes([b]) for b in w) for w, c in word_counts.items() if c > 0}
    counts = {w: c for w, c in word_counts.items() if c > 0}

    pair_counts: Counter[Pair] = Counter()
    words_with: defaultdict[Pair, set[bytes]] = defaultdict(set)
    for w, symbols in words.items():
        for p in _pairs(symbols):
            pair_counts[p] += counts[w]
            words_with[p].add(w)

    merges: list[Pair] = []
    while len(merges) < vocab_size - 256 - len(special_tokens):
        live = [(c, p) for p, c in pair_counts.items() if c > 0]
        if not live:
            break
        _, best = max(live)  # count first, then the greater (bytes_a, bytes_b)
        merges.append(best)
        for w in words_with.pop(best, set()):
            old = words[w]
            new = _merge_word(old, best)
            if new == old:
                continue
            for p in _pairs(old):
                pair_counts[p] -= counts[w]
            for p in _pairs(new):
                pair_counts[p] += counts[w]
                words_with[p].add(w)
            words[w] = new
        del pair_counts[best]

    vocab = {b: bytes([b]) for b in range(256)}
    for t in special_tokens:
        vocab[len(vocab)] = t.encode("utf-8")
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return vocab, merges


def train_bpe(
    input_path: str | os.PathLike[str],
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    pattern: str = GPT2,
    errors: str = "strict",
) -> tuple[dict[int, bytes], list[Pair]]:
    """Reads one file and trains on it; CS336's ``train_bpe``."""
    with open(input_path, "rb") as f:
        text = f.read().decode("utf-8", errors=errors)
    return train_from_counts(count_words(text, special_tokens, pattern), vocab_size, special_tokens)


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
        parts = list(_merge_word(tuple(parts), best))
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
        for piece in pretokenize(segment, pattern or GPT2):
            parts = [bytes([b]) for b in piece.encode("utf-8")]
            out.extend(ids_of[p] for p in merge_word(parts, ranks))
    return out


def decode_reference(ids: Sequence[int], vocab: Mapping[int, bytes]) -> str:
    """Joins the tokens' bytes and decodes them, replacing invalid UTF-8 with U+FFFD.

    >>> decode_reference([104, 105], {104: b"h", 105: b"i"})
    'hi'
    """
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
