"""The shard functions: what one task does with one unit. They know nothing of Ray or of
process pools: plain functions of picklable arguments, run the same way by either
backend, or called directly.

A unit's counts come back as the bytes of a ``.wc`` file (words unsorted), which the
driver adds in place (``WordCounts._add_bytes``): unpickling them into a ``WordCounts``
first took twice as long as adding them. Or, when the run keeps its work in a folder
every worker can reach, they are saved there as ``unit-NNNNNN.wc`` beside a
``unit-NNNNNN.json`` that records the file's size, sha256 and the unit's stats. The
JSON is written last, so a unit whose JSON is present and whose file matches it is
done; a rerun after the driver died keeps it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bpekit import _core
from bpekit._atomic import atomic_write
from bpekit._paths import sha256_of
from bpekit.distributed.plan import Unit
from bpekit.sources import Skipped, Sources

__all__ = ["CountSpec", "UnitCounts", "count_unit", "kept_unit", "unit_files"]


@dataclass(frozen=True)
class CountSpec:
    """What every count task is told: the options of ``bpekit.count_pretokens``, and
    where to keep results (``work_dir``: a folder all workers see, or None to send them
    back)."""

    special_tokens: tuple[str, ...]
    pattern: str
    errors: str
    special_in_text: str | None
    bad_records: str
    text_field: str
    num_threads: int = 1
    work_dir: str | None = None
    # For tests of retries: (unit index, marker path): that unit's first attempt, the
    # one that finds no marker, makes it and kills its worker.
    crash_once: tuple[int, str] | None = None


@dataclass
class UnitCounts:
    """A unit's result: its counts as bytes (``None`` where they were saved in
    ``work_dir``) and what it read (``bpekit.count_with_stats``'s stats)."""

    index: int
    counts: bytes | None
    stats: dict[str, Any]


def unit_files(work_dir: str | os.PathLike[str], index: int) -> tuple[Path, Path]:
    """Where unit ``index`` keeps its counts and its record."""
    base = Path(work_dir) / f"unit-{index:06d}"
    return base.with_suffix(".wc"), base.with_suffix(".json")


def count_unit(unit: Unit, spec: CountSpec) -> UnitCounts:
    """Counts the pre-tokens of one unit, as ``bpekit.count_pretokens`` counts them."""
    if spec.crash_once is not None and spec.crash_once[0] == unit.index:
        marker = Path(spec.crash_once[1])
        if not marker.exists():
            marker.touch()
            os._exit(1)
    skipped = Skipped()
    source = unit.source(spec.text_field, spec.bad_records, skipped)
    counts, native = _core.count_pretokens(
        [source],
        list(spec.special_tokens),
        pattern=spec.pattern,
        num_threads=spec.num_threads,
        chunk_size=0,
        errors=spec.errors,
        progress=None,
        special_in_text=spec.special_in_text,
        bad_records=spec.bad_records,
    )
    stats = Sources([], skipped=skipped).stats(native)
    if spec.work_dir is None:
        return UnitCounts(unit.index, counts._to_bytes(), stats)
    wc, record = unit_files(spec.work_dir, unit.index)
    counts.save(wc)
    entry = {"unit": unit.index, "size": wc.stat().st_size, "sha256": sha256_of(wc), "stats": stats}
    atomic_write(record, json.dumps(entry).encode())
    return UnitCounts(unit.index, None, stats)


def kept_unit(work_dir: str | os.PathLike[str], index: int) -> UnitCounts | None:
    """Unit ``index``'s result from an earlier run, if its record is there and its
    ``.wc`` file has the size and sha256 the record gives; else None."""
    wc, record = unit_files(work_dir, index)
    try:
        entry = json.loads(record.read_bytes())
        if entry["unit"] != index or wc.stat().st_size != entry["size"] or sha256_of(wc) != entry["sha256"]:
            return None
        return UnitCounts(index, None, entry["stats"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
