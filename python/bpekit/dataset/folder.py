"""The dataset folder a run writes in: checked to be the dataset's alone (no input
inside it, it inside no input folder, no links where its splits go), and made ready
for the dataset asked for: a finished one there already is returned as it is, the
shards of a run that was cut short are kept where they check out, and whatever else
of the dataset's own is removed (never another file).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, NamedTuple

from bpekit._lock import LOCK_NAME
from bpekit._paths import sha256_of
from bpekit._stores import StoreObject, is_url
from bpekit.dataset.manifest import differences, read_own_manifest, start_sha256
from bpekit.dataset.spec import MANIFEST, NPY_HEADER_BYTES, SPLITS, split_names

__all__ = [
    "Done",
    "Fresh",
    "check_output_folder",
    "check_shards",
    "checked_folder",
    "is_file",
    "prepare_folder",
    "shard_files",
]


def is_file(source: tuple[Any, ...]) -> bool:
    """Whether an input of ``Sources`` is a file (told by its name, size and time) or an
    object of a store (told by its URL, size and version)."""
    return (
        source[0] in ("text", "jsonl")
        or isinstance(source[-1], StoreObject)
        or (source[0] == "arrow" and os.path.isfile(source[1]))
    )


def checked_folder(root: Path) -> Path:
    """``root``, refused where it is a file."""
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f"{root}: not a folder; give the folder to write the dataset in")
    return root


def check_output_folder(root: Path, inputs: Any, files: list[str] | None = None) -> None:
    """Refuses a dataset folder that an input folder holds (a later run would read its
    shards as inputs, and ``--overwrite`` would delete them first) or that holds an
    input file (``files``, resolved; without, the inputs given as folders are checked),
    as a ``.npy`` output that is also an input is refused."""
    out = os.path.realpath(root)
    if files is not None:
        for name in files:
            if is_url(name):
                continue
            if os.path.realpath(name).startswith(out + os.sep):
                raise ValueError(
                    f"{root}: the output is also an input ({name} lies inside it); write it elsewhere"
                )
        return
    for item in inputs if isinstance(inputs, list | tuple) else [inputs]:
        if isinstance(item, str | os.PathLike) and os.path.isdir(item):
            folder = os.path.realpath(item)
            if out == folder or out.startswith(folder.rstrip(os.sep) + os.sep):
                raise ValueError(
                    f"{root}: the output folder lies inside the input folder {os.fspath(item)}, whose files "
                    "are all read: a later run would read the dataset's shards as inputs; write it elsewhere"
                )


class Done(NamedTuple):
    """The folder holds the finished dataset asked for."""

    manifest: dict[str, Any]

    def stats(self) -> dict[str, Any]:
        """What was read, as the manifest's totals say."""
        totals = self.manifest["totals"]
        return {
            "documents": totals["documents"],
            "skipped": totals["skipped"],
            "skipped_examples": [],
            "bytes": totals["bytes"],
        }


class Fresh(NamedTuple):
    """The run writes the dataset; ``kept``: per split, the shards of an earlier run of
    the same inputs and options that it goes on after (none for a new dataset), each
    with where the shard after it starts."""

    kept: list[list[tuple[dict[str, Any], dict[str, Any]]]]


def prepare_folder(
    root: Path,
    manifest: dict[str, Any],
    resume: bool,
    num_threads: int | None,
    keep: bool = True,
    feeds: Callable[[], str | None] | None = None,
    keep_files: Collection[str] = (),
) -> Done | Fresh:
    """Makes ``root`` (held by the caller's ``FolderLock``) ready for the dataset
    ``manifest`` describes: a finished one there already, the shards an interrupted
    run left to go on after (none unless ``keep``), or an empty folder. ``feeds``: where
    inputs are known only by their documents, reads them for their sha256, which a
    finished dataset must have recorded to be returned as it is. ``keep_files``: the
    files (``"train/00003.npy"``) of shards the caller keeps by records of its own (a
    distributed run's), kept with their folder when the dataset is gone on with.

    Only the dataset's own files are ever removed (its manifest, and in its split
    folders the shards, indexes and temporary files its runs name so); a split folder
    that is a link is refused, never followed."""
    names = split_names(manifest["val_fraction"])
    fresh = Fresh([[] for _ in names])
    checked_folder(root).mkdir(parents=True, exist_ok=True)
    present = sorted(p.name for p in root.iterdir() if p.name != LOCK_NAME)
    # A manifest's temporary file is left only by a run that was killed while writing
    # it (the lock says none runs now): the dataset's own, removed.
    for name in [n for n in present if _TEMP.fullmatch(n)]:
        (root / name).unlink(missing_ok=True)
        present.remove(name)
    for split in SPLITS:
        folder = root / split
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            what = "a link" if folder.is_symlink() else "not a folder"
            raise FileExistsError(
                f"{folder}: {what}, where the dataset's {split} shards go (bpekit never writes through "
                "a link); remove it, or give another folder for the dataset"
            )
    if not present:
        return fresh
    if MANIFEST not in present:
        raise FileExistsError(
            f"{root}: the folder holds other files ({', '.join(present[:3])}); "
            "give an empty or new folder for the dataset"
        )
    strangers = [name for name in present if name not in (MANIFEST, *SPLITS) and not _TEMP.fullmatch(name)]
    if strangers:
        raise FileExistsError(
            f"{root}: the folder holds files that are not the dataset's ({', '.join(strangers[:3])}), "
            "which bpekit never removes; move them out, or give another folder for the dataset"
        )
    old, damage = read_own_manifest(root / MANIFEST)
    if old is None and damage is None:
        raise FileExistsError(
            f"{root / MANIFEST}: not a bpekit dataset's manifest (it has no format_version); "
            "give an empty or new folder for the dataset"
        )
    if old is None:
        if resume:
            raise FileExistsError(
                f"{root / MANIFEST}: the manifest is corrupt ({damage}), so the dataset there cannot be "
                "gone on with; pass resume=False (--overwrite) to start over"
            )
        old = {}
    differs = differences(old, manifest) if resume else []
    if differs:
        state = "a dataset" if old.get("complete") else "an unfinished dataset"
        raise FileExistsError(
            f"{root}: holds {state} written with other {', '.join(differs)}; "
            "pass resume=False (--overwrite) to start over"
        )
    if resume and old.get("complete"):
        if _all_present(root, old) and _same_feeds(root, old, feeds):
            return Done(old)
        # A shard gone or cut since: a finished manifest keeps no resume points, so
        # the dataset is written again (what TokenDataset's error tells users to do).
        resume = False
    kept = _kept_shards(root, old, names, num_threads) if resume and keep else fresh.kept
    # Whatever is not kept goes: shards after the kept ones, temporary files. Other
    # files in the split folders stay, as does a folder they keep from being empty.
    keep_names = {name for shards in kept for s, _ in shards for name in shard_files(s)}
    if resume:
        keep_names |= set(keep_files)
    for split in SPLITS:
        folder = root / split
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if f"{split}/{path.name}" not in keep_names and _OURS.fullmatch(path.name) and not path.is_dir():
                path.unlink()
        if split not in names:
            try:
                folder.rmdir()
            except OSError:
                pass
    for name in present:
        if _TEMP.fullmatch(name):
            (root / name).unlink(missing_ok=True)
    if not any(kept) and not (resume and keep_files):
        (root / MANIFEST).unlink()
    return Fresh(kept)


# The files a dataset's runs write in a split folder: shards and indexes (named as
# spec.shard_name and spec.index_name say), and the temporary names of those (where
# O_TMPFILE is missing) and of a spilled document's scratch file, which a killed run
# may leave.
_OURS = re.compile(
    r"\.?\d{5,}\.(npy|bin|idx\.npy|idx|ds|ds\.index|ds\.metadata)(\.[0-9a-f]{16}\.tmp)?"
    r"|\.bpekit-scratch\.[0-9a-f]{16}\.tmp"
)


def shard_files(shard: dict[str, Any]) -> list[str]:
    """The files of a shard's manifest entry: its ids, its index and a trainer's files."""
    return [shard["file"], shard["index"], *(f["file"] for f in _trainer_files(shard))]


def _trainer_files(shard: dict[str, Any]) -> list[dict[str, Any]]:
    """The trainer's files (Megatron's ``.idx``, datatrove's ``.ds.index``) a shard's
    entry lists, ``[]`` for formats without."""
    files = shard.get("trainer_files", [])
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        raise TypeError("trainer_files is not a list of objects")
    return files


#: The dataset folder's own temporary files: a manifest being written (bpekit._atomic's
#: names), and the file
#: ``distributed.backends`` writes to see whether Ray's nodes share this filesystem.
_TEMP = re.compile(r"\.manifest\.json\.[A-Za-z0-9_]+\.tmp|\.bpekit-probe-[0-9a-f]{32}")


def _same_feeds(root: Path | str, old: dict[str, Any], feeds: Callable[[], str | None] | None) -> bool:
    """Whether the inputs known only by their documents (``feeds`` reads them for their
    sha256) are those a finished dataset was written from; true where there are none."""
    if feeds is None:
        return True
    recorded = old.get("fed_sha256")
    if not isinstance(recorded, str):
        raise FileExistsError(
            f"{root}: holds a dataset whose documents cannot be told apart from these (its manifest "
            "records no sha256 of them); pass resume=False (--overwrite) to write it again"
        )
    got = feeds()
    if got != recorded:
        names = [i.get("name", "?") for i in old.get("inputs", []) if isinstance(i, dict)]
        raise FileExistsError(
            f"{root}: holds a dataset written from other documents of {', '.join(map(str, names))} (their "
            "sha256 differs); pass resume=False (--overwrite) to start over"
        )
    return True


def _all_present(root: Path, manifest: dict[str, Any]) -> bool:
    """Whether every shard and index a finished manifest lists is there with the size
    it takes (``TokenDataset.verify`` checks their sha256)."""
    splits = manifest.get("splits")
    if not isinstance(splits, dict):
        return False
    for split in splits.values():
        shards = split.get("shards") if isinstance(split, dict) else None
        if not isinstance(shards, list):
            return False
        for shard in shards:
            try:
                parts = shard["documents"] + bool(shard["continues"]) + 1
                if (root / shard["file"]).stat().st_size != shard["size"] or (
                    root / shard["index"]
                ).stat().st_size != NPY_HEADER_BYTES + 8 * parts:
                    return False
                if any((root / f["file"]).stat().st_size != f["size"] for f in _trainer_files(shard)):
                    return False
            except (OSError, KeyError, TypeError, AttributeError):
                return False
    return True


def _kept_shards(
    root: Path, old: dict[str, Any], names: tuple[str, ...], num_threads: int | None
) -> list[list[tuple[dict[str, Any], dict[str, Any]]]]:
    """Per split, the shards an interrupted run recorded whose size and sha256 (and the
    index's) check out, with where the next starts, that start's own sha256 checking
    out: the first run of them in order, up to the first that does not."""
    recorded = []
    splits, resume = old.get("splits"), old.get("resume")
    for name in names:
        split = splits.get(name) if isinstance(splits, dict) else None
        shards = split.get("shards") if isinstance(split, dict) else None
        starts = resume.get(name) if isinstance(resume, dict) else None
        if not isinstance(shards, list) or not isinstance(starts, list):
            shards, starts = [], []
        pairs = list(zip(shards, starts, strict=False))
        # Up to the first entry that is no shard at all (a damaged manifest).
        whole = next((k for k, (s, _) in enumerate(pairs) if not isinstance(s, dict)), len(pairs))
        recorded.append(pairs[:whole])
    ok = check_shards(root, [s for split in recorded for s, _ in split], num_threads)
    kept = []
    for name, split in zip(names, recorded, strict=True):
        good = []
        for k, (shard, start) in enumerate(split):
            if (
                not ok[id(shard)]
                or not isinstance(start, dict)
                or start.get("sha256") != start_sha256(name, k, shard, start)
            ):
                break
            good.append((shard, start))
        kept.append(good)
    return kept


def check_shards(root: Path, shards: list[dict[str, Any]], num_threads: int | None) -> dict[int, bool]:
    """Whether each shard's file and index (manifest entries, by ``id``) have the
    recorded size and sha256."""
    from concurrent.futures import ThreadPoolExecutor

    def check(shard: dict[str, Any]) -> bool:
        try:
            path = root / shard["file"]
            if path.stat().st_size != shard["size"]:
                return False
            index: Path = root / shard["index"]
            side = _trainer_files(shard)
            if any((root / f["file"]).stat().st_size != f["size"] for f in side):
                return False
            if shard["sha256"] is None:  # Written with checksums=False: the size must do.
                return index.is_file()
            return bool(
                sha256_of(path) == shard["sha256"]
                and sha256_of(index) == shard["index_sha256"]
                and all(sha256_of(root / f["file"]) == f["sha256"] for f in side)
            )
        except (OSError, KeyError, TypeError):
            return False

    with ThreadPoolExecutor(max_workers=num_threads or os.cpu_count() or 1) as pool:
        results = list(pool.map(check, shards))
    return {id(s): r for s, r in zip(shards, results, strict=True)}
