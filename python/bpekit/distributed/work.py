"""The shard functions: what one task does with one unit. They know nothing of Ray or of
process pools: plain functions of picklable arguments, run the same way by either
backend, or called directly: ``count_unit`` counts a unit's pre-tokens,
``reduce_partition`` adds one partition of every unit's counts, ``encode_unit`` encodes a
unit into a unit file that the driver replays into the dataset, ``unit_items`` also gives
the skeleton that the driver plans the shards from (made as the file is written).

A unit's counts are split by word into partitions, one per reducer
(``reduce_partition``): reducer ``r`` adds partition ``r`` of every unit, and the
driver appends the reducers' sums, which share no word, into the whole table
(``WordCounts._from_partitions``). So no process adds every unit's counts, and the
driver receives the final table once. The partitions stay where the unit was counted
(Ray's object store) until their reducer takes them; or, when the run keeps its work in
a folder (``work_dir``, or a temporary one on this machine for the local pool), they
are saved there one after another as ``unit-NNNNNN.parts`` beside a
``unit-NNNNNN.json`` that records the file's size, CRC-32, where each partition ends,
and the unit's stats. The JSON is written last, so a unit whose JSON is present and
whose file matches it is done; a rerun after the driver died keeps it.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import re
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bpekit import _core
from bpekit._atomic import atomic_write
from bpekit._paths import crc32_of, read_regular
from bpekit.dataset.job import Job
from bpekit.distributed.backends import Handle, fetch_each
from bpekit.distributed.plan import Unit
from bpekit.distributed.shardplan import Item, unit_skeleton
from bpekit.options import ReadOptions, RunOptions

__all__ = [
    "WRITTEN_LOG",
    "CountSpec",
    "EncodeSpec",
    "UnitCounts",
    "UnitEncoded",
    "count_unit",
    "count_unit_kept",
    "encode_unit",
    "kept_record",
    "kept_unit",
    "partition_handles",
    "reduce_partition",
    "resume_units",
    "save_record",
    "unit_files",
    "unit_items",
    "whole_record",
]


@dataclass(frozen=True)
class CountSpec:
    """What every count task is told: the options of ``bpekit.count_pretokens``, and
    where to keep results (``work_dir``: a folder all workers see, or None to send them
    back)."""

    special_tokens: tuple[str, ...]
    pattern: str
    read: ReadOptions = field(default_factory=ReadOptions)
    num_threads: int = 1
    work_dir: str | None = None
    # How many partitions the counts are split into (``count::partition``): one per
    # reducer. The counts never depend on it.
    parts: int = 1
    # For tests of retries: (unit index, marker path): that unit's first attempt, the
    # one that finds no marker, makes it and kills its worker.
    crash_once: tuple[int, str] | None = None


@dataclass
class UnitCounts:
    """A unit's result: its counts as the bytes of each partition (``None`` where they
    were saved in ``work_dir``, or are kept apart by the backend), where each partition
    ends in the saved file (``[]`` when not saved), and what it read (the stats of
    ``bpekit.count_pretokens``'s counts)."""

    index: int
    parts: list[bytes] | None
    ends: list[int]
    stats: dict[str, Any]


#: The shards a dataset's workers wrote, one JSON line each, which its rerun keeps
#: (``consumed``).
WRITTEN_LOG = "written.jsonl"


def unit_files(work_dir: str | os.PathLike[str], index: int, suffix: str = ".parts") -> tuple[Path, Path]:
    """Where unit ``index`` keeps its result (counts: ``.parts``; ids: ``.ids``) and its
    record."""
    base = Path(work_dir) / f"unit-{index:06d}"
    return base.with_suffix(suffix), base.with_suffix(".json")


def _crash_once(unit: Unit, crash_once: tuple[int, str] | None) -> None:
    if crash_once is not None and crash_once[0] == unit.index:
        marker = Path(crash_once[1])
        if not marker.exists():
            marker.touch()
            os._exit(1)


def save_record(record: Path, index: int, result: Path, crc32: int, **extra: Any) -> None:
    """Records that unit ``index`` is done, with its result file's size and CRC-32
    (``crc32``, taken as the file was written: what a rerun checks before keeping it).
    Written last, and atomically.

    A CRC, not a sha256: the check is against a torn or damaged file, not a forged
    one, and reading a unit file back to hash it cost a Ray dataset encode ~14 CPU
    seconds of the ~30 it spent over one process's on ``owt-12G``."""
    entry = {"unit": index, "size": result.stat().st_size, "crc32": crc32, **extra}
    atomic_write(record, json.dumps(entry).encode())


def kept_record(work_dir: str | os.PathLike[str], index: int, suffix: str) -> dict[str, Any] | None:
    """Unit ``index``'s record from an earlier run, if it is there and its result file
    has the size and CRC-32 it gives; else None."""
    result, record = unit_files(work_dir, index, suffix)
    try:
        entry = json.loads(read_regular(record))
        if entry["unit"] != index or result.stat().st_size != entry["size"] or not whole_record(entry):
            return None
        return entry if crc32_of(result) == entry["crc32"] else None
    # RecursionError: JSON nested ~1,000 deep, which is no record of bpekit's either.
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def whole_record(entry: dict[str, Any]) -> bool:
    """Whether a record's ``stats`` hold what ``Plan.stats`` adds up (a record edited
    or cut by hand is not kept: its unit is done again)."""
    stats = entry["stats"]
    numbers = all(type(stats.get(k)) is int for k in ("documents", "skipped", "bytes"))
    return numbers and isinstance(stats.get("skipped_examples"), list)


def count_unit(unit: Unit, spec: CountSpec) -> UnitCounts:
    """Counts the pre-tokens of one unit, as ``bpekit.count_pretokens`` counts them, in
    ``spec.parts`` partitions: sent back, or saved one after another in the unit's
    ``.parts`` file of ``work_dir`` (the record gives where each ends)."""
    _crash_once(unit, spec.crash_once)
    read = spec.read
    source = unit.source(read.text_field, read.bad_records)
    run = RunOptions(num_threads=spec.num_threads)
    counts = _core.count_pretokens([source], list(spec.special_tokens), read, run, pattern=spec.pattern)
    stats = dict(counts.stats or {})
    parts = counts._partition_bytes(spec.parts)
    del counts
    if spec.work_dir is None:
        return UnitCounts(unit.index, parts, [], stats)
    path, record = unit_files(spec.work_dir, unit.index, ".parts")
    ends = list(itertools.accumulate(len(p) for p in parts))
    data = b"".join(parts)
    atomic_write(path, data)
    save_record(record, unit.index, path, zlib.crc32(data), stats=stats, ends=ends)
    return UnitCounts(unit.index, None, ends, stats)


def count_unit_kept(unit: Unit, spec: CountSpec) -> tuple[UnitCounts, list[bytes]]:
    """``count_unit`` sending its partitions apart from the rest, for a backend that
    keeps them where they were made (Ray's object store) until a reducer takes them."""
    result = count_unit(unit, spec)
    parts, result.parts = result.parts or [], None
    return result, parts


# The first bytes of a saved WordCounts (docs/wordcounts.md).
_COUNTS_MAGIC = b"BPEKITWC"


def kept_unit(work_dir: str | os.PathLike[str], index: int) -> UnitCounts | None:
    """Unit ``index``'s counts from an earlier run, if its record is there and its
    ``.parts`` file has the size and CRC-32 the record gives; else None."""
    entry = kept_record(work_dir, index, ".parts")
    try:
        if entry is None:
            return None
        ends = [int(e) for e in entry["ends"]]
        if any(b < a for a, b in itertools.pairwise([0, *ends])) or ends[-1:] != [entry["size"]]:
            return None
        # Each partition starts with a counts file's magic: ends edited by hand, which
        # the file's checksum cannot catch, are not kept.
        with open(unit_files(work_dir, index, ".parts")[0], "rb") as f:
            for start in [0, *ends[:-1]]:
                f.seek(start)
                if f.read(len(_COUNTS_MAGIC)) != _COUNTS_MAGIC:
                    return None
        return UnitCounts(index, None, ends, dict(entry["stats"]))
    except (OSError, KeyError, TypeError, ValueError):
        return None


def partition_handles(work_dir: str | os.PathLike[str], result: UnitCounts) -> list[Handle]:
    """Where each partition of a unit saved in ``work_dir`` lies: ``(path, start, end)``."""
    path = str(unit_files(work_dir, result.index, ".parts")[0])
    return [(path, a, b) for a, b in itertools.pairwise([0, *result.ends])]


def reduce_partition(part: int, handles: list[Any]) -> bytes:
    """The sum of partition ``part`` of every unit's counts, as bytes
    (``WordCounts._to_bytes``); ``handles`` are where that partition of each unit lies
    (``backends.fetch_each``), taken in the order they are ready."""
    total = _core.CountsSum()
    for data in fetch_each(handles):
        total.add_bytes(data, f"partition {part} of a unit's counts")
    return total.to_bytes()


@dataclass(frozen=True)
class EncodeSpec:
    """What every encode task is told: the tokenizer (pickled: a worker builds it once
    per ``fingerprint``), the job of ``bpekit.encode_dataset`` (how inputs are read,
    each task's threads, the ids' dtype and the records' marks, as the core reads
    them), and where to keep the unit files (``work_dir``: a folder all workers see,
    or None to send them back)."""

    tokenizer: bytes
    fingerprint: str
    job: Job
    work_dir: str | None = None
    crash_once: tuple[int, str] | None = None
    #: The text a worker is likely to encode over the run (``worker_share``), which
    #: its piece caches are sized for; 0: each unit's own.
    table_bytes: int = 0


def worker_share(units: list[Unit], workers: int) -> int:
    """The bytes of ``units`` each of ``workers`` is likely to encode.

    Why: a worker keeps one encoder, and its piece cache, for every unit it gets. Sized
    for one unit of 256 MiB, the cache held 655K pieces, where a worker's share of
    owt-12G on 2 CPUs has about 3.8M distinct ones: those left out were merged again
    at each occurrence. owt-1G on one worker, units of 128 MiB: 5.1 CPU-s against
    5.6 (4 interleaved runs); owt-12G on Ray with 2 CPUs: 43.2-45.3 s against
    45.4-46.1 (one process: 39.1-41.6 s)."""
    return -(-sum(u.size for u in units) // max(workers, 1))


@dataclass
class UnitEncoded:
    """A unit's result: its unit file's bytes (``None`` where it was saved in
    ``work_dir``), its token count, what it read and the file's CRC-32."""

    index: int
    data: bytes | None
    tokens: int
    stats: dict[str, Any]
    crc32: int


# The tokenizers this worker process has built, by fingerprint: a worker runs many
# units, and building o200k's encoder takes ~0.1 s.
_TOKENIZERS: dict[str, Any] = {}


def _tokenizer(spec: EncodeSpec) -> Any:
    tok = _TOKENIZERS.get(spec.fingerprint)
    if tok is None:
        _TOKENIZERS.clear()
        tok = _TOKENIZERS[spec.fingerprint] = pickle.loads(spec.tokenizer)
    return tok


def encode_unit(unit: Unit, spec: EncodeSpec) -> UnitEncoded:
    """Encodes one unit into a unit file (``_core.Encoder.encode_unit``): its items' ids,
    which the driver replays into the dataset as ``bpekit.encode_dataset`` writes it."""
    return _encode_unit(unit, spec)[0]


def _encode_unit(unit: Unit, spec: EncodeSpec) -> tuple[UnitEncoded, list[Item]]:
    """``encode_unit``, with the unit file's skeleton as the core made it while writing."""
    _crash_once(unit, spec.crash_once)
    tok = _tokenizer(spec)
    source = unit.source(spec.job.read.text_field, spec.job.read.bad_records)
    if spec.work_dir is None:
        with tempfile.TemporaryDirectory(prefix="bpekit-unit-") as folder:
            path = Path(folder) / "unit.ids"
            tokens, _, stats, crc, _ = tok._core.encode_unit(
                [source], str(path), spec.job, table_bytes=spec.table_bytes
            )
            data = path.read_bytes()
        return UnitEncoded(unit.index, data, tokens, dict(stats), crc), []
    ids, record = unit_files(spec.work_dir, unit.index, ".ids")
    tokens, _, stats, crc, rows = tok._core.encode_unit(
        [source], str(ids), spec.job, table_bytes=spec.table_bytes
    )
    save_record(record, unit.index, ids, crc, tokens=tokens, stats=dict(stats))
    # A one-input unit's items are all of input 0: its index among the dataset's here.
    if any(row[0] != 0 for row in rows):
        raise RuntimeError(f"{ids}: an item of input other than its unit's; please report this")
    items = [Item(unit.input, *row[1:]) for row in rows]
    return UnitEncoded(unit.index, None, tokens, dict(stats), crc), items


def unit_items(
    unit: Unit, spec: EncodeSpec, specials: list[int], encode: bool
) -> tuple[UnitEncoded | None, list[Item]]:
    """Encodes one unit (``encode_unit``) and gives its skeleton, as the core made it
    while writing the unit file; where ``encode`` is false (the file was kept from an
    earlier run), reads the file back into one (``shardplan.unit_skeleton``): what the
    driver plans the shards from, without their ids."""
    assert spec.work_dir is not None  # workers that write shards see the units' folder
    if encode:
        return _encode_unit(unit, spec)
    path = unit_files(spec.work_dir, unit.index, ".ids")[0]
    width = 2 if spec.job.dtype_name == "uint16" else 4
    return None, unit_skeleton(str(path), unit.input, unit.format == "text", width, specials)


def resume_units(
    work_dir: Path, job: dict[str, Any], indexes: list[int], keep: Any, fresh: bool = False
) -> dict[int, Any]:
    """The units of an earlier run of ``job`` (its options and plan, as JSON-able data)
    found done in ``work_dir`` by ``keep(work_dir, index)``. A folder holding another
    run's work is refused, naming what differs, unless ``fresh`` (the folder is this
    job's own, and another run's work in it is cleared)."""
    if work_dir.exists() and not work_dir.is_dir():
        raise NotADirectoryError(f"{work_dir}: is a file; work_dir names a folder for the units' results")
    work_dir.mkdir(parents=True, exist_ok=True)
    record = work_dir / "plan.json"
    job = json.loads(json.dumps(job))  # tuples as lists, as read back
    try:
        old = json.loads(read_regular(record))
    except FileNotFoundError:
        old = None
    # Not JSON, nested too deeply to read, or no regular file (a FIFO would block).
    except (ValueError, RecursionError, OSError):
        if not fresh:
            raise ValueError(f"{record}: not a bpekit plan; give an empty or new work_dir") from None
        old = {}
    if old is not None and old != job:
        if not fresh:
            what = [k for k in job if old.get(k) != job[k]] or ["the job"]
            raise ValueError(
                f"{work_dir}: holds the work of another run ({', '.join(what)} differ); "
                "give a new work_dir, or delete this one to start over"
            )
        clear_units(work_dir)
        old = None
    if old is None:
        atomic_write(record, json.dumps(job, indent=1).encode())
    kept = {i: keep(work_dir, i) for i in indexes}
    return {i: r for i, r in kept.items() if r is not None}


def clear_units(work_dir: Path) -> None:
    """Deletes the units' results and records (and their temporary files) and the plan
    from ``work_dir`` (no other file), and the folder if that empties it."""
    for path in work_dir.glob("unit-*"):
        if path.suffix in (".parts", ".wc", ".ids", ".json", ".skel") and path.name[5:11].isdigit():
            path.unlink(missing_ok=True)
    # A worker stopped while writing a unit leaves its temporary file (".unit-N.ids.X.tmp",
    # the name both the Rust and the Python atomic writers give it).
    for path in work_dir.glob(".unit-*.tmp"):
        if path.name[6:12].isdigit():
            path.unlink(missing_ok=True)
    # The log of shards written and the plan, by a run killed while writing them
    # (``bpekit._atomic``'s temporary names).
    for path in work_dir.glob(".*.tmp"):
        if re.fullmatch(rf"\.({re.escape(WRITTEN_LOG)}|plan\.json)\.[a-z0-9_]{{8}}\.tmp", path.name):
            path.unlink(missing_ok=True)
    # A run killed while Ray's nodes read its probe file (backends.workers_are_here).
    for path in work_dir.glob(".bpekit-probe-*"):
        if re.fullmatch(r"\.bpekit-probe-[0-9a-f]{32}", path.name):
            path.unlink(missing_ok=True)
    (work_dir / WRITTEN_LOG).unlink(missing_ok=True)
    (work_dir / "plan.json").unlink(missing_ok=True)
    try:
        work_dir.rmdir()
    except OSError:
        pass
