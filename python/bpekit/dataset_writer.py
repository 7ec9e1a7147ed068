"""Encoding a corpus into a training dataset: ``train/`` (and ``val/``) shards of at most
``shard_tokens`` ids, cut between documents, each with its document index, and a
``manifest.json`` saying what was encoded with what (the layout is in the README,
"Token datasets"; ``bpekit.TokenDataset`` reads it back).

>>> import tempfile, pathlib, bpekit
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
>>> m = encode_dataset(iter(["one", "two!"]), d / "ds", tok, shard_tokens=5)
>>> [(s["file"], s["tokens"], s["documents"]) for s in m["splits"]["train"]["shards"]]
[('train/00000.npy', 4, 1), ('train/00001.npy', 5, 1)]
>>> bpekit.TokenDataset(d / "ds").document(1).tolist()
[116, 119, 111, 33, 256]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from bpekit._atomic import atomic_write
from bpekit._lock import LOCK_NAME, FolderLock
from bpekit._paths import sha256_of
from bpekit._progress import progress_bar
from bpekit._threads import check_num_threads
from bpekit._utf8 import check_errors
from bpekit.datasets import (
    _ID_BYTES,
    RECORDS_DEFAULT,
    Framing,
    _id_dtype_name,
    _single_token_id,
    resolve_framing,
)
from bpekit.sources import Sources, check_special_in_text, resolve, warn_skipped
from bpekit.tokenizer import Tokenizer
from bpekit.training import Inputs

__all__ = ["FORMAT_VERSION", "SHARD_FORMATS", "Written", "encode_dataset", "write_dataset"]

FORMAT_VERSION = 1
SHARD_FORMATS = ("npy", "bin", "llmc")
MANIFEST = "manifest.json"


def encode_dataset(
    inputs: Inputs,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str,
    **options: Any,
) -> dict[str, Any]:
    """Encodes ``inputs`` (as ``encode_file`` takes them) into the dataset folder
    ``out_dir``; returns the manifest (also written to ``out_dir/manifest.json``).

    Options, all keyword: ``shard_tokens=2**28``; ``shard_format="npy"`` (or ``"bin"``:
    raw little-endian ids, for ``np.memmap``; ``"llmc"``: llm.c's ``.bin``);
    ``val_fraction=0.0`` and ``seed=0``: documents go to ``val/`` by a hash of their
    number and the seed, whatever the threads or shard size; ``resume=True`` (below);
    ``checksums=True``: the sha256 of each shard and index in the manifest (it costs
    ~10% of an encoding core's time; without, a resumed run checks sizes only); and
    ``encode_file``'s: ``eos``, ``bos``, ``after_each_file``, ``format`` (the inputs'
    format: one name for one thing), ``text_field``, ``special_in_text``,
    ``bad_records``, ``errors``, ``dtype``, ``num_threads``, ``chunk_size``,
    ``progress``. Skipped bad records are a warning.

    ``out_dir`` must be empty, missing or hold a dataset, and lie outside the input
    folders. The run holds it for its whole length (a kernel lock on a file inside it,
    gone with the process): a second run on it fails at once, naming the first's pid.
    Each shard is written under no name and put in place when whole, and the manifest
    is rewritten (atomically) as shards finish (after each, at most every 0.5 s). With
    ``resume=True`` (the default), a folder holding a dataset written from the same
    inputs with the same options is gone on with: a finished one is returned as it is,
    and a run that was cut short (Ctrl-C, a kill, a full disk) keeps every shard the
    manifest records whose size and sha256 check out and writes the rest, ending
    byte-identical to an uninterrupted run. Files are told by their names, sizes and
    modification times; an iterable or a dataset object by the sha256 of its
    documents: a resumed run hashes what it reads again or passes over and compares,
    and a finished dataset is returned only once the documents hash the same. A
    dataset of other inputs or options is refused, naming what differs;
    ``resume=False`` starts over, replacing the dataset's files (never other files).
    """
    written = write_dataset(inputs, out_dir, tokenizer, **options)
    warn_skipped(written.stats)
    return written.manifest


class Written(NamedTuple):
    """What ``write_dataset`` wrote, and what the command line's summary reports."""

    manifest: dict[str, Any]
    stats: dict[str, Any]  # documents, skipped, skipped_examples, bytes, files
    framing: Framing
    files: int
    done_before: bool  # the folder held this dataset already
    kept: int = 0  # shards kept from an earlier run that was cut short


def write_dataset(
    inputs: Inputs,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str,
    *,
    shard_tokens: int = 2**28,
    shard_format: str = "npy",
    val_fraction: float = 0.0,
    seed: int = 0,
    eos: str | None = RECORDS_DEFAULT,
    bos: str | None = None,
    format: str | None = None,
    text_field: str = "text",
    special_in_text: str | None = None,
    bad_records: str = "error",
    errors: str = "strict",
    dtype: str | None = None,
    num_threads: int | None = None,
    chunk_size: int = 0,
    after_each_file: str | None = None,
    progress: bool = False,
    resume: bool = True,
    checksums: bool = True,
    cli: bool = False,
) -> Written:
    """``encode_dataset``, returning what the command line's summary reports (no
    warning for skipped records: the summary says it)."""
    job = check_job(
        tokenizer,
        shard_tokens=shard_tokens,
        shard_format=shard_format,
        val_fraction=val_fraction,
        seed=seed,
        errors=errors,
        special_in_text=special_in_text,
        dtype=dtype,
        after_each_file=after_each_file,
        num_threads=num_threads,
        chunk_size=chunk_size,
        checksums=checksums,
    )
    root = Path(os.fspath(out_dir))
    check_output_folder(root, inputs)
    sources = resolve(inputs, format=format, text_field=text_field, bad_records=bad_records)
    check_output_folder(root, inputs, [s[1] for s in sources.sources if _is_file(s)])
    framing = resolve_framing(job.tok, eos, bos, sources, cli)
    manifest = dataset_manifest(
        job,
        tokenizer,
        sources,
        framing,
        format=format,
        text_field=text_field,
        bad_records=bad_records,
    )

    def run(on_shard: Callable[..., None], resume_from: Any, bar: Any) -> dict[str, Any]:
        return job.tok._core.encode_dataset(
            sources.sources,
            str(root),
            _ID_BYTES[job.dtype_name],
            format=shard_format,
            shard_tokens=shard_tokens,
            val_fraction=val_fraction,
            seed=seed,
            num_threads=job.num_threads,
            errors=job.errors,
            chunk_size=chunk_size,
            progress=bar,
            after_each_file=job.end_id,
            special_in_text=job.special_in_text,
            bad_records=bad_records,
            resume=resume_from,
            on_shard=on_shard,
            checksums=checksums,
            digest=digest,
            **framing.native(),
        )

    # The inputs that nothing but their documents identifies.
    digest = [k for k, source in enumerate(sources.sources) if not _is_file(source)]

    def feeds_sha256() -> str | None:
        from bpekit import _core

        return _core.feeds_sha256(sources.sources, digest)

    with FolderLock(_checked_folder(root)):
        state = prepare_folder(
            root, manifest, resume, job.num_threads, feeds=feeds_sha256 if digest else None
        )
        if isinstance(state, Done):
            return Written(state.manifest, state.stats(), framing, sources.files, True)
        done = write_shards(root, manifest, state, run, progress=progress)
        stats = dict(done.stats)
        done.manifest["totals"]["skipped"] = stats["skipped"]
        done.manifest["totals"]["bytes"] = stats["bytes"]
        finish_manifest(root, done.manifest)
    return Written(done.manifest, stats, framing, sources.files, False, done.kept)


def _is_file(source: tuple[Any, ...]) -> bool:
    """Whether an input of ``Sources`` is a file (told by its name, size and time)."""
    return source[0] in ("text", "jsonl") or (source[0] == "arrow" and os.path.isfile(source[1]))


def _checked_folder(root: Path) -> Path:
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


class Job(NamedTuple):
    """A dataset encode's checked options."""

    tok: Tokenizer
    dtype_name: str
    end_id: int | None  # after_each_file's id
    errors: str
    special_in_text: str | None
    num_threads: int | None
    shard_tokens: int
    shard_format: str
    val_fraction: float
    seed: int
    checksums: bool
    after_each_file: str | None


def check_job(
    tokenizer: Tokenizer | str,
    *,
    shard_tokens: int,
    shard_format: str,
    val_fraction: float,
    seed: int,
    errors: str,
    special_in_text: str | None,
    dtype: str | None,
    after_each_file: str | None,
    num_threads: int | None,
    chunk_size: int,
    checksums: bool,
) -> Job:
    """Checks a dataset encode's options, before any input is read; loads the tokenizer."""
    errors = check_errors(errors)
    special_in_text = check_special_in_text(special_in_text)
    _check_layout(shard_tokens, shard_format, val_fraction, seed)
    num_threads = check_num_threads(num_threads)
    if chunk_size < 0:
        raise ValueError(f"chunk_size must be 0 (automatic) or a positive number of bytes, got {chunk_size}")
    from bpekit.encodings import load_tokenizer

    tok = load_tokenizer(tokenizer)
    dtype_name = _id_dtype_name(tok.n_vocab, dtype)
    end_id = (
        None
        if after_each_file is None
        else _single_token_id(tok, after_each_file, "to write after each file")
    )
    return Job(
        tok,
        dtype_name,
        end_id,
        errors,
        special_in_text,
        num_threads,
        shard_tokens,
        shard_format,
        val_fraction,
        seed,
        checksums,
        after_each_file,
    )


def dataset_manifest(
    job: Job,
    tokenizer: Tokenizer | str,
    sources: Sources,
    framing: Framing,
    *,
    format: str | None,
    text_field: str,
    bad_records: str,
) -> dict[str, Any]:
    """The manifest of a dataset not yet written: what it is encoded from and with."""
    tok = job.tok
    return {
        "format_version": FORMAT_VERSION,
        "bpekit_version": _version(),
        "complete": False,
        "tokenizer": _tokenizer_identity(tokenizer, tok),
        "format": job.shard_format,
        "dtype": job.dtype_name,
        "shard_tokens": job.shard_tokens,
        "val_fraction": job.val_fraction,
        "seed": job.seed,
        "checksums": job.checksums,
        # What the documents end (begin) with: the records' marks where there are records.
        "eos": _mark(tok, framing.record_eos if sources.records else framing.file_eos),
        "bos": _mark(tok, framing.record_bos if sources.records else framing.file_bos),
        "options": {
            "format": format,
            "text_field": text_field,
            "special_in_text": job.special_in_text,
            "bad_records": bad_records,
            "errors": job.errors,
            "after_each_file": job.after_each_file,
            "record_eos": framing.record_eos,
            "record_bos": framing.record_bos,
            "file_eos": framing.file_eos,
            "file_bos": framing.file_bos,
        },
        "inputs": [_describe(s) for s in sources.sources],
    }


class Shards(NamedTuple):
    """What ``write_shards`` did: the manifest (finished but for being written), the
    core's stats, and how many shards of an interrupted run it kept."""

    manifest: dict[str, Any]
    stats: dict[str, Any]
    kept: int = 0


def write_shards(
    root: Path,
    manifest: dict[str, Any],
    state: Fresh,
    run: Callable[[Callable[..., None], Any, Any], dict[str, Any]],
    *,
    progress: bool,
    resumable: bool = True,
    label: str = "encoding",
) -> Shards:
    """Writes the shards of the dataset ``manifest`` describes into ``root``, made ready
    by ``prepare_folder``, with ``run(on_shard, resume_from, progress_bar)`` (a core
    call that writes them and returns its summary), recording each finished shard in
    the manifest on disk. A run that is not ``resumable`` records no place to go on
    from. The caller completes the manifest's totals and writes it
    (``finish_manifest``)."""
    names = _split_names(manifest["val_fraction"])
    kept_by_split = dict(zip(names, state.kept, strict=True))
    splits = {name: {"shards": [shard for shard, _ in kept]} for name, kept in kept_by_split.items()}
    manifest["splits"] = splits
    # Where each shard's successor starts in the input, for a run that goes on after it.
    # It depends on how the run cut its input (threads, chunk size), so it goes once the
    # dataset is finished: the finished manifest is the same however it was written.
    manifest["resume"] = {name: [start for _, start in kept] for name, kept in kept_by_split.items()}
    atomic_write(root / MANIFEST, _dump(manifest))

    recorder = _Recorder(root / MANIFEST, manifest)

    def on_shard(split: str, shard: dict[str, Any]) -> None:
        # Called from the core's hasher thread, in the order the shards finish.
        start = shard.pop("next")
        if resumable and start is not None:
            start["sha256"] = _start_sha256(split, len(splits[split]["shards"]), shard, start)
        manifest["resume"][split].append(start if resumable else None)
        splits[split]["shards"].append(shard)
        recorder.changed()

    resume_from = [(len(kept), kept[-1][1] if kept else None) for kept in state.kept]
    with progress_bar(progress, label) as bar, recorder:
        written = run(on_shard, resume_from if any(kept for kept in state.kept) else None, bar)
    if sum(len(split["shards"]) for split in splits.values()) != len(written["shards"]) + sum(
        len(k) for k in state.kept
    ):
        raise RuntimeError(f"{root}: the shards recorded differ from those written; please report this")
    for split in splits.values():
        split["tokens"] = sum(s["tokens"] for s in split["shards"])
        split["documents"] = sum(s["documents"] for s in split["shards"])
    stats = written["stats"]
    manifest["totals"] = {
        "tokens": sum(split["tokens"] for split in splits.values()),
        "documents": written["documents"],
        "bytes": stats["bytes"],
        "skipped": stats["skipped"],
    }
    if written.get("fed_sha256") is not None:
        # Of the inputs known only by their documents: what a rerun on a finished
        # dataset compares (``_same_feeds``).
        manifest["fed_sha256"] = written["fed_sha256"]
    return Shards(manifest, stats, sum(len(k) for k in state.kept))


def finish_manifest(root: Path, manifest: dict[str, Any]) -> None:
    """Marks the dataset finished and writes its manifest: the end of a run."""
    del manifest["resume"]
    manifest["complete"] = True
    atomic_write(root / MANIFEST, _dump(manifest))


class _Recorder:
    """Rewrites the manifest (atomically) as shards finish: after each one, but not
    more often than every ``EVERY`` seconds, and once more if the run fails.

    Why the bound: each rewrite writes every shard's entry, so a rewrite after each of
    many small shards was quadratic (a test's run of 400 shards of 97 tokens took 30 s,
    2 s bounded). A rerun after a kill writes again at most ``EVERY`` seconds of
    shards; shards of the default 2**28 tokens take longer than that each."""

    EVERY = 0.5

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path, self.manifest = path, manifest
        self.written_at = time.monotonic()
        self.dirty = False

    def changed(self) -> None:
        self.dirty = True
        if time.monotonic() - self.written_at >= self.EVERY:
            self.write()

    def write(self) -> None:
        atomic_write(self.path, _dump(self.manifest))
        self.written_at, self.dirty = time.monotonic(), False

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        # A failed run records the shards it finished; a failure to do so (a full
        # disk) must not hide the run's own error. A finished run's caller writes the
        # final manifest.
        if self.dirty and error is not None:
            try:
                self.write()
            except OSError:
                pass


def _split_names(val_fraction: float) -> tuple[str, ...]:
    return ("train", "val") if val_fraction > 0 else ("train",)


def _check_layout(shard_tokens: int, shard_format: str, val_fraction: float, seed: int) -> None:
    """Refuses a layout that cannot be written, before any input is read (the command
    line names the flags for the keywords).

    >>> _check_layout(0, "npy", 0.0, 0)
    Traceback (most recent call last):
    ...
    ValueError: shard_tokens must be a positive int, not 0
    >>> _check_layout(2**64 + 1, "npy", 0.0, 0)
    Traceback (most recent call last):
    ...
    ValueError: shard_tokens must be from 1 to 2**64 - 1, not 18446744073709551617
    """
    if not isinstance(shard_tokens, int) or isinstance(shard_tokens, bool) or shard_tokens < 1:
        raise ValueError(f"shard_tokens must be a positive int, not {shard_tokens!r}")
    if shard_tokens >= 2**64:  # The core counts a shard's ids in 64 bits.
        raise ValueError(f"shard_tokens must be from 1 to 2**64 - 1, not {shard_tokens!r}")
    if shard_format not in SHARD_FORMATS:
        raise ValueError(f"shard_format must be one of {', '.join(SHARD_FORMATS)}, not {shard_format!r}")
    if shard_format == "llmc" and shard_tokens >= 2**31:
        raise ValueError(f"shard_tokens {shard_tokens:,} is more than llm.c's header counts (2**31 - 1)")
    if not isinstance(val_fraction, int | float) or not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be at least 0 and below 1, not {val_fraction!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int from 0 to 2**64 - 1, not {seed!r}")


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
) -> Done | Fresh:
    """Makes ``root`` (held by the caller's ``FolderLock``) ready for the dataset
    ``manifest`` describes: a finished one there already, the shards an interrupted
    run left to go on after (none unless ``keep``), or an empty folder. ``feeds``: where
    inputs are known only by their documents, reads them for their sha256, which a
    finished dataset must have recorded to be returned as it is.

    Only the dataset's own files are ever removed (its manifest, and in its split
    folders the shards, indexes and temporary files its runs name so); a split folder
    that is a link is refused, never followed."""
    names = _split_names(manifest["val_fraction"])
    fresh = Fresh([[] for _ in names])
    _checked_folder(root).mkdir(parents=True, exist_ok=True)
    present = sorted(p.name for p in root.iterdir() if p.name != LOCK_NAME)
    # A manifest's temporary file is left only by a run that was killed while writing
    # it (the lock says none runs now): the dataset's own, removed.
    for name in [n for n in present if _TEMP.fullmatch(n)]:
        (root / name).unlink(missing_ok=True)
        present.remove(name)
    for split in ("train", "val"):
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
    strangers = [
        name for name in present if name not in (MANIFEST, "train", "val") and not _TEMP.fullmatch(name)
    ]
    if strangers:
        raise FileExistsError(
            f"{root}: the folder holds files that are not the dataset's ({', '.join(strangers[:3])}), "
            "which bpekit never removes; move them out, or give another folder for the dataset"
        )
    old, damage = _read_manifest(root / MANIFEST)
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
    differs = _differences(old, manifest) if resume else []
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
    keep_names = {s[key] for shards in kept for s, _ in shards for key in ("file", "index")}
    for split in ("train", "val"):
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
    if not any(kept):
        (root / MANIFEST).unlink()
    return Fresh(kept)


# The files a dataset's runs write in a split folder: shards and indexes, and the
# temporary names of those (where O_TMPFILE is missing) and of a spilled document's
# scratch file, which a killed run may leave.
_OURS = re.compile(r"\.?\d{5,}\.(npy|bin|idx\.npy)(\.[0-9a-f]{16}\.tmp)?|\.bpekit-scratch\.[0-9a-f]{16}\.tmp")
# The manifest's temporary names (bpekit._atomic's), beside it.
_TEMP = re.compile(r"\.manifest\.json\.[A-Za-z0-9_]+\.tmp")


def _same_feeds(root: Path, old: dict[str, Any], feeds: Callable[[], str | None] | None) -> bool:
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
                ).stat().st_size != _NPY_HEADER + 8 * parts:
                    return False
            except (OSError, KeyError, TypeError, AttributeError):
                return False
    return True


# The length of the .npy header the core writes (src/encode/file/npy.rs).
_NPY_HEADER = 128


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
    ok = _check_shards(root, [s for split in recorded for s, _ in split], num_threads)
    kept = []
    for name, split in zip(names, recorded, strict=True):
        good = []
        for k, (shard, start) in enumerate(split):
            if (
                not ok[id(shard)]
                or not isinstance(start, dict)
                or start.get("sha256") != _start_sha256(name, k, shard, start)
            ):
                break
            good.append((shard, start))
        kept.append(good)
    return kept


def _start_sha256(split: str, k: int, shard: dict[str, Any], start: dict[str, Any]) -> str:
    """The sha256 that covers where shard ``k`` of ``split``'s successor starts, with the
    shard's entry: a resume point damaged or edited by hand (a negative or huge
    offset, a document number or a count of tokens written that is not the run's)
    does not check out, and the run goes on from the shard before it instead."""
    point = {key: value for key, value in start.items() if key != "sha256"}
    text = json.dumps([split, k, shard, point], sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _check_shards(root: Path, shards: list[dict[str, Any]], num_threads: int | None) -> dict[int, bool]:
    """Whether each shard's file and index have the recorded size and sha256."""
    from concurrent.futures import ThreadPoolExecutor

    def check(shard: dict[str, Any]) -> bool:
        try:
            path = root / shard["file"]
            if path.stat().st_size != shard["size"]:
                return False
            index = root / shard["index"]
            if shard["sha256"] is None:  # Written with checksums=False: the size must do.
                return index.is_file()
            return sha256_of(path) == shard["sha256"] and sha256_of(index) == shard["index_sha256"]
        except (OSError, KeyError, TypeError):
            return False

    with ThreadPoolExecutor(max_workers=num_threads or os.cpu_count() or 1) as pool:
        results = list(pool.map(check, shards))
    return {id(s): r for s, r in zip(shards, results, strict=True)}


def _read_manifest(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A dataset's manifest, or ``None`` and what is wrong with it where it cannot be
    read (``None``, ``None``: JSON, but no bpekit manifest)."""
    try:
        data = json.loads(path.read_bytes())
    except OSError as e:
        return None, f"unreadable: {e.strerror or e}"
    except (ValueError, UnicodeDecodeError) as e:
        return None, f"not valid JSON: {e}"
    except RecursionError:
        return None, "nested too deeply to be JSON bpekit wrote"
    if isinstance(data, dict) and "format_version" in data:
        return data, None
    return None, None


# What must agree for a dataset on disk to be the one asked for.
_SAME = (
    "tokenizer",
    "format",
    "dtype",
    "shard_tokens",
    "val_fraction",
    "seed",
    "checksums",
    "options",
    "inputs",
)


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The options (as the API names them) in which ``old`` and ``new`` differ."""
    names = {"format": "shard_format", "options": "reading options"}
    new = json.loads(_dump(new))
    # The tokenizer by what it encodes with: a name and a folder holding it are one.
    old, new = {**old, "tokenizer": _fp(old)}, {**new, "tokenizer": _fp(new)}
    differ = [key for key in _SAME if old.get(key) != new.get(key)]
    return [names.get(key, key) for key in differ]


def _fp(manifest: dict[str, Any]) -> Any:
    tokenizer = manifest.get("tokenizer")
    return tokenizer.get("sha256") if isinstance(tokenizer, dict) else None


def _describe(source: tuple[Any, ...]) -> dict[str, Any]:
    """An input as the manifest records it: a file's name, size and modification time;
    a feed's name."""
    kind, name = source[0], source[1]
    entry: dict[str, Any] = {"kind": kind, "name": name}
    if kind in ("text", "jsonl") or (kind == "arrow" and os.path.isfile(name)):
        st = os.stat(name)
        entry.update(size=st.st_size, mtime_ns=st.st_mtime_ns)
    if kind == "jsonl":
        entry["text_field"] = source[2]
    return entry


def _tokenizer_identity(spec: Tokenizer | str | os.PathLike[str], tok: Tokenizer) -> dict[str, Any]:
    """The tokenizer's name, its path when it was given one, the sha256 of its files (an
    encoding's rank files, whose sha256 is checked when they are loaded), and the sha256
    of what it encodes with (its tokens, merges, special tokens and pattern), which is
    what a dataset on disk must match to be gone on with, however the tokenizer was given."""
    from bpekit.encodings import ENCODINGS

    identity: dict[str, Any] = {"name": tok.name, "path": None, "files": {}, "sha256": _fingerprint(tok)}
    if isinstance(spec, str) and spec in ENCODINGS:
        identity["files"] = {f.names[0]: f.sha256 for f in ENCODINGS[spec].files}
    elif isinstance(spec, str | os.PathLike):
        folder = Path(spec)
        identity["path"] = str(folder.resolve())
        for name in ("vocab.json", "merges.txt", "bpekit.json"):
            if (folder / name).is_file():
                identity["files"][name] = sha256_of(folder / name)
    return identity


def _fingerprint(tok: Tokenizer) -> str:
    """The sha256 of what a tokenizer encodes with (its pattern, special tokens, tokens by
    id and merges where they are not ranks), kept on the tokenizer."""
    if tok._fingerprint is None:
        tok._fingerprint = tok._core.fingerprint()
    return tok._fingerprint


def _mark(tok: Tokenizer, token_id: int | None) -> dict[str, Any] | None:
    if token_id is None:
        return None
    return {"token": tok.decode_single_token_bytes(token_id).decode("utf-8", "replace"), "id": token_id}


def _dump(manifest: dict[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _version() -> str:
    from bpekit import __version__

    return __version__
