"""A dataset encoded by many workers, byte-identical to ``bpekit.encode_dataset``'s.

The driver plans the input files into units (``plan``), and the workers encode one unit
each into a *unit file* of its ids (``work.encode_unit``). Where the workers reach the
dataset's folder (the local pool, a Ray started here), each also sends back its unit's
skeleton (where its ids lie and where its documents end; ``shardplan``), the driver
plans every shard from the skeletons alone (``shardplan.ShardPlanner``: the one-machine
writer's rules on lengths) and the workers write the shards from the unit files
(``shardwrite.write_shard``): no id passes through the driver, which writes the
manifest last. Elsewhere (a cluster joined at an address) the driver replays the unit
files in input order into the same dataset writer that ``bpekit.encode_dataset`` feeds
(``_core.Encoder.assemble_dataset``), on a thread of its own while the workers encode,
taking each unit as soon as the units before it are replayed and its own file is in.
Either way the documents, their numbers, the val split and the shards come out as one
machine writes them, whatever the units or workers.

Unit files are as large as the dataset's shards. They are kept in ``work_dir`` (a
folder every worker and the driver can reach: workers write there) or, without one, in
``.<name>.units`` beside the dataset (written there by workers on this machine; workers
of a cluster joined at an address send them back for the driver to write). Where the
workers write the shards, each unit file is deleted as soon as the shards its ids go
into are written (``consumed``). A rerun after the driver died keeps every unit file
whose size and CRC-32 its record gives, every shard the workers recorded as written
whose files check out, and the units whose files went into those; it encodes only the
rest. Once the dataset is written, the units' folder is deleted.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pickle
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bpekit import _core
from bpekit._atomic import atomic_write
from bpekit._lock import FolderLock
from bpekit._progress import ProgressBar
from bpekit._stores import StoreObject
from bpekit.dataset.folder import (
    Done,
    check_output_folder,
    checked_folder,
    prepare_folder,
    shard_files,
)
from bpekit.dataset.job import Job, prepare, resolve_framing
from bpekit.dataset.manifest import dataset_manifest, dump, fingerprint
from bpekit.dataset.options import Layout, Marks
from bpekit.dataset.shards import Shards, finish_manifest, write_shards
from bpekit.dataset.spec import MANIFEST, index_name, shard_name, split_names
from bpekit.dataset.store import remove_staging, store_or_folder
from bpekit.dataset.writer import Written
from bpekit.distributed.backends import open_backend, workers_are_here
from bpekit.distributed.consumed import Consumption, ShardKey, kept_skeleton, present, written_shards
from bpekit.distributed.plan import Plan, plan_units
from bpekit.distributed.shardplan import Item, ShardPlan, ShardPlanner
from bpekit.distributed.shardwrites import ShardWrites
from bpekit.distributed.work import (
    EncodeSpec,
    UnitEncoded,
    clear_units,
    encode_unit,
    kept_record,
    resume_units,
    save_record,
    unit_files,
    unit_items,
    worker_share,
)
from bpekit.options import DistributedOptions, ReadOptions, RunOptions
from bpekit.sources import Sources, check_some_read, resolve_files, warn_skipped
from bpekit.tokenizer import Tokenizer

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["UnitFiles", "encode_dataset", "write_dataset"]


def encode_dataset(
    inputs: Any,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str,
    *,
    address: str | None = DistributedOptions.address,
    backend: str = DistributedOptions.backend,
    workers: int | None = DistributedOptions.workers,
    work_dir: str | os.PathLike[str] | None = DistributedOptions.work_dir,
    unit_bytes: int | None = DistributedOptions.unit_bytes,
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
    num_threads: int = 1,
    chunk_size: int = RunOptions.chunk_size,
    progress: bool = RunOptions.progress,
    resume: bool = RunOptions.resume,
) -> dict[str, Any]:
    """``bpekit.encode_dataset`` of files, encoded in units of about ``unit_bytes`` by
    the workers of ``backend`` (``address``, ``workers``, ``work_dir``: how they are
    reached and where they keep the units, as ``bpekit.options.DistributedOptions``
    and ``bpekit.distributed``'s doc say): the same dataset, byte for byte. The other
    keywords are ``bpekit.encode_dataset``'s; ``num_threads`` is each task's threads
    (Ray gives each task one CPU) and ``resume`` also keeps the units done (see the
    module's doc). Returns the manifest."""
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
    spread = DistributedOptions(
        address=address,
        backend=backend,
        workers=workers,
        work_dir=None if work_dir is None else os.fspath(work_dir),
        unit_bytes=unit_bytes,
    )
    written = write_dataset(inputs, out_dir, tokenizer, layout, marks, read, run, spread)
    warn_skipped(written.stats)
    return written.manifest


@dataclass(frozen=True)
class UnitFiles:
    """The unit files an assembly replays, as ``_core.Encoder.assemble_dataset`` reads
    them: ``units``, ``(path, first input)`` in input order, each given once its file is
    ready; whether each input is a text file; the files' bytes, for progress (0: not
    known)."""

    units: Iterable[tuple[str, int]]
    is_text: list[bool]
    size: int


def write_dataset(
    inputs: Any,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str,
    layout: Layout,
    marks: Marks,
    read: ReadOptions,
    run: RunOptions,
    spread: DistributedOptions,
    *,
    cli: bool = False,
    _crash_once: tuple[int, str] | None = None,
    _replay: bool = False,
) -> Written:
    """``encode_dataset`` with its options as objects, returning what the command line's
    summary reports (its stats with ``"units"`` and ``"kept"``). ``_crash_once``, for
    tests of retries: ``work.EncodeSpec.crash_once``; ``_replay``: the driver replays
    the unit files into the shards even where the workers could write them (to
    compare the two)."""
    tok, layout, end_id = prepare(tokenizer, layout, marks)
    if run.num_threads is None:
        raise ValueError("num_threads must be a positive int (each task's threads), not None")
    target, root = store_or_folder(out_dir)
    # Workers may run elsewhere than the driver's working folder (Ray's working_dir).
    root = root.absolute()
    check_output_folder(root, inputs)
    if spread.work_dir is not None and _within(Path(os.fspath(spread.work_dir)), root):
        raise ValueError(
            f"work_dir {os.fspath(spread.work_dir)}: is the dataset's folder or inside it; "
            "give the units a folder of their own"
        )
    files = resolve_files(inputs, format=read.format)
    check_output_folder(root, inputs, [_name(path) for path, _ in files])
    sources = _sources(files, read.text_field)
    framing = resolve_framing(tok, marks, sources, end_id, cli)
    job = Job(read, run, layout, framing, tokenizer_name=tok.name or "")
    manifest = dataset_manifest(job, tokenizer, tok, sources, marks.after_each_file)
    if target is not None:
        found = target.prepare(manifest, run.resume, None)
        if found is not None:
            return Written(found, Done(found).stats(), framing, sources.files, True)
        root.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as held:
        # The dataset folder, and a work_dir of the caller's, for the whole run (the
        # units' folder of our own goes with the dataset's name, so with its lock).
        held.enter_context(FolderLock(checked_folder(root)))
        if spread.work_dir is not None:
            held.enter_context(FolderLock(spread.work_dir, "work_dir", remove_empty=True))
        written = _write(root, manifest, job, files, sources, tok, spread, _crash_once, _replay)
        if target is not None:
            # The workers wrote the shards into staging: put them, the manifest last.
            target.commit(root, written.manifest)
    if target is not None:
        remove_staging(root)
    return written


def _within(folder: Path, root: Path) -> bool:
    """Whether ``folder`` is ``root`` or inside it."""
    folder, root = folder.resolve(), root.resolve()
    return folder == root or root in folder.parents


def _write(
    root: Path,
    manifest: dict[str, Any],
    job: Job,
    files: list[tuple[Path | StoreObject, str]],
    sources: Sources,
    tok: Tokenizer,
    spread: DistributedOptions,
    crash_once: tuple[int, str] | None,
    replay: bool = False,
) -> Written:
    """``write_dataset`` once its folders are held: the workers write the shards where
    they can reach the dataset's folder (``_write_by_workers``), else (or ``replay``)
    the driver replays the unit files into them."""
    framing, read = job.framing, job.read
    work_dir = spread.work_dir
    shared = work_dir is not None
    folder = Path(os.fspath(work_dir)) if work_dir is not None else root.parent / f".{root.name}.units"
    # A finished dataset is returned as it is; an unfinished one keeps the shards its
    # workers recorded as written (``consumed``), none of its own writer's: the units
    # and those are what a rerun keeps.
    written = written_shards(root, folder, job.layout.shard_format) if job.run.resume else {}
    keep_files = [name for row in written.values() for name in shard_files(row["entry"])]
    state = prepare_folder(root, manifest, job.run.resume, None, keep=False, keep_files=keep_files)
    if isinstance(state, Done):
        if not shared and folder.is_dir():
            clear_units(folder)  # a run killed between its manifest and this
        return Written(state.manifest, state.stats(), framing, sources.files, True)
    # What the folder kept: a finished dataset with a shard gone is written again whole.
    written = {key: row for key, row in written.items() if present(root, row["entry"])}
    cut_pattern, cut_specials = tok._core.cut_rule()
    plan = plan_units(
        [_name(path) for path, _ in files],
        special_tokens=cut_specials,
        pattern=cut_pattern,
        special_in_text=read.special_in_text,
        format=read.format,
        text_field=read.text_field,
        unit_bytes=spread.unit_bytes,
    )
    # Workers on this machine (the local pool, a Ray started here) write the unit files
    # into the folder themselves: sending them back through a pipe or Ray's object
    # store, for the driver to write and hash, made the driver the bottleneck. They
    # write into both folders, so each node must see a probe file in each.
    if not shared:
        folder.mkdir(exist_ok=True)
    here = workers_are_here(spread.backend, spread.address, [root, folder] if folder.is_dir() else [root])
    spec = EncodeSpec(
        tokenizer=pickle.dumps(tok),
        fingerprint=fingerprint(tok),
        job=job,
        work_dir=str(folder) if shared or here else None,
        crash_once=crash_once,
    )
    if not job.run.resume:
        # Starting over drops this job's units; a work_dir of another run's is still
        # refused (by _resume), never emptied.
        _resume(folder, plan, spec, own=not shared)
        clear_units(folder)
    by_workers = here and not replay
    # Units whose files went once their shards were written: only the workers' path
    # can go on without their files (the replay reads every unit file).
    skeletons: dict[int, list[Item]] = {}
    results = _resume(
        folder, plan, spec, own=not shared, written=written if by_workers else None, skeletons=skeletons
    )
    kept = len(results)
    if by_workers:
        open_runner = functools.partial(open_backend, spread.address, spread.backend, spread.workers, here)
        kept_now = _Kept(results, skeletons, written)
        manifest = _write_by_workers(root, manifest, state, plan, spec, tok, kept_now, open_runner)
        stats = plan.stats({i: r.stats for i, r in results.items()}, kept=kept)
        clear_units(folder)
        return Written(manifest, stats, framing, sources.files, False)
    ready = _Ready(results)
    ids_of = {u.index: str(unit_files(folder, u.index, ".ids")[0]) for u in plan.units}

    def units() -> Iterator[tuple[str, int]]:
        for unit in plan.units:
            ready.wait_for(unit.index)
            yield ids_of[unit.index], unit.input

    def run(on_shard: Callable[..., None], resume_from: Any, bar: Any) -> dict[str, Any]:
        assert resume_from is None  # prepare_folder kept no shards
        size = sum(Path(ids_of[i]).stat().st_size for i in results) if kept == len(plan.units) else 0
        is_text = [fmt == "text" for _, fmt, _, _ in plan.files]
        assembled: dict[str, Any] = tok._core.assemble_dataset(
            UnitFiles(units(), is_text, size), str(root), job, on_shard=on_shard, progress=bar
        )
        return assembled

    # The shards are written from the units as they come, in order, while later units
    # are encoded; a bar of their own only when every unit was kept.
    progress = job.run.progress
    assembly = _Assembly(root, manifest, state, run, progress and kept == len(plan.units), ready)
    assembly.start()
    try:
        open_runner = functools.partial(open_backend, spread.address, spread.backend, spread.workers, here)
        _encode_units(plan, spec, results, folder, open_runner, progress, ready)
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


def _name(path: Path | StoreObject) -> str:
    return path.url if isinstance(path, StoreObject) else str(path)


def _sources(files: list[tuple[Path | StoreObject, str]], text_field: str) -> Sources:
    """The files as ``bpekit.sources.resolve`` gives them, for the manifest and the
    marks; a Parquet file's rows are read by the workers, never here."""
    out = Sources([], files=len(files))
    for path, fmt in files:
        if isinstance(path, StoreObject):
            out.text_files |= fmt == "text"
            out.records |= fmt != "text"
            field = text_field if fmt == "jsonl" else ""
            stream = ("stream", path.url, fmt, field, None, path.size, path)
            out.sources.append(("arrow", path.url, None, path) if fmt == "parquet" else stream)
        elif fmt == "text":
            out.text_files = True
            out.sources.append(("text", str(path)))
        else:
            out.records = True
            out.sources.append(("jsonl", str(path), text_field) if fmt == "jsonl" else ("arrow", str(path)))
    return out


def _resume(
    folder: Path,
    plan: Plan,
    spec: EncodeSpec,
    own: bool,
    written: dict[ShardKey, dict[str, Any]] | None = None,
    skeletons: dict[int, list[Item]] | None = None,
) -> dict[int, UnitEncoded]:
    """The units done by an earlier run of the same plan, kept in ``folder``; another
    run's work there is refused (``work_dir``) or cleared (the folder of our own).
    With ``written`` (the shards kept, ``consumed.written_shards``), also the units whose file
    was deleted once written into shards that are all kept; their skeletons go into
    ``skeletons``."""
    read, framing = spec.job.read, spec.job.framing
    # What a unit's ids depend on (not the threads, the chunk size or where units go).
    options = {
        "fingerprint": spec.fingerprint,
        "dtype_bytes": spec.job.dtype_bytes,
        "errors": read.errors,
        "special_in_text": read.special_in_text,
        "bad_records": read.bad_records,
        "text_field": read.text_field,
        "record_bos": framing.record_bos,
        "record_eos": framing.record_eos,
    }
    job = {"job": "encode", "version": _core.__version__, "options": options, **plan.describe()}

    def keep(work_dir: Path, index: int) -> UnitEncoded | None:
        entry = kept_record(work_dir, index, ".ids")
        if entry is None and written is not None and skeletons is not None:
            gone = kept_skeleton(work_dir, index)
            if gone is not None and all(key in written for key in gone[2]):
                entry = gone[0]
                skeletons[index] = gone[1]
        try:
            if entry is None:
                return None
            return UnitEncoded(index, None, int(entry["tokens"]), dict(entry["stats"]), int(entry["crc32"]))
        except (KeyError, TypeError, ValueError):
            if skeletons is not None:
                skeletons.pop(index, None)
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
        spec = replace(spec, table_bytes=worker_share(todo, runner.workers))
        try:
            for k, result in runner.run(encode_unit, [(u, spec) for u in todo]):
                if result.data is not None:
                    ids, record = unit_files(folder, result.index, ".ids")
                    atomic_write(ids, result.data)
                    result.data = None
                    save_record(
                        record, result.index, ids, result.crc32, tokens=result.tokens, stats=result.stats
                    )
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


@dataclass
class _Kept:
    """What a rerun keeps for the workers' path: the units done (``results``, filled
    in with those encoded now), the skeletons of those whose files went once their
    shards were written, and the shards written (``consumed.written_shards``)."""

    results: dict[int, UnitEncoded]
    skeletons: dict[int, list[Item]]
    written: dict[ShardKey, dict[str, Any]]


def _write_by_workers(
    root: Path,
    manifest: dict[str, Any],
    state: Any,
    plan: Plan,
    spec: EncodeSpec,
    tok: Tokenizer,
    kept: _Kept,
    open_runner: Callable[[], Any],
) -> dict[str, Any]:
    """The dataset written by the workers: each encodes its units (those not kept)
    and sends back their skeletons; the driver plans every shard from them
    (``ShardPlanner``), the workers write the shards (but those kept) and each unit
    file goes once its shards are written (``consumed``); the driver writes the
    manifest last. Returns it, finished; ``kept.results`` gets the units encoded."""
    del state  # the shards kept are those of kept.written
    job, framing = spec.job, spec.job.framing
    layout = job.layout
    results = kept.results
    names = split_names(manifest["val_fraction"])
    splits: dict[str, dict[str, Any]] = {name: {"shards": []} for name in names}
    manifest["splits"] = splits
    manifest["resume"] = {name: [] for name in names}
    atomic_write(root / MANIFEST, dump(manifest))
    for name in names:
        (root / name).mkdir(exist_ok=True)
    specials = sorted({i for _, i in tok._core.special_tokens()})
    width = 2 if job.dtype_name == "uint16" else 4
    progress = job.run.progress
    is_text = [fmt == "text" for _, fmt, _, _ in plan.files]
    planner = ShardPlanner(
        is_text,
        names,
        layout.shard_tokens,
        width,
        layout.val_fraction,
        layout.seed,
        framing.file_bos,
        framing.file_eos,
        framing.after_each_file,
    )
    folder = spec.work_dir
    assert folder is not None
    paths = {u.index: str(unit_files(folder, u.index, ".ids")[0]) for u in plan.units}
    consumption = Consumption(folder, [row for row in kept.written.values()])
    entries: dict[ShardKey, dict[str, Any]] = {}  # the manifest's, as each shard is written

    def on_written(s: ShardPlan, written: dict[str, Any]) -> None:
        entries[s.split, s.k] = entry = _entry(s, layout.shard_format, written)
        consumption.written(s, entry, written)
        s.let_go()
        consumption.release(planner.open_units())

    def start(shards: list[ShardPlan]) -> None:
        """Starts writing the shards closed, but those an earlier run wrote."""
        todo = []
        for s in shards:
            row = kept.written.get((s.split, s.k))
            if row is not None:
                planned_entry = json.loads(json.dumps(_entry(s, layout.shard_format, row["written"])))
                row = row if planned_entry == row["entry"] else None  # recorded otherwise: written again
            gone = sorted({p[0] for p in s.pieces if p[0] in kept.skeletons}) if row is None else []
            if gone:
                # Only records edited by hand get here: the shards they name were kept
                # and this one was not. Every skeleton kept goes, so that the next run
                # encodes those units again (it still keeps the shards that match).
                for unit in kept.skeletons:
                    unit_files(folder, unit, ".skel")[0].unlink(missing_ok=True)
                raise RuntimeError(
                    f"{folder}: the records of an earlier run do not hold shard {s.split}/{s.k:05d} of "
                    f"units {', '.join(map(str, gone))}, whose files are gone; those units' records are "
                    "removed, and a rerun encodes them again"
                )
            consumption.closed(s, written=row is not None)
            if row is None:
                todo.append(s)
            else:
                entries[s.split, s.k] = _entry(s, layout.shard_format, row["written"])
                s.let_go()
        writes.start(todo)
        consumption.release(planner.open_units())

    # The units to encode, or to read back (their files kept); the others are known
    # by their skeletons alone.
    todo_units = [u for u in plan.units if u.index not in kept.skeletons]
    position = {u.index: k for k, u in enumerate(plan.units)}
    try:
        runner = open_runner()
    except BaseException:
        consumption.close()
        raise
    spec = replace(
        spec, table_bytes=worker_share([u for u in plan.units if u.index not in results], runner.workers)
    )
    try:
        writes = ShardWrites(runner, root, job, width, paths, on_written)
        tasks = [(u, spec, specials, u.index not in results) for u in todo_units]
        bar = ProgressBar("encoding", unit="bytes") if progress else None
        size, done_bytes = sum(u.size for u in plan.units), 0
        waiting = {position[i]: items for i, items in kept.skeletons.items()}
        planned = 0

        def plan_ready() -> None:
            # The units in input order, as they come: each shard is written once
            # closed, while later units are still being encoded.
            nonlocal planned
            while planned in waiting:
                unit = plan.units[planned].index
                items = waiting.pop(planned)
                planner.add(unit, items)
                if unit not in kept.skeletons:
                    consumption.planned(unit, items)
                planned += 1
            start(planner.closed())

        try:
            try:
                plan_ready()
                for k, (result, items) in runner.run(unit_items, tasks):
                    if result is not None:
                        results[result.index] = result
                    waiting[position[todo_units[k].index]] = items
                    plan_ready()
                    writes.check()
                    done_bytes += todo_units[k].size
                    if bar is not None:
                        bar(done_bytes, size)
            finally:
                if bar is not None:
                    bar.close(planned == len(plan.units))
            shards = planner.finish(len(plan.files))
            start(planner.closed())
            writes.results()
        except BaseException:
            writes.cancel()
            raise
    finally:
        runner.close()
        consumption.close()
    for s in shards:
        splits[s.split]["shards"].append(entries[s.split, s.k])
    for split in splits.values():
        split["tokens"] = sum(s["tokens"] for s in split["shards"])
        split["documents"] = sum(s["documents"] for s in split["shards"])
    stats = plan.stats({i: r.stats for i, r in results.items()}, kept=0)
    check_some_read(stats)  # before the manifest says complete
    manifest["totals"] = {
        "tokens": sum(split["tokens"] for split in splits.values()),
        "documents": planner.documents,
        "bytes": stats["bytes"],
        "skipped": stats["skipped"],
    }
    finish_manifest(root, manifest)
    return manifest


def _entry(s: ShardPlan, shard_format: str, written: dict[str, Any]) -> dict[str, Any]:
    """Shard ``s``'s manifest entry, as the core's writer gives it (``shard_dict``)."""
    inputs = [r[0] for r in s.ranges]
    entry: dict[str, Any] = {
        "file": shard_name(s.split, s.k, shard_format),
        "index": index_name(s.split, s.k),
        "tokens": s.tokens,
        "documents": s.documents,
        "continues": s.continues,
        "first_document": s.first_document,
        "inputs": [i for k, i in enumerate(inputs) if k == 0 or inputs[k - 1] != i],
        "sources": [{"input": i, "documents": [a, b]} for i, a, b in s.ranges],
        "size": written["size"],
        "sha256": written["sha256"],
        "index_sha256": written["index_sha256"],
    }
    if written["trainer_files"]:
        entry["trainer_files"] = written["trainer_files"]
    return entry
