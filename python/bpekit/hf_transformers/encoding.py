"""``tokenizers``' ``Encoding``, built from bpekit's ids: what a post-processor, a
truncation and a padding make of each text, with ``tokenizers``' semantics.

Only the ids are made per token up front: every other field transformers reads
(``attention_mask``, ``type_ids``, ``special_tokens_mask``, ``offsets``, ``tokens``) is
made when it is read, from a few counts per encoding, with list repetition (C loops, no
Python object per token). A field bpekit does not make (``word_ids``, ``char_to_token``
and the rest of ``tokenizers.Encoding``'s methods) comes from ``tokenizers``' own
encoding of the same batch, made once on first use with the settings of the call
(``Batch.twin``).

The rules, read from ``tokenizers`` 0.22-0.23 (``tokenizer/encoding.rs``,
``utils/truncation.rs``, ``utils/padding.rs``, ``processors/template.rs``):

- truncation cuts the text's ids to ``max_length`` less what the post-processor adds
  (when it adds it), into windows of that length that overlap by ``stride``, from the
  right (the first window the text's start) or the left (the first window its end);
  the first window is the encoding, the others its ``overflowing``;
- the post-processor's template puts its special tokens around every window; its
  ``type_id`` of sequence A marks the first window's tokens only (``tokenizers`` sets
  it on the encoding, not on its overflowing ones, which keep 0);
- padding pads every encoding and its overflowing ones to the batch's longest
  encoding (or the fixed length), rounded up to ``pad_to_multiple_of``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bpekit._core import _untracked

__all__ = ["NO_TEMPLATE", "Batch", "Encoding", "Padding", "Template", "Truncation", "encodings", "windows"]


@dataclass(frozen=True)
class Template:
    """What the post-processor puts around a text (``add_special_tokens=True``)."""

    prefix: list[int]
    suffix: list[int]
    prefix_types: list[int]
    suffix_types: list[int]
    prefix_tokens: list[str]
    suffix_tokens: list[str]
    #: The ``type_id`` of sequence A.
    seq_type: int = 0

    @property
    def added(self) -> int:
        return len(self.prefix) + len(self.suffix)


NO_TEMPLATE = Template([], [], [], [], [], [])


@dataclass(frozen=True)
class Truncation:
    max_length: int
    stride: int
    left: bool


@dataclass(frozen=True)
class Padding:
    #: The fixed length, or None for the batch's longest.
    length: int | None
    multiple: int | None
    left: bool
    pad_id: int
    pad_type_id: int
    pad_token: str


def windows(n: int, max_len: int, stride: int, left: bool) -> list[tuple[int, int]]:
    """``tokenizers``' ``Encoding::truncate`` windows of ``n`` ids: ``(start, stop)`` of
    the encoding, then of each overflowing one. ``max_len`` > ``stride``, or 0.

    >>> windows(5, 2, 0, False), windows(5, 3, 1, True)
    ([(0, 2), (2, 4), (4, 5)], [(2, 5), (0, 3)])
    """
    if max_len >= n:
        return [(0, n)]
    if max_len == 0:
        return [(0, 0), (0, n)]
    step = max_len - stride
    out: list[tuple[int, int]] = []
    if not left:
        for start in range(0, n, step):
            stop = min(start + max_len, n)
            out.append((start, stop))
            if stop == n:
                break
    else:
        for last in range(n - 1, -1, -step):
            stop = last + 1
            start = max(stop - max_len, 0)
            out.append((start, stop))
            if start == 0:
                break
    return out


class Batch:
    """What the encodings of one call share: the settings, and the fields made for the
    whole batch on first use (offsets, ``tokenizers``' own encodings)."""

    __slots__ = (
        "_offsets",
        "_offsets_of",
        "_twins",
        "_twins_of",
        "add_special",
        "padding",
        "template",
        "window_first",
    )

    def __init__(
        self,
        template: Template,
        add_special: bool,
        padding: Padding | None,
        offsets_of: Any,
        twins_of: Any,
        window_first: Callable[[int, tuple[int, int]], tuple[int, int] | None] | None = None,
    ) -> None:
        self.template = template
        self.add_special = add_special
        self.padding = padding
        #: The offsets of a cut window's first token, from the whole text's and its id,
        #: where the post-processor trims the first token of each encoding apart
        #: (``tokenizers``' ByteLevel ``trim_offsets`` with ``add_prefix_space``); None
        #: from it: ``tokenizers``' own encoding's.
        self.window_first = window_first
        self._offsets_of = offsets_of
        self._offsets: list[list[tuple[int, int]]] | None = None
        self._twins_of = twins_of
        self._twins: list[Any] | None = None

    def offsets(self, index: int) -> list[tuple[int, int]] | None:
        """The character offsets of text ``index``'s ids, before any cut; None where
        bpekit has none (the encoding's twin has them)."""
        if self._offsets is None:
            self._offsets = self._offsets_of() or []
        return self._offsets[index] if self._offsets else None

    def twin(self, index: int, overflow: int) -> Any:
        """``tokenizers``' encoding of text ``index`` (its overflowing one ``overflow``,
        from 1) under the call's settings."""
        if self._twins is None:
            self._twins = self._twins_of()
        enc = self._twins[index]
        return enc if overflow == 0 else enc.overflowing[overflow - 1]


class Encoding:
    """A ``tokenizers.Encoding`` of bpekit's ids: ``ids`` and ``overflowing`` are made,
    the rest when read. Attributes it lacks are ``tokenizers``' encoding's."""

    __slots__ = ("_batch", "_index", "_n", "_overflow", "_pad", "_start", "_type", "ids", "overflowing")

    def __init__(
        self,
        ids: list[int],
        batch: Batch,
        index: int,
        overflow: int,
        start: int,
        n: int,
        seq_type: int,
        pad: int,
    ) -> None:
        self.ids = ids
        self.overflowing: list[Encoding] = []
        self._batch = batch
        self._index = index
        self._overflow = overflow
        #: The text's ids ``[start, start + n)`` are this encoding's sequence.
        self._start = start
        self._n = n
        self._type = seq_type
        #: Padding ids added (on the padding's side).
        self._pad = pad

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def n_sequences(self) -> int:
        # One text: tokenizers counts its sequence ranges, and 1 where it has none.
        return 1

    def __repr__(self) -> str:
        return f"Encoding(num_tokens={len(self.ids)}, bpekit)"

    def _fields(self, pad: Any, pre: list[Any], seq: list[Any], suf: list[Any]) -> list[Any]:
        """A field of this encoding: the template's around the sequence's, padded."""
        core = pre + seq + suf if pre or suf else seq
        if not self._pad:
            return core
        pads = [pad] * self._pad
        padding = self._batch.padding
        assert padding is not None
        return pads + core if padding.left else core + pads

    def _around(self) -> tuple[int, int]:
        t = self._batch.template
        return (len(t.prefix), len(t.suffix)) if self._batch.add_special else (0, 0)

    @property
    def attention_mask(self) -> list[int]:
        if not self._pad:
            return _untracked([1] * len(self.ids))
        pre, suf = self._around()
        return _untracked(self._fields(0, [], [1] * (pre + self._n + suf), []))

    @property
    def special_tokens_mask(self) -> list[int]:
        pre, suf = self._around()
        return _untracked(self._fields(1, [1] * pre, [0] * self._n, [1] * suf))

    @property
    def type_ids(self) -> list[int]:
        t, padding = self._batch.template, self._batch.padding
        pad_type = padding.pad_type_id if padding is not None else 0
        if self._batch.add_special:
            pre, suf = t.prefix_types, t.suffix_types
        else:
            pre = suf = []
        if self._type == pad_type == 0 and not any(pre) and not any(suf):
            return _untracked([0] * len(self.ids))
        return _untracked(self._fields(pad_type, pre, [self._type] * self._n, suf))

    @property
    def offsets(self) -> list[tuple[int, int]]:
        native = self._batch.offsets(self._index)
        if native is None:
            return list(self._batch.twin(self._index, self._overflow).offsets)
        seq = native[self._start : self._start + self._n]
        pre, suf = self._around()
        fix = self._batch.window_first
        if fix is not None and self._start > 0 and self._n > 0:
            padding = self._batch.padding
            fixed = fix(self.ids[pre + (self._pad if padding is not None and padding.left else 0)], seq[0])
            if fixed is None:
                return list(self._batch.twin(self._index, self._overflow).offsets)
            seq = [fixed, *seq[1:]]
        return self._fields((0, 0), [(0, 0)] * pre, seq, [(0, 0)] * suf)

    @property
    def tokens(self) -> list[str]:
        # tokenizers' own: an added token's string is the text it matched (with the
        # spaces lstrip/rstrip took, or normalized), not its vocabulary entry.
        tokens: list[str] = self._batch.twin(self._index, self._overflow).tokens
        return tokens

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Pickled (a BatchEncoding sent from a DataLoader's worker) as tokenizers' own
        # encoding, which has every field and pickles.
        return (_as_is, (self._batch.twin(self._index, self._overflow),))

    def __getattr__(self, name: str) -> Any:
        # Only names no slot or property answers: tokenizers' own encoding has them.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._batch.twin(self._index, self._overflow), name)


def _as_is(encoding: Any) -> Any:
    """Unpickles an ``Encoding``: ``tokenizers``' own, pickled in its place."""
    return encoding


def encodings(seqs: list[list[int]], batch: Batch, truncation: Truncation | None) -> list[Encoding]:
    """The encodings of texts whose ids are ``seqs``, as ``tokenizers``' ``encode_batch``
    makes them under ``truncation`` and the batch's template and padding.
    ``truncation.max_length`` is at least what the template adds (the caller checks)."""
    t = batch.template
    pre, suf = (t.prefix, t.suffix) if batch.add_special else ([], [])
    around = pre or suf
    if truncation is None and batch.padding is None:
        if around:
            return [
                Encoding(_untracked(pre + s + suf), batch, i, 0, 0, len(s), t.seq_type, 0)
                for i, s in enumerate(seqs)
            ]
        return [Encoding(s, batch, i, 0, 0, len(s), t.seq_type, 0) for i, s in enumerate(seqs)]
    out: list[Encoding] = []
    if truncation is not None:
        # tokenizers leaves room for the template's tokens only when it adds them.
        room = truncation.max_length - (len(pre) + len(suf))
        for i, s in enumerate(seqs):
            cuts = windows(len(s), room, truncation.stride, truncation.left)
            a, b = cuts[0]
            enc = Encoding(_untracked(pre + s[a:b] + suf), batch, i, 0, a, b - a, t.seq_type, 0)
            for k, (a, b) in enumerate(cuts[1:], 1):
                enc.overflowing.append(Encoding(_untracked(pre + s[a:b] + suf), batch, i, k, a, b - a, 0, 0))
            out.append(enc)
    else:
        out = [
            Encoding(_untracked(pre + s + suf) if around else s, batch, i, 0, 0, len(s), t.seq_type, 0)
            for i, s in enumerate(seqs)
        ]
    padding = batch.padding
    if padding is not None and out:
        target = padding.length if padding.length is not None else max(len(e.ids) for e in out)
        m = padding.multiple
        if m and target % m:
            target += m - target % m
        for enc in out:
            for e in (enc, *enc.overflowing):
                short = target - len(e.ids)
                if short > 0:
                    e._pad = short
                    pads = [padding.pad_id] * short
                    e.ids = _untracked(pads + e.ids if padding.left else e.ids + pads)
    return out
