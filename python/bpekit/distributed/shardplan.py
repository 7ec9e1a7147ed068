"""Where every id of a distributed dataset goes, planned from metadata alone.

A worker that encodes a unit into its unit file (``work.encode_unit``) also gets its
*skeleton*, made by the core as it writes the file (a file kept from an earlier run is
read back into one: ``unit_skeleton``): per item, its input, where its ids lie in the
file, how many there are, and where its documents end (a text file's special tokens, a
record's end); about one number per document, ~1% of the ids. The driver
walks the skeletons in input order through ``ShardPlanner``, the one-machine writer's
rules (``src/dataset/writer.rs`` and ``shard.rs``: documents numbered from the first
input, the val split by a hash of the number and the seed, marks around files, a
document that does not fit what is left of a shard starts the next one, only one
longer than a shard is cut) applied to lengths: it yields each shard as the pieces of
unit files (and marks) it is made of, its document starts and the manifest entry but
for the sizes and hashes. Workers then write the shards from those pieces
(``shardwrite``); no id passes through the driver.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Item", "ShardPlan", "ShardPlanner", "unit_skeleton"]

_MAGIC = b"BPEKUNIT"
_VERSION = 1
_HEADER = 32
_ITEM_HEAD = 56
_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class Item:
    """One item of a unit file: its input (among the dataset's), where it begins in
    that input (``at``), what it read (documents, bytes, skipped records), where its ids
    start in the file (bytes) and how many there are, and ``cuts``: where its documents
    end, as little-endian uint64 id positions (after each special token of a text
    file; each record's end)."""

    input: int
    at: int
    documents: int
    read: int
    skipped: int
    offset: int
    ids: int
    cuts: bytes


def unit_skeleton(path: str, first_input: int, is_text: bool, width: int, specials: list[int]) -> list[Item]:
    """The items of the unit file ``path`` (``first_input``: its first input's index;
    ``is_text``: a text file's, whose documents end after each of the ``specials``' ids),
    checked as the replay checks them: errors name the file."""
    import numpy as np

    dtype = np.dtype("<u2" if width == 2 else "<u4")

    def bad(what: str) -> ValueError:
        return ValueError(f"{path}: {what}")

    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(_HEADER)
        if len(head) < _HEADER or head[:8] != _MAGIC or int.from_bytes(head[8:12], "little") != _VERSION:
            raise bad("not a bpekit unit file of this version")
        stored = int.from_bytes(head[12:16], "little")
        if stored != width:
            raise bad(f"holds {stored}-byte ids, not {width}-byte")
        items, tokens = int.from_bytes(head[16:24], "little"), int.from_bytes(head[24:32], "little")
        mapped = np.memmap(path, dtype=np.uint8, mode="r") if size > 0 else np.zeros(0, np.uint8)
        wanted = np.asarray(sorted(set(specials)), dtype=dtype) if specials else None
        out: list[Item] = []
        at, seen = _HEADER, 0
        for _ in range(items):
            h = mapped[at : at + _ITEM_HEAD].tobytes()
            if len(h) < _ITEM_HEAD:
                raise bad(f"an item claims more than the file's {size} bytes")
            f0, place, docs, read, skipped, n_ids, n_ends = (
                int.from_bytes(h[i : i + 8], "little") for i in range(0, _ITEM_HEAD, 8)
            )
            body = n_ids * width + n_ends * 8
            if at + _ITEM_HEAD + body > size:
                raise bad(f"an item claims more than the file's {size} bytes")
            if f0 != 0:
                raise bad(f"an item of input {f0} of a one-input unit")
            offset = at + _ITEM_HEAD
            ends_at = offset + n_ids * width
            if is_text:
                if wanted is None or n_ids == 0:
                    cuts = b""
                else:
                    ids = mapped[offset:ends_at].view(dtype)
                    cuts = (np.flatnonzero(np.isin(ids, wanted)) + 1).astype("<u8").tobytes()
            else:
                ends = mapped[ends_at : ends_at + n_ends * 8].view("<u8")
                if n_ends and (np.any(np.diff(ends.astype(np.int64)) < 0) or int(ends[-1]) > n_ids):
                    raise bad(f"a record ends past its item's {n_ids} ids")
                cuts = ends.tobytes()
            out.append(Item(first_input, place, docs, read, skipped, offset, n_ids, cuts))
            seen += n_ids
            at += _ITEM_HEAD + body
        if seen != tokens or at != size:
            raise bad(f"holds {size} bytes, {seen} tokens; its header says {tokens} tokens in {at} bytes")
        del mapped
    return out


# A piece of a shard: (unit, byte offset in its file, ids), or (-1, id, 1) for a mark.
Piece = tuple[int, int, int]


@dataclass
class ShardPlan:
    """One shard: its split and number, its ids (``pieces``, in order), where each
    document (or the rest of one continued) starts, and the manifest's facts."""

    split: str
    k: int
    continues: bool
    first_document: int
    tokens: int = 0
    starts: list[int] = field(default_factory=list)
    ranges: list[list[int]] = field(default_factory=list)
    pieces: list[Piece] = field(default_factory=list)
    let_go_documents: int | None = None

    @property
    def documents(self) -> int:
        if self.let_go_documents is not None:
            return self.let_go_documents
        return len(self.starts) - int(self.continues)

    def let_go(self) -> None:
        """Drops the document starts and the pieces, once the shard is written: the
        driver would hold ~36 bytes a document (a Python int in a list) to the end of
        the run, ~29 GB for 10 TB of OpenWebText-like text."""
        self.let_go_documents = self.documents
        self.starts, self.pieces = [], []

    def add(self, unit: int, offset: int, n: int, width: int) -> None:
        last = self.pieces[-1] if self.pieces else None
        if unit >= 0 and last is not None and last[0] == unit and last[1] + last[2] * width == offset:
            self.pieces[-1] = (unit, last[1], last[2] + n)
        else:
            self.pieces.append((unit, offset, n))


def _note_place(ranges: list[list[int]], place: tuple[int, int]) -> None:
    if ranges and ranges[-1][0] == place[0] and ranges[-1][2] == place[1]:
        ranges[-1][2] += 1
    else:
        ranges.append([place[0], place[1], place[1] + 1])


class _Split:
    """``shard.rs``'s ``Shards`` on lengths: one split's shards, as plans."""

    def __init__(self, name: str, shard_tokens: int, width: int) -> None:
        self.name, self.shard_tokens, self.width = name, max(1, shard_tokens), width
        self.done: list[ShardPlan] = []
        self.open: ShardPlan | None = None
        self.waiting: list[Piece] = []
        self.waiting_len = 0
        self.in_doc = self.movable = False
        self.document = 0
        self.place = (0, 0)

    def _start(self, continues: bool) -> None:
        first = self.document + int(continues)
        self.open = ShardPlan(self.name, len(self.done), continues, first)

    def _finish_shard(self) -> None:
        if self.open is not None:
            self.done.append(self.open)
            self.open = None

    def begin(self, document: int, place: tuple[int, int]) -> None:
        self.end()
        self.in_doc, self.document, self.place = True, document, place
        if self.open is not None and self.open.tokens >= self.shard_tokens:
            self._finish_shard()
        if self.open is None:
            self._start(False)
        assert self.open is not None
        self.movable = self.open.tokens > 0
        if not self.movable:
            self.open.starts.append(0)
            _note_place(self.open.ranges, place)

    def whole(self, document: int, place: tuple[int, int], pieces: list[Piece], n: int) -> None:
        self.begin(document, place)
        if self.movable:
            assert self.open is not None
            if self.open.tokens + n > self.shard_tokens:
                self._finish_shard()
                self._start(False)
            self._place_waiting()
        self._write(pieces)
        self.in_doc = False

    def push(self, pieces: list[Piece], n: int) -> None:
        if not self.movable:
            self._write(pieces)
            return
        self.waiting.extend(pieces)
        self.waiting_len += n
        assert self.open is not None
        if self.open.tokens + self.waiting_len > self.shard_tokens:
            self._finish_shard()
            self._start(False)
            self._place_waiting()

    def _place_waiting(self) -> None:
        assert self.open is not None
        self.open.starts.append(self.open.tokens)
        _note_place(self.open.ranges, self.place)
        self.movable = False
        waiting, self.waiting, self.waiting_len = self.waiting, [], 0
        self._write(waiting)

    def _write(self, pieces: list[Piece]) -> None:
        width = self.width
        for unit, offset, n in pieces:
            while n > 0:
                if self.open is None or self.open.tokens >= self.shard_tokens:
                    self._finish_shard()
                    self._start(True)
                    assert self.open is not None
                    self.open.starts.append(0)
                    _note_place(self.open.ranges, self.place)
                room = min(self.shard_tokens - self.open.tokens, n)
                self.open.add(unit, offset, room, width)
                self.open.tokens += room
                n -= room
                if unit >= 0:
                    offset += room * width

    def whole_run(self, input: int, numbers: Any, places: Any, unit: int, offsets: Any, lengths: Any) -> None:
        """``whole`` for each of these documents in turn (numpy arrays: their numbers,
        their places in ``input``, their byte offsets in unit file ``unit`` and their
        ids), a shard at a time: the documents that fit what is left of the open shard
        are found by a search on their running sum, not one by one. No document may be
        open (``end`` was called)."""
        import numpy as np

        size, width, m = self.shard_tokens, self.width, len(lengths)
        if m and int(lengths.min()) < 0:
            # Skeletons are checked before; on a negative length the search below
            # would not move on.
            raise ValueError(f"unit {unit}: a document of {int(lengths.min())} ids")
        ends = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(lengths, out=ends[1:])
        i = 0
        while i < m:
            # ``begin``'s and ``whole``'s choice of shard for document i.
            if self.open is not None and self.open.tokens >= size:
                self._finish_shard()
            if self.open is not None and self.open.tokens > 0 and self.open.tokens + int(lengths[i]) > size:
                self._finish_shard()
            if self.open is None:
                self.document = int(numbers[i])
                self._start(False)
            shard = self.open
            assert shard is not None
            if shard.tokens == 0 and int(lengths[i]) > size:
                # Longer than a shard: cut over the next ones, document by document.
                n = int(lengths[i])
                self.whole(int(numbers[i]), (input, int(places[i])), [(unit, int(offsets[i]), n)], n)
                i += 1
                continue
            # Documents i..j-1 go in: each starts before the shard is full and ends
            # within it (document i does, by the choice above).
            room = int(ends[i]) + size - shard.tokens
            j = min(
                int(np.searchsorted(ends, room, side="right")) - 1,
                int(np.searchsorted(ends, room, side="left")),
                m,
            )
            shard.starts.extend((ends[i:j] - int(ends[i]) + shard.tokens).tolist())
            run = places[i:j]
            breaks = (np.flatnonzero(run[1:] != run[:-1] + 1) + 1).tolist()
            for a, b in zip([0, *breaks], [*breaks, j - i], strict=True):
                _note_place(shard.ranges, (input, int(run[a])))
                shard.ranges[-1][2] = int(run[b - 1]) + 1
            full = np.flatnonzero(lengths[i:j] > 0) + i
            if len(full):
                at, n = offsets[full], lengths[full]
                breaks = (np.flatnonzero(at[1:] != at[:-1] + n[:-1] * width) + 1).tolist()
                for a, b in zip([0, *breaks], [*breaks, len(full)], strict=True):
                    shard.add(unit, int(at[a]), int(n[a:b].sum()), width)
            shard.tokens += int(ends[j] - ends[i])
            self.document, self.place = int(numbers[j - 1]), (input, int(places[j - 1]))
            self.movable = False
            i = j

    def end(self) -> None:
        if self.in_doc and self.movable:
            self._place_waiting()
        self.in_doc = False

    def finish(self) -> None:
        self.end()
        self._finish_shard()


def _mix_array(x: Any) -> Any:
    """``_mix`` of each of a uint64 array (numpy's uint64 arithmetic wraps, as ``mix``'s)."""
    import numpy as np

    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _mix(x: int) -> int:
    """SplitMix64's finaliser (``writer.rs``'s ``mix``)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


class ShardPlanner:
    """``writer.rs``'s ``DatasetWriter`` on skeletons: ``add(unit, items)`` for each unit
    in input order, then ``finish``; ``shards`` then holds every split's plans."""

    def __init__(
        self,
        is_text: list[bool],
        splits: tuple[str, ...],
        shard_tokens: int,
        width: int,
        val_fraction: float,
        seed: int,
        file_bos: int | None,
        file_eos: int | None,
        after_each_file: int | None,
        bulk: bool = True,
    ) -> None:
        # bulk=False: every document through the per-document rules, the reference the
        # bulk path (``_Split.whole_run``) is tested against.
        self.bulk = bulk
        self.is_text, self.width = is_text, width
        self.val_fraction, self.seed = val_fraction, seed & _MASK
        self.bos, self.eos, self.after = file_bos, file_eos, after_each_file
        self.splits = [_Split(name, shard_tokens, width) for name in splits]
        self.documents = 0
        self.current: int | None = None
        self.ended = 0
        self.started = False
        self.place = (0, 0)
        self.given = [0 for _ in splits]

    def closed(self) -> list[ShardPlan]:
        """The shards finished since the last call: nothing added later changes them,
        so they can be written while later units are still being encoded."""
        out: list[ShardPlan] = []
        for i, split in enumerate(self.splits):
            out += split.done[self.given[i] :]
            self.given[i] = len(split.done)
        return out

    def open_units(self) -> set[int]:
        """The units whose ids a shard not yet closed holds (or will: a document
        waiting for the next shard)."""
        out: set[int] = set()
        for split in self.splits:
            pieces = [*(split.open.pieces if split.open is not None else []), *split.waiting]
            out.update(p[0] for p in pieces if p[0] >= 0)
        return out

    def _split_of(self, n: int) -> int:
        if self.val_fraction <= 0.0:
            return 0
        h = _mix(_mix(n) ^ self.seed)
        return int((h >> 11) / (1 << 53) < self.val_fraction)

    def _open(self, input: int) -> tuple[int, int]:
        self._end()
        n = self.documents
        self.documents += 1
        if input != self.place[0]:
            self.place = (input, 0)
        elif n > 0:
            self.place = (input, self.place[1] + 1)
        return n, self._split_of(n)

    def _begin(self, input: int) -> None:
        n, split = self._open(input)
        self.current = split
        self.splits[split].begin(n, self.place)

    def _whole(self, input: int, pieces: list[Piece], count: int) -> None:
        n, split = self._open(input)
        self.splits[split].whole(n, self.place, pieces, count)

    def _push(self, input: int, pieces: list[Piece], count: int) -> None:
        if count == 0:
            return
        if self.current is None:
            self._begin(input)
        assert self.current is not None
        self.splits[self.current].push(pieces, count)

    def _end(self) -> None:
        if self.current is not None:
            split, self.current = self.current, None
            self.splits[split].end()

    def _mark(self, input: int, id: int | None) -> None:
        if id is not None:
            self._push(input, [(-1, id, 1)], 1)

    def end_until(self, input: int) -> None:
        while self.ended < input:
            ended = self.ended
            if self.is_text[ended]:
                if not self.started and self.bos is not None:
                    self._begin(ended)
                    self._mark(ended, self.bos)
                self._mark(ended, self.eos)
            self._mark(ended, self.after)
            self._end()
            self.ended += 1
            self.started = False

    def add(self, unit: int, items: list[Item]) -> None:
        """The items of unit file ``unit``, in order."""
        import numpy as np

        width = self.width
        for item in items:
            input = item.input
            self.end_until(input)
            text = self.is_text[input]
            if not self.started:
                self.started = True
                if text and self.bos is not None:
                    self._begin(input)
                    self._mark(input, self.bos)
            cuts = np.frombuffer(item.cuts, dtype="<u8").astype(np.int64)
            first = 0
            if text and len(cuts) and self.current is not None:
                # The document the item began in, ended by its first cut.
                first = 1
                self._push(input, [(unit, item.offset, int(cuts[0]))], int(cuts[0]))
                self._end()
            starts = np.concatenate(([0], cuts[:-1])) if len(cuts) else cuts
            self._wholes(input, unit, item.offset + starts[first:] * width, cuts[first:] - starts[first:])
            if text:
                start = int(cuts[-1]) if len(cuts) else 0
                self._push(input, [(unit, item.offset + start * width, item.ids - start)], item.ids - start)

    def _wholes(self, input: int, unit: int, offsets: Any, lengths: Any) -> None:
        """Whole documents of ``input``, one after another in unit file ``unit``: each
        ``_whole``, but a split's share of them at once (``_Split.whole_run``)."""
        import numpy as np

        m = len(lengths)
        if not self.bulk:
            for at, n in zip(offsets.tolist(), lengths.tolist(), strict=True):
                self._whole(input, [(unit, at, n)], n)
            return
        if m == 0:
            return
        self._end()
        numbers = np.arange(self.documents, self.documents + m, dtype=np.uint64)
        # ``_open``'s places: from 0 in a new input, else on from the last document's.
        if input != self.place[0]:
            first = 0
        else:
            first = self.place[1] + 1 if self.documents > 0 else self.place[1]
        places = np.arange(first, first + m, dtype=np.int64)
        self.documents += m
        self.place = (input, first + m - 1)
        if self.val_fraction <= 0.0:
            self.splits[0].whole_run(input, numbers, places, unit, offsets, lengths)
            return
        seed = np.uint64(self.seed)
        h = _mix_array(_mix_array(numbers) ^ seed)
        to_val = (h >> np.uint64(11)).astype(np.float64) / float(1 << 53) < self.val_fraction
        for split, mine in enumerate((~to_val, to_val)):
            if mine.any():
                at = np.flatnonzero(mine)
                self.splits[split].whole_run(input, numbers[at], places[at], unit, offsets[at], lengths[at])

    def finish(self, n_inputs: int) -> list[ShardPlan]:
        """Ends the inputs and every split's last shard; returns every shard, by split."""
        self.end_until(n_inputs)
        self._end()
        for split in self.splits:
            split.finish()
        return [shard for split in self.splits for shard in split.done]
