"""A dataset encoded by many workers, byte-identical to ``bpekit.encode_dataset``'s.

The driver plans the input files into units (``plan``), the workers encode one unit
each into a *unit file* of its ids (``work.encode_unit``), and the driver replays the
unit files in input order into the same dataset writer that ``bpekit.encode_dataset``
feeds (``_core.Encoder.assemble_dataset``): documents, their numbers, the val split and
the shards come out as one machine writes them, whatever the units or workers. The
replay runs on a thread of the driver while the workers encode, taking each unit as
soon as the units before it are replayed and its own file is in.

Unit files are as large as the dataset's shards. They are kept in ``work_dir`` (a
folder every worker and the driver can reach: workers write there) or, without one, in
``.<name>.units`` beside the dataset (written there by workers on this machine; workers
of a cluster joined at an address send them back for the driver to write). A rerun
after the driver died keeps every unit file whose size and sha256 its record gives,
and encodes only the rest; once the dataset is written, the unit files are deleted.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import bpekit
from bpekit._atomic import atomic_write
from bpekit._lock import FolderLock
from bpekit._progress import ProgressBar
from bpekit.dataset_writer import (
    Done,
    Shards,
    Written,
    _checked_folder,
    _fingerprint,
    check_job,
    check_output_folder,
    dataset_manifest,
    finish_manifest,
    prepare_folder,
    write_shards,
)
from bpekit.datasets import _ID_BYTES, RECORDS_DEFAULT, resolve_framing
from bpekit.distributed.backends import open_backend
from bpekit.distributed.plan import DEFAULT_UNIT_BYTES, Plan, plan_units
from bpekit.distributed.work import (
    EncodeSpec,
    UnitEncoded,
    clear_units,
    encode_unit,
    kept_record,
    resume_units,
    save_record,
    unit_files,
)
from bpekit.sources import (
    Sources,
    check_bad_records,
    check_some_read,
    check_text_field,
    resolve_files,
    warn_skipped,
)
from bpekit.tokenizer import Tokenizer

__all__ = ["encode_dataset", "write_dataset"]


def encode_dataset(
    inputs: Any,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str,
    *,
    address: str | None = None,
    backend: str = "ray",
    workers: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    unit_bytes: int = DEFAULT_UNIT_BYTES,
    **options: Any,
) -> dict[str, Any]:
    """``bpekit.encode_dataset`` of files, encoded in units of about ``unit_bytes`` by
    the workers of ``backend`` (``bpekit.distributed``'s doc says how they are
    reached): the same dataset, byte for byte. ``options`` are ``encode_dataset``'s;
    ``num_threads`` is each task's threads (Ray gives each task one CPU) and
    ``resume`` also keeps the units done (see the module's doc). Returns the
    manifest."""
    written = write_dataset(
        inputs,
        out_dir,
        tokenizer,
        address=address,
        backend=backend,
        workers=workers,
        work_dir=work_dir,
        unit_bytes=unit_bytes,
        **options,
    )
    warn_skipped(written.stats)
    return written.manifest


def write_dataset(
    inputs: Any,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str,
    *,
    address: str | None = None,
    backend: str = "ray",
    workers: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    unit_bytes: int = DEFAULT_UNIT_BYTES,
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
    num_threads: int = 1,
    chunk_size: int = 0,
    after_each_file: str | None = None,
    progress: bool = False,
    resume: bool = True,
    checksums: bool = True,
    cli: bool = False,
    _crash_once: tuple[int, str] | None = None,
) -> Written:
    """``encode_dataset``, returning what the command line's summary reports (its stats
    with ``"units"`` and ``"kept"``)."""
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
    if job.num_threads is None:
        raise ValueError("num_threads must be a positive int (each task's threads), not None")
    text_field = check_text_field(text_field)
    bad_records = check_bad_records(bad_records)
    tok = job.tok
    root = Path(os.fspath(out_dir))
    check_output_folder(root, inputs)
    files = resolve_files(inputs, format=format)
    check_output_folder(root, inputs, [str(path) for path, _ in files])
    sources = _sources(files, text_field)
    framing = resolve_framing(tok, eos, bos, sources, cli)
    manifest = dataset_manifest(
        job, tokenizer, sources, framing, format=format, text_field=text_field, bad_records=bad_records
    )
    with contextlib.ExitStack() as held:
        # The dataset folder, and a work_dir of the caller's, for the whole run (the
        # units' folder of our own goes with the dataset's name, so with its lock).
        held.enter_context(FolderLock(_checked_folder(root)))
        if work_dir is not None:
            held.enter_context(FolderLock(work_dir, "work_dir", remove_empty=True))
        return _write(
            root,
            manifest,
            job,
            files,
            sources,
            framing,
            tok,
            address=address,
            backend=backend,
            workers=workers,
            work_dir=work_dir,
            unit_bytes=unit_bytes,
            shard_tokens=shard_tokens,
            shard_format=shard_format,
            val_fraction=val_fraction,
            seed=seed,
            format=format,
            text_field=text_field,
            bad_records=bad_records,
            chunk_size=chunk_size,
            progress=progress,
            resume=resume,
            checksums=checksums,
            _crash_once=_crash_once,
        )


def _write(
    root: Path,
    manifest: dict[str, Any],
    job: Any,
    files: list[tuple[Path, str]],
    sources: Sources,
    framing: Any,
    tok: Tokenizer,
    *,
    address: str | None,
    backend: str,
    workers: int | None,
    work_dir: str | os.PathLike[str] | None,
    unit_bytes: int,
    shard_tokens: int,
    shard_format: str,
    val_fraction: float,
    seed: int,
    format: str | None,
    text_field: str,
    bad_records: str,
    chunk_size: int,
    progress: bool,
    resume: bool,
    checksums: bool,
    _crash_once: tuple[int, str] | None,
) -> Written:
    """``write_dataset`` once its folders are held."""
    # A finished dataset is returned as it is; an unfinished one keeps no shards: the
    # units are what a rerun keeps.
    state = prepare_folder(root, manifest, resume, None, keep=False)
    if isinstance(state, Done):
        return Written(state.manifest, state.stats(), framing, sources.files, True)
    cut_pattern, cut_specials = tok._core.cut_rule()
    plan = plan_units(
        [path for path, _ in files],
        special_tokens=cut_specials,
        pattern=cut_pattern,
        special_in_text=job.special_in_text,
        format=format,
        text_field=text_field,
        unit_bytes=unit_bytes,
    )
    shared = work_dir is not None
    folder = Path(os.fspath(work_dir)) if shared else root.parent / f".{root.name}.units"
    # Workers on this machine (the local pool, a Ray started here) write the unit files
    # into the folder themselves: sending them back through a pipe or Ray's object
    # store, for the driver to write and hash, made the driver the bottleneck.
    here = backend == "local" or address is None
    spec = EncodeSpec(
        tokenizer=pickle.dumps(tok),
        fingerprint=_fingerprint(tok),
        dtype_bytes=_ID_BYTES[job.dtype_name],
        errors=job.errors,
        special_in_text=job.special_in_text,
        bad_records=bad_records,
        text_field=text_field,
        record_bos=framing.record_bos,
        record_eos=framing.record_eos,
        num_threads=job.num_threads,
        chunk_size=chunk_size,
        work_dir=str(folder) if shared or here else None,
        crash_once=_crash_once,
    )
    if not resume:
        # Starting over drops this job's units; a work_dir of another run's is still
        # refused (by _resume), never emptied.
        _resume(folder, plan, spec, own=not shared)
        clear_units(folder)
    results = _resume(folder, plan, spec, own=not shared)
    kept = len(results)
    ready = _Ready(results)
    ids_of = {u.index: str(unit_files(folder, u.index, ".ids")[0]) for u in plan.units}

    def units() -> Iterator[tuple[str, int]]:
        for unit in plan.units:
            ready.wait_for(unit.index)
            yield ids_of[unit.index], unit.input

    def run(on_shard: Callable[..., None], resume_from: Any, bar: Any) -> dict[str, Any]:
        assert resume_from is None  # prepare_folder kept no shards
        return tok._core.assemble_dataset(
            units(),
            [fmt == "text" for _, fmt, _, _ in plan.files],
            str(root),
            spec.dtype_bytes,
            format=shard_format,
            shard_tokens=shard_tokens,
            val_fraction=val_fraction,
            seed=seed,
            progress=bar,
            after_each_file=job.end_id,
            file_bos=framing.file_bos,
            file_eos=framing.file_eos,
            on_shard=on_shard,
            checksums=checksums,
            size=sum(Path(ids_of[i]).stat().st_size for i in results) if kept == len(plan.units) else 0,
        )

    # The shards are written from the units as they come, in order, while later units
    # are encoded; a bar of their own only when every unit was kept.
    assembly = _Assembly(root, manifest, state, run, progress and kept == len(plan.units), ready)
    assembly.start()
    try:
        _encode_units(
            plan, spec, results, folder, lambda: open_backend(address, backend, workers), progress, ready
        )
    except BaseException:
        ready.stop()
        assembly.join()
        raise
    done = assembly.result()
    stats = plan.stats({i: r.stats for i, r in results.items()}, kept=kept)
    check_some_read(stats)  # before the manifest says complete
    done.manifest["totals"]["skipped"] = stats["skipped"]
    done.manifest["totals"]["bytes"] = stats["bytes"]
    finish_manifest(root, done.manifest)
    clear_units(folder)
    return Written(done.manifest, stats, framing, sources.files, False)


class _Stopped(Exception):
    """The units' encoding stopped (it failed, or was interrupted): the shards stop."""


class _Ready:
    """The units whose files are ready, which the assembly waits on in order."""

    def __init__(self, done: Iterable[int]) -> None:
        self.done = set(done)
        self.stopped = False
        self.cond = threading.Condition()

    def add(self, index: int) -> None:
        with self.cond:
            self.done.add(index)
            self.cond.notify_all()

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()

    def wait_for(self, index: int) -> None:
        with self.cond:
            while index not in self.done and not self.stopped:
                self.cond.wait()
            if self.stopped:
                raise _Stopped("the units' encoding stopped")


class _Assembly(threading.Thread):
    """Writes the shards (``write_shards``) on a thread of its own; a failure stops the
    encoding (``ready``), and ``result`` raises it."""

    def __init__(
        self,
        root: Path,
        manifest: dict[str, Any],
        state: Any,
        run: Callable[..., Any],
        bar: bool,
        ready: _Ready,
    ) -> None:
        super().__init__(name="bpekit-assemble", daemon=True)
        self.args = (root, manifest, state, run)
        self.bar, self.ready = bar, ready
        self.done: Shards | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.done = write_shards(*self.args, progress=self.bar, resumable=False, label="writing")
        except BaseException as e:
            self.error = e
            self.ready.stop()

    def result(self) -> Shards:
        self.join()
        if self.error is not None:
            raise self.error
        assert self.done is not None
        return self.done


def _sources(files: list[tuple[Path, str]], text_field: str) -> Sources:
    """The files as ``bpekit.sources.resolve`` gives them, for the manifest and the
    marks; a Parquet file's rows are read by the workers, never here."""
    out = Sources([], files=len(files))
    for path, fmt in files:
        if fmt == "text":
            out.text_files = True
            out.sources.append(("text", str(path)))
        else:
            out.records = True
            out.sources.append(("jsonl", str(path), text_field) if fmt == "jsonl" else ("arrow", str(path)))
    return out


# What may change between a run and its rerun: the units do not depend on it.
_NOT_COMPARED = ("tokenizer", "work_dir", "crash_once", "num_threads", "chunk_size")


def _resume(folder: Path, plan: Plan, spec: EncodeSpec, own: bool) -> dict[int, UnitEncoded]:
    """The units done by an earlier run of the same plan, kept in ``folder``; another
    run's work there is refused (``work_dir``) or cleared (the folder of our own)."""
    job = {
        "job": "encode",
        "version": bpekit.__version__,
        "options": {k: v for k, v in vars(spec).items() if k not in _NOT_COMPARED},
        **plan.describe(),
    }

    def keep(work_dir: Path, index: int) -> UnitEncoded | None:
        entry = kept_record(work_dir, index, ".ids")
        try:
            if entry is None:
                return None
            return UnitEncoded(index, None, int(entry["tokens"]), dict(entry["stats"]))
        except (KeyError, TypeError, ValueError):
            return None

    return resume_units(folder, job, [u.index for u in plan.units], keep, fresh=own)


def _encode_units(
    plan: Plan,
    spec: EncodeSpec,
    results: dict[int, UnitEncoded],
    folder: Path,
    open_runner: Callable[[], Any],
    progress: bool,
    ready: _Ready,
) -> None:
    """Encodes the units not in ``results`` on the workers, adding theirs and telling
    ``ready`` of each; a unit file sent back is saved in ``folder`` with its record as
    it comes. Stops when ``ready`` is stopped (the shards' writing failed)."""
    todo = [u for u in plan.units if u.index not in results]
    if not todo:
        return
    bar = ProgressBar("encoding", unit="bytes") if progress else None
    size = sum(u.size for u in plan.units)
    done_bytes = sum(u.size for u in plan.units if u.index in results)
    completed = False
    try:
        runner = open_runner()
        try:
            for k, result in runner.run(encode_unit, [(u, spec) for u in todo]):
                if result.data is not None:
                    ids, record = unit_files(folder, result.index, ".ids")
                    atomic_write(ids, result.data)
                    result.data = None
                    save_record(record, result.index, ids, tokens=result.tokens, stats=result.stats)
                results[result.index] = result
                ready.add(result.index)
                if ready.stopped:
                    return  # the shards failed: their error is raised
                done_bytes += todo[k].size
                if bar is not None:
                    bar(done_bytes, size)
        finally:
            runner.close()
        completed = True
    finally:
        if bar is not None:
            bar.close(completed)
