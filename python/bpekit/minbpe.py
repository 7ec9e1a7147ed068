"""Karpathy's minbpe on bpekit's core: ``BasicTokenizer``, ``RegexTokenizer`` and
``GPT4Tokenizer`` with minbpe's constructors, methods, attributes and files, and the
same results.

- **Training** gives minbpe's merges exactly. minbpe recounts every pair each merge
  and takes ``max(stats, key=stats.get)``: the most frequent pair, and between equally
  frequent ones the pair that occurs first in the text (a dict keeps insertion order),
  which is not CS336's rule. Here the counts are kept up to date merge by merge, over
  the distinct chunks of the text (``RegexTokenizer``; chunks numbered in the order
  they first occur, so a pair's first occurrence is in the first chunk that holds it)
  or over the whole text as one array (``BasicTokenizer``, numpy), and a tie is broken
  by that first occurrence. A merge replaces the pair left to right without overlaps,
  as minbpe's ``merge`` does.
- **Encoding** runs on bpekit's core: minbpe merges the present pair of lowest rank
  everywhere, then the next; a merge only makes pairs of higher rank, so that is BPE
  by rank, which the core does. Special tokens are split off as minbpe splits them
  (``re.split`` on their alternation, in registration order).
- **Files**: ``save`` writes ``.model`` and ``.vocab`` byte for byte as minbpe does,
  and ``load`` reads minbpe's ``.model`` (errors name the file and line).

>>> tok = RegexTokenizer()
>>> tok.train("aaabdaaabac" * 3, 256 + 3)
>>> BasicTokenizer().decode(BasicTokenizer().encode("hello 👋"))
'hello 👋'
"""

from __future__ import annotations

import heapq
import os
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from bpekit.tokenizer import Tokenizer as _CoreTokenizer

__all__ = [
    "GPT2_SPLIT_PATTERN",
    "GPT4_SPECIAL_TOKENS",
    "GPT4_SPLIT_PATTERN",
    "BasicTokenizer",
    "GPT4Tokenizer",
    "RegexTokenizer",
    "Tokenizer",
    "get_stats",
    "merge",
    "render_token",
]

GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT4_SPLIT_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|"""
    r"""\s*[\r\n]|\s+(?!\S)|\s+"""
)
GPT4_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

# minbpe's patterns -> the scanner that splits every text as its regex does: GPT-2's
# is bpekit's gpt2 pattern; GPT-4's is cl100k's old, non-possessive form (no `\s++$`),
# bpekit's llama3 (tests/minbpe/test_minbpe.py checks both against the `regex` package).
_SCANNERS = {GPT2_SPLIT_PATTERN: "gpt2", GPT4_SPLIT_PATTERN: "llama3"}

Pair = tuple[int, int]

#: The most bytes all tokens of a loaded ``.model`` may hold together. A merge line
#: makes a token as long as its two parts, so 45 lines of doubling merges ask for
#: 2**46 bytes and a 260 KB chain of 30K merges for 450 MB (1.76 GB in Python), where
#: vocabularies trained on text hold a few MB (cl100k's 100K tokens: 0.64 MB, o200k's
#: 200K: 1.4 MB). Checked on the lengths, before any token is made.
MAX_MODEL_TOKEN_BYTES = 1 << 28


# ---- minbpe's helpers, as minbpe has them -------------------------------------------


def get_stats(ids: Sequence[int], counts: dict[Pair, int] | None = None) -> dict[Pair, int]:
    """Counts of consecutive pairs, in the order they first occur.

    >>> get_stats([1, 2, 3, 1, 2])
    {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    """
    counts = {} if counts is None else counts
    for pair in pairwise(ids):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids: Sequence[int], pair: Pair, idx: int) -> list[int]:
    """``ids`` with each occurrence of ``pair``, left to right, replaced by ``idx``.

    >>> merge([1, 2, 3, 1, 2], (1, 2), 4)
    [4, 3, 4]
    >>> merge([1, 1, 1], (1, 1), 4)
    [4, 1]
    """
    out: list[int] = []
    i, n = 0, len(ids)
    a, b = pair
    while i < n:
        if ids[i] == a and i < n - 1 and ids[i + 1] == b:
            out.append(idx)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def replace_control_characters(s: str) -> str:
    """``s`` with each control character (category C*) written as ``\\uXXXX``."""
    return "".join(ch if unicodedata.category(ch)[0] != "C" else f"\\u{ord(ch):04x}" for ch in s)


def render_token(t: bytes) -> str:
    """A token as the ``.vocab`` file shows it.

    >>> render_token(b"a\\n\\xff")
    'a\\\\u000a�'
    """
    return replace_control_characters(t.decode("utf-8", errors="replace"))


def _vocab_text(vocab: dict[int, bytes], merges: dict[Pair, int]) -> str:
    """The ``.vocab`` file: each token, as the merge of its two parts where it has one."""
    inverted = {idx: pair for pair, idx in merges.items()}
    out = []
    for idx, token in vocab.items():
        s = render_token(token)
        if idx in inverted:
            idx0, idx1 = inverted[idx]
            out.append(f"[{render_token(vocab[idx0])}][{render_token(vocab[idx1])}] -> [{s}] {idx}\n")
        else:
            out.append(f"[{s}] {idx}\n")
    return "".join(out)


# ---- training: minbpe's merges, kept up to date -------------------------------------


def _train_words(words: dict[bytes, int], num_merges: int, verbose: bool) -> list[Pair]:
    """minbpe's merges for the chunks ``words`` (each with its count, in the order they
    first occur in the text)."""
    seqs: list[list[int]] = [list(w) for w in words]
    weights = list(words.values())
    counts: dict[Pair, int] = defaultdict(int)
    where: dict[Pair, set[int]] = defaultdict(set)
    for wi, seq in enumerate(seqs):
        c = weights[wi]
        for p in pairwise(seq):
            counts[p] += c
            where[p].add(wi)
    heap = [(-c, p) for p, c in counts.items()]
    heapq.heapify(heap)
    merges: list[Pair] = []
    for i in range(num_merges):
        best = _pop_best(heap, counts, where, seqs)
        if best is None:
            raise ValueError(
                f"no pair is left to merge after {i} merges: the text is too short for this vocab_size"
            )
        pair, count = best
        idx = 256 + i
        changed: dict[Pair, int] = defaultdict(int)
        for wi in list(where[pair]):
            seq = seqs[wi]
            c = weights[wi]
            new = merge(seq, pair, idx)
            for p in pairwise(seq):
                changed[p] -= c
            for p in pairwise(new):
                changed[p] += c
            old_pairs = set(pairwise(seq))
            new_pairs = set(pairwise(new))
            for p in old_pairs - new_pairs:
                where[p].discard(wi)
            for p in new_pairs - old_pairs:
                where[p].add(wi)
            seqs[wi] = new
        for p, d in changed.items():
            if d:
                counts[p] += d
                if counts[p] > 0:
                    heapq.heappush(heap, (-counts[p], p))
                else:
                    del counts[p]
        counts.pop(pair, None)
        merges.append(pair)
        if verbose:
            _print_merge(i, num_merges, pair, idx, count, merges)
    return merges


def _pop_best(
    heap: list[tuple[int, Pair]], counts: dict[Pair, int], where: dict[Pair, set[int]], seqs: list[list[int]]
) -> tuple[Pair, int] | None:
    """The pair minbpe's ``max(stats, key=stats.get)`` picks: most frequent, and of those
    the one that occurs first. Stale heap entries (an older count) are dropped."""
    tied: list[Pair] = []
    best = 0
    while heap:
        neg, p = heap[0]
        if counts.get(p) != -neg:
            heapq.heappop(heap)
            continue
        if tied and -neg != best:
            break
        heapq.heappop(heap)
        best = -neg
        if p not in tied:
            tied.append(p)
    if not tied:
        return None
    if len(tied) > 1:

        def first(p: Pair) -> tuple[int, int]:
            wi = min(where[p])
            seq = seqs[wi]
            return wi, next(j for j in range(len(seq) - 1) if (seq[j], seq[j + 1]) == p)

        tied.sort(key=first)
    for p in tied[1:]:
        heapq.heappush(heap, (-best, p))
    return tied[0], best


def _merge_array(ids: np.ndarray, pair: Pair, idx: int) -> np.ndarray:
    """``merge`` on a numpy array: in a run of overlapping occurrences (``(1, 1)`` in
    ``1 1 1 1 1``) every other one from the run's start, as the left-to-right scan does."""
    import numpy as np

    a, b = pair
    pos = np.flatnonzero((ids[:-1] == a) & (ids[1:] == b))
    if a == b and len(pos) > 1:
        k = np.arange(len(pos))
        starts = np.ones(len(pos), dtype=bool)
        starts[1:] = pos[1:] != pos[:-1] + 1
        run_start = np.maximum.accumulate(np.where(starts, k, 0))
        pos = pos[(k - run_start) % 2 == 0]
    out = ids.copy()
    out[pos] = idx
    keep = np.ones(len(ids), dtype=bool)
    keep[pos + 1] = False
    return out[keep]


def _train_array(data: bytes, num_merges: int, verbose: bool) -> list[Pair]:
    """minbpe's merges for one sequence: the counts from ``np.unique`` (its first index
    is the pair's first occurrence)."""
    import numpy as np

    ids = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    merges: list[Pair] = []
    width = 256 + num_merges
    for i in range(num_merges):
        if len(ids) < 2:
            raise ValueError(
                f"no pair is left to merge after {i} merges: the text is too short for this vocab_size"
            )
        keys = ids[:-1] * width + ids[1:]
        if width * width <= 1 << 24:
            # Counting into a table is linear where np.unique sorts (3x faster on
            # 100 KB to 512 tokens); only the tied pairs' first positions are looked for.
            count = np.bincount(keys, minlength=width * width)
            top = count.max()
            tied = np.flatnonzero(count == top)
            firsts = [int(np.argmax(keys == t)) for t in tied] if len(tied) > 1 else [0]
            key = int(tied[int(np.argmin(firsts))])
        else:
            uniq, first, counts = np.unique(keys, return_index=True, return_counts=True)
            top = counts.max()
            j = np.flatnonzero(counts == top)
            key = int(uniq[j[np.argmin(first[j])]])
        pair = (key // width, key % width)
        idx = 256 + i
        ids = _merge_array(ids, pair, idx)
        merges.append(pair)
        if verbose:
            _print_merge(i, num_merges, pair, idx, int(top), merges)
    return merges


def _print_merge(i: int, n: int, pair: Pair, idx: int, count: int, merges: list[Pair]) -> None:
    vocab = {j: bytes([j]) for j in range(256)}
    for k, (p0, p1) in enumerate(merges):
        vocab[256 + k] = vocab[p0] + vocab[p1]
    print(f"merge {i + 1}/{n}: {pair} -> {idx} ({vocab[idx]!r}) had {count} occurrences")


# ---- the tokenizers -----------------------------------------------------------------


class Tokenizer:
    """minbpe's base class: ``merges`` ``{(int, int): int}``, ``pattern``,
    ``special_tokens`` ``{str: int}``, ``vocab`` ``{int: bytes}``; ``save`` and ``load``."""

    def __init__(self) -> None:
        self.merges: dict[Pair, int] = {}
        self.pattern = ""
        self.special_tokens: dict[str, int] = {}
        self.vocab = self._build_vocab()
        self._core: tuple[Any, _CoreTokenizer | None] | None = None

    def train(self, text: str, vocab_size: int, verbose: bool = False) -> None:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def decode(self, ids: Iterable[int]) -> str:
        raise NotImplementedError

    def _build_vocab(self) -> dict[int, bytes]:
        vocab = {idx: bytes([idx]) for idx in range(256)}
        for (p0, p1), idx in self.merges.items():
            vocab[idx] = vocab[p0] + vocab[p1]
        for special, idx in self.special_tokens.items():
            vocab[idx] = special.encode("utf-8")
        return vocab

    def _set_merges(self, pairs: list[Pair]) -> None:
        self.merges = {p: 256 + i for i, p in enumerate(pairs)}
        self.vocab = {idx: bytes([idx]) for idx in range(256)}
        for (p0, p1), idx in self.merges.items():
            self.vocab[idx] = self.vocab[p0] + self.vocab[p1]

    def _engine(self) -> _CoreTokenizer | None:
        """bpekit's tokenizer for these merges (built once per merges), or ``None``
        where two merges make the same bytes: the core gives bytes one id, and minbpe
        keeps both, so such a vocabulary is encoded in Python."""
        from bpekit.tokenizer import Tokenizer as CoreTokenizer

        key = (id(self.merges), len(self.merges), self.pattern)
        if self._core is not None and self._core[0] == key:
            return self._core[1]
        vocab = {idx: bytes([idx]) for idx in range(256)}
        pairs = []
        for (p0, p1), idx in sorted(self.merges.items(), key=lambda kv: kv[1]):
            vocab[idx] = vocab[p0] + vocab[p1]
            pairs.append((vocab[p0], vocab[p1]))
        engine = None
        if len(set(vocab.values())) == len(vocab) and sorted(vocab) == list(range(len(vocab))):
            pattern = _SCANNERS.get(self.pattern, "gpt2")
            engine = CoreTokenizer(vocab, pairs, [], pattern=pattern, name="minbpe")
        self._core = (key, engine)
        return engine

    def _encode_bytes(self, data: bytes) -> list[int]:
        """The ids of one chunk: BPE by merge rank, as minbpe's ``_encode_chunk``."""
        engine = self._engine()
        if engine is not None:
            return engine._core.encode_single_piece(data, False)
        ids = list(data)
        while len(ids) >= 2:
            stats = get_stats(ids)
            pair = min(stats, key=lambda p: self.merges.get(p, float("inf")))
            if pair not in self.merges:
                break
            ids = merge(ids, pair, self.merges[pair])
        return ids

    def save(self, file_prefix: str) -> None:
        """Writes ``file_prefix.model`` (for ``load``) and ``file_prefix.vocab`` (to read),
        byte for byte as minbpe writes them."""
        lines = ["minbpe v1\n", f"{self.pattern}\n", f"{len(self.special_tokens)}\n"]
        lines += [f"{special} {idx}\n" for special, idx in self.special_tokens.items()]
        lines += [f"{idx1} {idx2}\n" for idx1, idx2 in self.merges]
        with open(file_prefix + ".model", "w") as f:
            f.write("".join(lines))
        with open(file_prefix + ".vocab", "w", encoding="utf-8") as f:
            f.write(_vocab_text(self.vocab, self.merges))

    def load(self, model_file: str | os.PathLike[str]) -> None:
        """Reads a ``.model`` file minbpe (or ``save``) wrote; a bad file is a
        ``ValueError`` naming it and the line."""
        path = os.fspath(model_file)
        if not path.endswith(".model"):
            raise ValueError(f"{path}: a minbpe model file ends in .model")
        with open(path, "rb") as f:
            raw = f.read()
        try:
            # Universal newlines, as minbpe's text-mode open reads the file.
            text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError as e:
            line_no = raw.count(b"\n", 0, e.start) + 1
            raise ValueError(
                f"{path}, line {line_no}: not UTF-8 (byte {e.start}); a minbpe .model file is UTF-8 text"
            ) from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()

        def line(n: int, what: str) -> str:
            if n >= len(lines):
                raise ValueError(f"{path}: ends at line {len(lines)}, before line {n + 1} ({what})")
            return lines[n]

        if line(0, "the version").strip() != "minbpe v1":
            raise ValueError(f"{path}, line 1: {lines[0][:40]!r} is not 'minbpe v1'")
        pattern = line(1, "the pattern").strip()
        try:
            num_special = int(line(2, "the number of special tokens").strip())
        except ValueError:
            raise ValueError(
                f"{path}, line 3: {lines[2][:40]!r} is not the number of special tokens"
            ) from None
        specials: dict[str, int] = {}
        for k in range(num_special):
            text = line(3 + k, "a special token")
            parts = text.strip().split()
            if len(parts) != 2 or not (parts[1].isascii() and parts[1].lstrip("-").isdigit()):
                raise ValueError(f"{path}, line {4 + k}: {text[:40]!r} is not 'TOKEN ID'")
            specials[parts[0]] = int(parts[1])
        merges: dict[Pair, int] = {}
        line_of: dict[Pair, int] = {}
        # Each token's length in bytes, and all of them together: known before any
        # token is made.
        lengths = [1] * 256
        total = 256
        for n in range(3 + num_special, len(lines)):
            parts = lines[n].split()
            if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):
                raise ValueError(f"{path}, line {n + 1}: {lines[n][:40]!r} is not a merge 'ID ID'")
            idx = 256 + len(merges)
            a, b = int(parts[0]), int(parts[1])
            if a >= idx or b >= idx:
                raise ValueError(
                    f"{path}, line {n + 1}: merge ({a}, {b}) names a token not made yet (next is {idx})"
                )
            if (a, b) in merges:
                raise ValueError(
                    f"{path}, line {n + 1}: merge ({a}, {b}) is also line {line_of[(a, b)]} "
                    "(each pair is merged once; is the file damaged?)"
                )
            lengths.append(lengths[a] + lengths[b])
            total += lengths[-1]
            if total > MAX_MODEL_TOKEN_BYTES:
                raise ValueError(
                    f"{path}, line {n + 1}: the tokens made up to this merge hold {total:,} bytes, "
                    f"more than the {MAX_MODEL_TOKEN_BYTES:,} (bpekit.minbpe.MAX_MODEL_TOKEN_BYTES) "
                    "a model is loaded with (models trained on text hold a few MB; is the file damaged?)"
                )
            merges[(a, b)] = idx
            line_of[(a, b)] = n + 1
        self.pattern = pattern
        self.merges = merges
        self.special_tokens = specials
        self.vocab = self._build_vocab()
        self._after_load()

    def _after_load(self) -> None:
        pass


class BasicTokenizer(Tokenizer):
    """minbpe's ``BasicTokenizer``: BPE on the text's bytes, no split, no special tokens."""

    def train(self, text: str, vocab_size: int, verbose: bool = False) -> None:
        if vocab_size < 256:
            raise ValueError(f"vocab_size must be at least 256, not {vocab_size}")
        self._set_merges(_train_array(text.encode("utf-8"), vocab_size - 256, verbose))

    def decode(self, ids: Iterable[int]) -> str:
        return b"".join(self.vocab[idx] for idx in ids).decode("utf-8", errors="replace")

    def encode(self, text: str) -> list[int]:
        return self._encode_bytes(text.encode("utf-8"))


class RegexTokenizer(Tokenizer):
    """minbpe's ``RegexTokenizer``: the text split by ``pattern`` (GPT-4's by default) into
    chunks that merges never cross, and special tokens."""

    def __init__(self, pattern: str | None = None) -> None:
        super().__init__()
        self.pattern = GPT4_SPLIT_PATTERN if pattern is None else pattern
        self.special_tokens = {}
        self.inverse_special_tokens: dict[int, str] = {}
        self._compiled: Any = None

    @property
    def compiled_pattern(self) -> Any:
        """The pattern compiled by the ``regex`` package (minbpe's attribute)."""
        if self._compiled is None or self._compiled.pattern != self.pattern:
            import regex

            self._compiled = regex.compile(self.pattern)
        return self._compiled

    def _chunks(self, text: str) -> list[str]:
        """``re.findall(pattern, text)``: the core's scanner for minbpe's two patterns."""
        from bpekit import _core

        scanner = _SCANNERS.get(self.pattern)
        if scanner is not None:
            return _core.pretokenize(text, scanner)
        found: list[str] = self.compiled_pattern.findall(text)
        return found

    def train(self, text: str, vocab_size: int, verbose: bool = False) -> None:
        if vocab_size < 256:
            raise ValueError(f"vocab_size must be at least 256, not {vocab_size}")
        words: dict[bytes, int] = {}
        for chunk in self._chunks(text):
            b = chunk.encode("utf-8")
            words[b] = words.get(b, 0) + 1
        self._set_merges(_train_words(words, vocab_size - 256, verbose))

    def register_special_tokens(self, special_tokens: dict[str, int]) -> None:
        self.special_tokens = special_tokens
        self.inverse_special_tokens = {v: k for k, v in special_tokens.items()}

    def _after_load(self) -> None:
        self.inverse_special_tokens = {v: k for k, v in self.special_tokens.items()}

    def decode(self, ids: Iterable[int]) -> str:
        parts = []
        for idx in ids:
            if idx in self.vocab:
                parts.append(self.vocab[idx])
            elif idx in self.inverse_special_tokens:
                parts.append(self.inverse_special_tokens[idx].encode("utf-8"))
            else:
                raise ValueError(f"invalid token id: {idx}")
        return b"".join(parts).decode("utf-8", errors="replace")

    def _encode_chunk(self, text_bytes: bytes) -> list[int]:
        return self._encode_bytes(text_bytes)

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text``, special tokens read as text."""
        engine = self._engine()
        if (
            engine is not None
            and self.pattern in _SCANNERS
            and type(self)._encode_chunk is RegexTokenizer._encode_chunk
        ):
            return engine.encode_ordinary(text)
        ids: list[int] = []
        for chunk in self._chunks(text):
            ids.extend(self._encode_chunk(chunk.encode("utf-8")))
        return ids

    def encode(self, text: str, allowed_special: Any = "none_raise") -> list[int]:
        """``allowed_special``: ``"all"``, ``"none"``, ``"none_raise"`` (an
        ``AssertionError`` if a special token's text is in ``text``, as minbpe) or a set."""
        if allowed_special == "all":
            special = self.special_tokens
        elif allowed_special == "none":
            special = {}
        elif allowed_special == "none_raise":
            special = {}
            assert all(token not in text for token in self.special_tokens)
        elif isinstance(allowed_special, set):
            special = {k: v for k, v in self.special_tokens.items() if k in allowed_special}
        else:
            raise ValueError(f"allowed_special={allowed_special} not understood")
        if not special:
            return self.encode_ordinary(text)
        import re

        parts = re.split("(" + "|".join(re.escape(k) for k in special) + ")", text)
        ids: list[int] = []
        for part in parts:
            if part in special:
                ids.append(special[part])
            else:
                ids.extend(self.encode_ordinary(part))
        return ids


class GPT4Tokenizer(RegexTokenizer):
    """minbpe's ``GPT4Tokenizer``: cl100k_base's merges (recovered from its ranks, read from
    the local rank file as ``bpekit.get_encoding`` reads it, never the network) with its
    byte shuffle, GPT-4's split pattern and special tokens: cl100k_base's ids."""

    def __init__(self) -> None:
        super().__init__(pattern=GPT4_SPLIT_PATTERN)
        from bpekit.encodings import get_encoding

        enc = get_encoding("cl100k_base")
        rank = {b: i for i, b in enc.vocab.items() if i not in set(enc.special_tokens.values())}
        self.merges = {(rank[a], rank[b]): rank[a + b] for a, b in enc.merges}
        vocab = {idx: bytes([idx]) for idx in range(256)}
        for (p0, p1), idx in self.merges.items():
            vocab[idx] = vocab[p0] + vocab[p1]
        self.vocab = vocab
        self.byte_shuffle = {i: rank[bytes([i])] for i in range(256)}
        self.inverse_byte_shuffle = {v: k for k, v in self.byte_shuffle.items()}
        self.register_special_tokens(dict(GPT4_SPECIAL_TOKENS))
        self._enc = enc

    def _engine(self) -> _CoreTokenizer | None:
        # cl100k's own vocabulary and merges on GPT-4's split (the llama3 scanner): the
        # shuffled-byte merges of minbpe, in real bytes.
        from bpekit.tokenizer import Tokenizer as CoreTokenizer

        if self._core is None:
            enc = self._enc
            specials = set(enc.special_tokens.values())
            vocab = {i: b for i, b in enc.vocab.items() if i not in specials}
            self._core = (None, CoreTokenizer(vocab, enc.merges, [], pattern="llama3", name="gpt4"))
        return self._core[1]

    def _encode_chunk(self, text_bytes: bytes) -> list[int]:
        engine = self._engine()
        assert engine is not None
        return engine._core.encode_single_piece(text_bytes, False)

    def encode_ordinary(self, text: str) -> list[int]:
        engine = self._engine()
        assert engine is not None
        return engine.encode_ordinary(text)

    def decode(self, ids: Iterable[int]) -> str:
        parts = []
        for idx in ids:
            if idx in self.inverse_special_tokens:  # minbpe's raises KeyError here
                parts.append(
                    bytes(self.byte_shuffle[b] for b in self.inverse_special_tokens[idx].encode("utf-8"))
                )
            else:
                parts.append(self.vocab[idx])
        return bytes(self.inverse_byte_shuffle[b] for b in b"".join(parts)).decode("utf-8", errors="replace")

    def train(self, text: str, vocab_size: int, verbose: bool = False) -> None:
        raise NotImplementedError

    def save(self, file_prefix: str) -> None:
        raise NotImplementedError("GPT4Tokenizer cannot be saved.")

    def load(self, model_file: str | os.PathLike[str]) -> None:
        raise NotImplementedError("GPT4Tokenizer cannot be loaded.")

    def save_vocab(self, vocab_file: str) -> None:
        """GPT-4's tokens in the ``.vocab`` format, the byte shuffle undone (as minbpe)."""
        vocab = {idx: bytes([self.inverse_byte_shuffle[idx]]) for idx in range(256)}
        for (p0, p1), idx in self.merges.items():
            vocab[idx] = vocab[p0] + vocab[p1]
        with open(vocab_file, "w", encoding="utf-8") as f:
            f.write(_vocab_text(vocab, self.merges))
