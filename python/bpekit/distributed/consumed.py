"""Unit files deleted as soon as their ids are in written shards, and the records a
rerun goes on from.

Why: a unit file lives only until the shards its ids go into are written, a few seconds
where the workers write the shards while later units encode (Ray). Kept to the end of
the run, owt-12G's 5.9 GB of unit files reached the disk beside the 5.9 GB of shards
(the page cache writes back what it holds past its dirty limit), and deleting them at
the end waited for that writeback: on this VM's disk a Ray run on 2 CPUs spent ~17 s
more encoding than one process and 7 s deleting. Deleted within seconds, their pages
are dropped before the kernel writes them.

So a rerun goes on from shards, not only from unit files. The driver keeps, in the
units' folder:

- ``written.jsonl``: a line per shard the workers wrote, appended once its files are in
  place (its manifest entry and what its writer returned); a rerun keeps each whose
  files still have the sizes and sha256 it gives;
- ``unit-NNNNNN.skel``, written before a unit file is deleted: the unit's skeleton
  (what the planner needs of it, ``shardplan.Item``) and the shards its ids went into,
  beside the worker's own record of the unit (``unit-NNNNNN.json``).

A unit whose file is gone is kept by a rerun only when its skeleton is there and every
shard it names was kept; else it is encoded again, and those shards written again.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bpekit._atomic import atomic_write
from bpekit._paths import read_regular
from bpekit.dataset.folder import check_shards
from bpekit.dataset.spec import index_name, shard_name
from bpekit.distributed.shardplan import Item, ShardPlan
from bpekit.distributed.work import WRITTEN_LOG, unit_files, whole_record

__all__ = ["Consumption", "ShardKey", "kept_skeleton", "own_row", "present", "written_log", "written_shards"]

#: A shard, by split and number.
ShardKey = tuple[str, int]


def written_log(work_dir: str | os.PathLike[str]) -> dict[ShardKey, dict[str, Any]]:
    """The shards an earlier run recorded as written, by ``(split, k)``: each line's
    ``entry`` (its manifest entry) and ``written`` (its writer's result). A line that is
    not whole (the driver killed while appending it) is left out."""
    out: dict[ShardKey, dict[str, Any]] = {}
    try:
        data = read_regular(Path(work_dir) / WRITTEN_LOG)
    except OSError:
        return out
    for line in data.splitlines():
        try:
            row = json.loads(line)
            split, k = row["split"], row["k"]
            if type(split) is str and type(k) is int and isinstance(row["entry"], dict):
                out[split, k] = row
        except (ValueError, KeyError, TypeError, RecursionError):
            continue
    return out


def _items_json(items: list[Item]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for i in items:
        cuts = base64.b64encode(i.cuts).decode()
        rows.append([i.input, i.at, i.documents, i.read, i.skipped, i.offset, i.ids, cuts])
    return rows


def _items_of(rows: Any) -> list[Item]:
    """``_items_json`` read back; a ValueError where a row is not one it writes."""
    import numpy as np

    if not isinstance(rows, list):
        raise ValueError("items is not a list")
    items = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 8:
            raise ValueError("an item is not a row of 8")
        numbers, cuts = row[:7], row[7]
        if any(type(n) is not int or n < 0 for n in numbers) or type(cuts) is not str:
            raise ValueError("an item's numbers are not counts")
        raw = base64.b64decode(cuts, validate=True)
        if len(raw) % 8:
            raise ValueError("an item's cuts are not uint64s")
        input, at, documents, read, skipped, offset, ids = numbers
        # The plan takes the lengths between cuts as they are: none may be negative.
        ends = np.frombuffer(raw, dtype="<u8")
        if len(ends) and (bool(np.any(ends[1:] < ends[:-1])) or int(ends[-1]) > ids):
            raise ValueError("an item's cuts are not in order within its ids")
        items.append(Item(input, at, documents, read, skipped, offset, ids, raw))
    return items


def kept_skeleton(
    work_dir: str | os.PathLike[str], index: int
) -> tuple[dict[str, Any], list[Item], list[ShardKey]] | None:
    """Unit ``index``, whose file an earlier run deleted once its shards were written:
    the worker's record of it, its skeleton and the shards it names. None where its
    file is still there (``work.kept_record`` judges it) or a record is missing or not
    one bpekit writes."""
    ids, record = unit_files(work_dir, index, ".ids")
    skel = unit_files(work_dir, index, ".skel")[0]
    try:
        if ids.exists():
            return None
        entry = json.loads(read_regular(record))
        data = json.loads(read_regular(skel))
        if entry["unit"] != index or data["unit"] != index or not whole_record(entry):
            return None
        items = _items_of(data["items"])
        if type(entry["tokens"]) is not int or sum(i.ids for i in items) != entry["tokens"]:
            return None
        shards = data["shards"]
        if not isinstance(shards, list) or not all(
            isinstance(s, list) and len(s) == 2 and type(s[0]) is str and type(s[1]) is int for s in shards
        ):
            return None
        return entry, items, [(s, k) for s, k in shards]
    except (OSError, ValueError, KeyError, TypeError, RecursionError, binascii.Error):
        return None


class Consumption:
    """Which unit files can go: the driver tells it each unit planned (``planned``),
    each shard closed (``closed``) and each written (``written``), and it deletes a
    unit's file once no shard still to be written, and no shard still open, holds its
    ids, after recording its skeleton (``unit-NNNNNN.skel``); written shards are
    appended to ``written.jsonl`` first."""

    def __init__(self, work_dir: str | os.PathLike[str], kept: list[dict[str, Any]]) -> None:
        """``kept``: the lines of the shards kept from an earlier run, which the log
        starts with (written again whole: a line cut by a driver killed while writing
        it goes, and the units' folder cleared for a new plan keeps them)."""
        self.folder = Path(work_dir)
        self.items: dict[int, list[Item]] = {}  # planned units whose file is still there
        self.shards: dict[int, list[ShardKey]] = {}  # the shards each unit's ids went into
        self.pending: dict[int, int] = {}  # closed shards not yet written, by unit
        self.log_path = self.folder / WRITTEN_LOG
        # A link planted under the log's name goes (never followed), as a file would.
        try:
            os.unlink(self.log_path)
        except FileNotFoundError:
            pass
        atomic_write(self.log_path, b"".join(json.dumps(row).encode() + b"\n" for row in kept))
        # O_NOFOLLOW: a link planted under the log's name is refused, never appended to.
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.log_path, flags, 0o666)
        except OSError as e:
            raise OSError(e.errno, e.strerror or str(e), str(self.log_path)) from None
        self.log = os.fdopen(fd, "ab")

    def planned(self, unit: int, items: list[Item]) -> None:
        self.items[unit] = items
        self.shards.setdefault(unit, [])

    def closed(self, shard: ShardPlan, written: bool) -> None:
        """A shard the planner closed; ``written``: kept from an earlier run."""
        for unit in _units(shard):
            self.shards.setdefault(unit, []).append((shard.split, shard.k))
            if not written:
                self.pending[unit] = self.pending.get(unit, 0) + 1

    def written(self, shard: ShardPlan, entry: dict[str, Any], result: dict[str, Any]) -> None:
        row = {"split": shard.split, "k": shard.k, "entry": entry, "written": result}
        try:
            self.log.write(json.dumps(row).encode() + b"\n")
            self.log.flush()
        except OSError as e:  # a full disk names no file: name the log
            raise OSError(e.errno, e.strerror or str(e), str(self.log_path)) from None
        for unit in _units(shard):
            self.pending[unit] -= 1

    def release(self, still_open: Iterable[int]) -> None:
        """Deletes the files of the planned units whose ids are all in written shards
        (none in ``still_open``: the units the planner's open shards hold)."""
        held = set(still_open)
        for unit in [u for u in self.items if u not in held and self.pending.get(u, 0) == 0]:
            skel = unit_files(self.folder, unit, ".skel")[0]
            data = {
                "unit": unit,
                "shards": [list(s) for s in self.shards[unit]],
                "items": _items_json(self.items[unit]),
            }
            atomic_write(skel, json.dumps(data).encode())
            unit_files(self.folder, unit, ".ids")[0].unlink(missing_ok=True)
            # No later shard holds a unit planned and out of the open shards.
            del self.items[unit], self.shards[unit]

    def close(self) -> None:
        self.log.close()


def _units(shard: ShardPlan) -> set[int]:
    return {p[0] for p in shard.pieces if p[0] >= 0}


def written_shards(root: Path, folder: Path, shard_format: str) -> dict[ShardKey, dict[str, Any]]:
    """The shards an earlier run's workers recorded as written in ``folder``
    (``consumed.written_log``), each under its own names, whose files in ``root``
    still have the sizes and sha256 recorded."""
    if not folder.is_dir() or not root.is_dir():
        return {}
    logged = {key: row for key, row in written_log(folder).items() if own_row(key, row, shard_format)}
    ok = check_shards(root, [row["entry"] for row in logged.values()], None)
    return {key: row for key, row in logged.items() if ok[id(row["entry"])]}


def own_row(key: ShardKey, row: dict[str, Any], shard_format: str) -> bool:
    """Whether a line of ``written.jsonl`` is shard ``key``'s, as ``dataset._write_by_workers``
    writes it: its files named as the shard's, its sizes and hashes its writer's."""
    split, k = key
    entry, written = row["entry"], row.get("written")
    try:
        beside = f"{split}/{k:05d}."  # a trainer's files: the shard's name, another suffix
        return bool(
            isinstance(written, dict)
            and entry["file"] == shard_name(split, k, shard_format)
            and entry["index"] == index_name(split, k)
            and all(
                f["file"].startswith(beside) and "/" not in f["file"][len(beside) :]
                for f in entry.get("trainer_files", [])
            )
            and entry.get("trainer_files", []) == (written["trainer_files"] or [])
            and (entry["size"], entry["sha256"], entry["index_sha256"])
            == (written["size"], written["sha256"], written["index_sha256"])
        )
    except (KeyError, TypeError, ValueError):
        return False


def present(root: Path, entry: dict[str, Any]) -> bool:
    """Whether a shard's files are in ``root`` at the sizes its entry gives (checked
    whole before the folder was made ready: this sees what that kept)."""
    try:
        side = entry.get("trainer_files", [])
        sizes = [(entry["file"], entry["size"])] + [(f["file"], f["size"]) for f in side]
        return (root / entry["index"]).is_file() and all((root / f).stat().st_size == n for f, n in sizes)
    except (OSError, KeyError, TypeError):
        return False
