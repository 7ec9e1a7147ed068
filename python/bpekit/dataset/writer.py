"""Encoding a corpus into a training dataset: ``train/`` (and ``val/``) shards of at most
``shard_tokens`` ids, cut between documents, each with its document index, and a
``manifest.json`` saying what was encoded with what (the layout is in
``bpekit.dataset.spec``; ``bpekit.TokenDataset`` reads it back).

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

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from bpekit._lock import FolderLock
from bpekit.dataset.folder import Done, check_output_folder, checked_folder, is_file, prepare_folder
from bpekit.dataset.job import Framing, Job, prepare, resolve_framing
from bpekit.dataset.manifest import dataset_manifest
from bpekit.dataset.options import Layout, Marks
from bpekit.dataset.shards import finish_manifest, write_shards
from bpekit.dataset.store import remove_staging, store_or_folder
from bpekit.options import ReadOptions, RunOptions
from bpekit.sources import resolve, warn_skipped
from bpekit.tokenizer import Tokenizer
from bpekit.training import Inputs

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["Written", "encode_dataset", "write_dataset"]


def encode_dataset(
    inputs: Inputs,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str,
    *,
    shard_tokens: int = Layout.shard_tokens,
    shard_format: str = Layout.shard_format,
    val_fraction: float = Layout.val_fraction,
    seed: int = Layout.seed,
    dtype: npt.DTypeLike | None = Layout.dtype,
    checksums: bool = Layout.checksums,
    eos: str | None = Marks.eos,
    bos: str | None = Marks.bos,
    after_each_file: str | None = Marks.after_each_file,
    format: str | None = ReadOptions.format,
    text_field: str = ReadOptions.text_field,
    special_in_text: str | None = ReadOptions.special_in_text,
    bad_records: str = ReadOptions.bad_records,
    errors: str = ReadOptions.errors,
    num_threads: int | None = RunOptions.num_threads,
    chunk_size: int = RunOptions.chunk_size,
    progress: bool = RunOptions.progress,
    resume: bool = RunOptions.resume,
) -> dict[str, Any]:
    """Encodes ``inputs`` (as ``encode_file`` takes them) into the dataset folder
    ``out_dir``; returns the manifest (also written to ``out_dir/manifest.json``).

    The layout (``bpekit.dataset.Layout``): ``shard_tokens=2**28`` ids per shard at
    most; ``shard_format="npy"`` (or ``"bin"``: raw little-endian ids, for
    ``np.memmap``; ``"llmc"``: llm.c's ``.bin``; ``"megatron"``: ``.bin`` with
    Megatron-LM's ``.idx``, its dtype picked as Megatron picks it; ``"datatrove"``:
    ``.ds`` with ``.ds.index`` and ``.ds.metadata``); ``val_fraction=0.0`` and ``seed=0``:
    documents go to ``val/`` by a hash of their number and the seed, whatever the
    threads or shard size; ``dtype``; ``checksums=True``: the sha256 of each shard and
    index in the manifest (it costs ~10% of an encoding core's time; without, a resumed
    run checks sizes only). And ``encode_file``'s: the marks ``eos``, ``bos``,
    ``after_each_file``; how inputs are read, ``format`` (the inputs' format: one name
    for one thing), ``text_field``, ``special_in_text``, ``bad_records``, ``errors``;
    how the run goes, ``num_threads``, ``chunk_size``, ``progress`` and ``resume``
    (below). Skipped bad records are a warning.

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
    read = ReadOptions(
        format=format,
        text_field=text_field,
        special_in_text=special_in_text,
        bad_records=bad_records,
        errors=errors,
    )
    layout = Layout(
        shard_tokens=shard_tokens,
        shard_format=shard_format,
        val_fraction=val_fraction,
        seed=seed,
        dtype=dtype,
        checksums=checksums,
    )
    run = RunOptions(num_threads=num_threads, chunk_size=chunk_size, progress=progress, resume=resume)
    marks = Marks(eos=eos, bos=bos, after_each_file=after_each_file)
    written = write_dataset(inputs, out_dir, tokenizer, layout, marks, read, run)
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
    layout: Layout,
    marks: Marks,
    read: ReadOptions,
    run: RunOptions,
    *,
    cli: bool = False,
) -> Written:
    """``encode_dataset`` with its options as objects, returning what it wrote (the marks'
    notes worded for the command line's flags when ``cli``). Skipped records are not
    warned of: the caller reports them."""
    tok, layout, end_id = prepare(tokenizer, layout, marks)
    target, root = store_or_folder(out_dir)
    check_output_folder(root, inputs)
    sources = resolve(inputs, format=read.format, text_field=read.text_field, bad_records=read.bad_records)
    check_output_folder(root, inputs, [s[1] for s in sources.sources if is_file(s)])
    framing = resolve_framing(tok, marks, sources, end_id, cli)
    # The inputs that nothing but their documents identifies.
    digest = tuple(k for k, source in enumerate(sources.sources) if not is_file(source))
    job = Job(read, run, layout, framing, digest, tokenizer_name=tok.name or "")
    manifest = dataset_manifest(job, tokenizer, tok, sources, marks.after_each_file)

    def encode(on_shard: Callable[..., None], resume_from: Any, bar: Any) -> dict[str, Any]:
        written: dict[str, Any] = tok._core.encode_dataset(
            sources.sources, str(root), job, resume=resume_from, on_shard=on_shard, progress=bar
        )
        return written

    def feeds_sha256() -> str | None:
        from bpekit import _core

        return _core.feeds_sha256(sources.sources, list(digest))

    if target is not None:
        # The store's finished dataset of these inputs and options, reading nothing;
        # or the prefix claimed for this run (``bpekit.dataset.store``).
        found = target.prepare(manifest, run.resume, feeds_sha256 if digest else None)
        if found is not None:
            return Written(found, Done(found).stats(), framing, sources.files, True)
        root.mkdir(parents=True, exist_ok=True)
    with FolderLock(checked_folder(root)):
        state = prepare_folder(
            root, manifest, run.resume, run.num_threads, feeds=feeds_sha256 if digest else None
        )
        if isinstance(state, Done):
            if target is not None:
                target.commit(root, state.manifest)
            return Written(state.manifest, state.stats(), framing, sources.files, True)
        after = None if target is None else (lambda shard: target.put_shard(root, shard))
        done = write_shards(root, manifest, state, encode, progress=run.progress, after_shard=after)
        stats = dict(done.stats)
        done.manifest["totals"]["skipped"] = stats["skipped"]
        done.manifest["totals"]["bytes"] = stats["bytes"]
        finish_manifest(root, done.manifest)
        if target is not None:
            target.commit(root, done.manifest)
    if target is not None:
        remove_staging(root)
    return Written(done.manifest, stats, framing, sources.files, False, done.kept)
