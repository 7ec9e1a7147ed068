"""The driver's plan: the inputs cut into units whose results add up exactly to the whole.

A unit is what one task reads:

- a byte range of a plain text file, cut at a safe cut (right before a special token,
  or at a line end that no pre-token crosses), so that its pre-tokens are the file's
  pre-tokens in that range;
- a byte range of a plain JSON-lines file, cut after a newline (whole records);
- a run of row groups of a Parquet file;
- a whole ``.gz`` or ``.zst`` file, which cannot be read from the middle.

The cuts are found by the core (``_core.file_ranges``), which reads only the bytes near
each cut, so planning a 12 GB file takes milliseconds.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
>>> _ = path.write_text("one<|endoftext|>two<|endoftext|>three")
>>> plan = plan_units(path, special_tokens=["<|endoftext|>"], unit_bytes=8)
>>> [u.range for u in plan.units]
[(0, 19), (19, 37)]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bpekit import _core, _stores
from bpekit.options import DEFAULT_UNIT_BYTES
from bpekit.sources import resolve_files

__all__ = ["DEFAULT_UNIT_BYTES", "Plan", "Unit", "plan_units"]


@dataclass(frozen=True)
class Unit:
    """One task's share of the inputs: ``range`` is a byte range (text, JSON lines), a
    range of row groups (Parquet), or ``None`` (a whole compressed file)."""

    index: int
    input: int  # the file's index among the planned files
    path: str
    format: str  # "text" | "jsonl" | "parquet"
    range: tuple[int, int] | None
    size: int  # bytes it covers on disk, for progress

    def source(self, text_field: str, bad_records: str) -> tuple[Any, ...]:
        """The native API's input tuple that reads this unit."""
        url = _stores.is_url(self.path)
        if self.format in ("text", "jsonl") and url:
            field = text_field if self.format == "jsonl" else ""
            return ("stream", self.path, self.format, field, _stores.open_object(self.path), self.size)
        if self.format == "text":
            return ("text", self.path, self.range)
        if self.format == "jsonl":
            return ("jsonl", self.path, text_field, self.range)
        from bpekit import _arrow

        path = self.path if url else Path(self.path)
        return _arrow.parquet_source(path, text_field, bad_records, self.range)


@dataclass(frozen=True)
class Plan:
    """The units, and the files they read with what identifies each file's contents
    (size and modification time; an object's size and version), which a resumed run
    must find unchanged."""

    units: list[Unit]
    files: list[tuple[str, str, int, int | str]]  # (path or URL, format, size, mtime_ns or version)

    def describe(self) -> dict[str, Any]:
        """The plan as JSON-able data, to compare a resumed run's plan against."""
        return {"files": [list(f) for f in self.files], "units": [asdict(u) for u in self.units]}

    @property
    def text_files(self) -> int:
        return sum(1 for f in self.files if f[1] == "text")

    def stats(self, unit_stats: dict[int, dict[str, Any]], kept: int) -> dict[str, Any]:
        """The units' stats (by unit index) added up as one run over the whole would
        give them, with ``"units"`` and ``"kept"``. A text file is one document,
        however many units read it."""
        stats: dict[str, Any] = {"documents": 0, "skipped": 0, "skipped_examples": [], "bytes": 0}
        for unit in self.units:
            s = unit_stats[unit.index]
            stats["documents"] += s["documents"] - (unit.format == "text")
            stats["skipped"] += s["skipped"]
            stats["bytes"] += s["bytes"]
            stats["skipped_examples"] = (stats["skipped_examples"] + list(s["skipped_examples"]))[:5]
        stats["documents"] += self.text_files
        stats["files"] = len(self.files)
        stats["units"] = len(self.units)
        stats["kept"] = kept
        return stats


def plan_units(
    inputs: Any,
    *,
    special_tokens: Sequence[str] = (),
    pattern: str = "gpt2",
    special_in_text: str | None = None,
    format: str | None = None,
    text_field: str = "text",
    unit_bytes: int | None = DEFAULT_UNIT_BYTES,
) -> Plan:
    """The units of about ``unit_bytes`` (None: ``DEFAULT_UNIT_BYTES``) that ``inputs``
    (paths, directories, globs: see ``bpekit.sources.resolve_files``) are read in. Text
    files are cut before the special tokens that are special in their text (none under
    ``special_in_text="text"``) or at safe line ends of ``pattern``."""
    if unit_bytes is None:
        unit_bytes = DEFAULT_UNIT_BYTES
    if not isinstance(unit_bytes, int) or unit_bytes < 1:
        raise ValueError(f"unit_bytes must be a positive number of bytes, not {unit_bytes!r}")
    units: list[Unit] = []
    files: list[tuple[str, str, int, int | str]] = []
    for k, (path, fmt) in enumerate(resolve_files(inputs, format=format)):
        if isinstance(path, _stores.StoreObject):
            # An object is read whole, as it comes (a stream cannot start in the
            # middle); a Parquet object in runs of row groups, as a file is.
            files.append((path.url, fmt, path.size, path.version))
            runs = _row_group_runs(path.url, unit_bytes) if fmt == "parquet" else [(None, path.size)]
            units.extend(Unit(len(units) + j, k, path.url, fmt, r, n) for j, (r, n) in enumerate(runs))
            continue
        st = path.stat()
        files.append((str(path), fmt, st.st_size, st.st_mtime_ns))
        for rng, size in _cuts(path, fmt, st.st_size, unit_bytes, special_tokens, pattern, special_in_text):
            units.append(Unit(len(units), k, str(path), fmt, rng, size))
    return Plan(units, files)


def _cuts(
    path: Path,
    fmt: str,
    size: int,
    unit_bytes: int,
    special_tokens: Sequence[str],
    pattern: str,
    special_in_text: str | None,
) -> list[tuple[tuple[int, int] | None, int]]:
    """``(range, size)`` of each unit of one file."""
    if fmt == "parquet":
        return _row_group_runs(path, unit_bytes)
    if path.name.lower().endswith((".gz", ".zst")) or not path.is_file():
        return [(None, size)]  # read whole: a stream cannot start in the middle
    ranges = _core.file_ranges(
        os.fspath(path), fmt, unit_bytes, list(special_tokens), pattern, special_in_text
    )
    return [((a, b), b - a) for a, b in ranges] or [((0, 0), 0)]


def _row_group_runs(path: Path | str, unit_bytes: int) -> list[tuple[tuple[int, int] | None, int]]:
    """Consecutive row groups of about ``unit_bytes`` (by their compressed sizes)."""
    from bpekit import _arrow

    pq = _arrow._pyarrow(str(path)).parquet
    try:
        metadata = pq.ParquetFile(_arrow._open_parquet(path)).metadata
    except Exception as e:  # pyarrow's own errors name no file
        raise ValueError(f"{path}: not a valid Parquet file ({e})") from None
    runs: list[tuple[tuple[int, int] | None, int]] = []
    start, size = 0, 0
    for g in range(metadata.num_row_groups):
        rg = metadata.row_group(g)
        size += sum(rg.column(i).total_compressed_size for i in range(rg.num_columns))
        if size >= unit_bytes:
            runs.append(((start, g + 1), size))
            start, size = g + 1, 0
    if start < metadata.num_row_groups or not runs:
        runs.append(((start, metadata.num_row_groups), size))
    return runs
