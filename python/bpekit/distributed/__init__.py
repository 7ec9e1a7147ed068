"""The same jobs as one machine runs, spread over many: on Ray, or on a local pool of
processes, with results identical to ``bpekit.count_pretokens``, ``bpekit.train_bpe``
and ``bpekit.encode_dataset`` (``dataset``: how a dataset is encoded in units).

The driver plans the inputs into units (``plan``: byte ranges of plain files at safe
cuts, runs of Parquet row groups, whole compressed files), the workers count one unit
each (``work``), and the driver adds the counts as they come back and trains on their
sum. Counts add exactly, so neither the number of units nor of workers changes the
result.

``address=None`` starts Ray on this machine for the run (or uses the Ray this process
started already); ``"auto"`` joins the running cluster; ``backend="local"`` uses a pool
of processes instead, with no Ray at all. ``work_dir`` keeps each unit's counts in a
folder that every worker can reach: a rerun after the driver died (or was stopped)
keeps the units done, by name, size and sha256, and counts only the rest.

>>> import tempfile, pathlib
>>> from bpekit import training
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
>>> _ = path.write_text("low low lower<|endoftext|>newest" * 50)
>>> counts = count_pretokens(path, ["<|endoftext|>"], backend="local", workers=2, unit_bytes=256)
>>> counts == training.count_pretokens(path, ["<|endoftext|>"])
True
>>> counts.stats["units"]
7
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from bpekit import _core, training
from bpekit._lock import FolderLock
from bpekit._progress import ProgressBar
from bpekit.distributed.backends import Backend, open_backend
from bpekit.distributed.dataset import encode_dataset
from bpekit.distributed.plan import Plan, plan_units
from bpekit.distributed.work import CountSpec, UnitCounts, count_unit, kept_unit, resume_units, unit_files
from bpekit.options import DistributedOptions, ReadOptions, RunOptions
from bpekit.sources import check_some_read, warn_skipped

__all__ = ["count_pretokens", "count_with_stats", "encode_dataset", "train_bpe"]

WordCounts = training.WordCounts


def count_pretokens(
    inputs: Any,
    special_tokens: Sequence[str] | None = None,
    *,
    address: str | None = DistributedOptions.address,
    backend: str = DistributedOptions.backend,
    workers: int | None = DistributedOptions.workers,
    work_dir: str | os.PathLike[str] | None = DistributedOptions.work_dir,
    unit_bytes: int = DistributedOptions.unit_bytes,
    pattern: str = "gpt2",
    num_threads: int = 1,
    errors: str = ReadOptions.errors,
    progress: bool = RunOptions.progress,
    format: str | None = ReadOptions.format,
    text_field: str = ReadOptions.text_field,
    special_in_text: str | None = ReadOptions.special_in_text,
    bad_records: str = ReadOptions.bad_records,
    _crash_once: tuple[int, str] | None = None,
) -> WordCounts:
    """``bpekit.count_pretokens`` of files, counted in units of about ``unit_bytes`` by
    the workers of ``backend`` (see the module's doc); the same counts, byte for byte
    once saved. ``num_threads`` is each task's threads (Ray gives each task one CPU);
    ``workers`` is the local pool's processes, or the CPUs of a Ray started here. The
    counts' ``stats`` are ``bpekit.count_pretokens``'s, with ``"units"`` (how many) and
    ``"kept"`` (units a rerun found done in ``work_dir``)."""
    read = ReadOptions(
        format=format,
        text_field=text_field,
        special_in_text=special_in_text,
        bad_records=bad_records,
        errors=errors,
    )
    run = RunOptions(num_threads=_check_threads(num_threads), progress=progress)
    spread = DistributedOptions(
        address=address,
        backend=backend,
        workers=workers,
        work_dir=None if work_dir is None else os.fspath(work_dir),
        unit_bytes=unit_bytes,
    )
    counts = count_units(
        inputs, special_tokens, pattern=pattern, read=read, run=run, spread=spread, crash_once=_crash_once
    )
    warn_skipped(counts.stats or {})
    return counts


def count_units(
    inputs: Any,
    special_tokens: Sequence[str] | None,
    *,
    pattern: str,
    read: ReadOptions,
    run: RunOptions,
    spread: DistributedOptions,
    crash_once: tuple[int, str] | None = None,
) -> WordCounts:
    """``count_pretokens`` with its options as the objects of ``bpekit.options`` (what
    the command line builds from its flags), and no warning for skipped records: the
    caller reports the result's ``stats``. ``run.num_threads`` is each task's threads
    (None: one). The folder of ``spread.work_dir`` is held for the whole run
    (``bpekit._lock.FolderLock``): two runs on one would take each other's units; a
    second one fails at once, naming the first's pid."""
    specials = training._check_special_tokens(special_tokens)
    held: AbstractContextManager[Any] = nullcontext()
    if spread.work_dir is not None:
        held = FolderLock(spread.work_dir, "work_dir", remove_empty=True)
    with held:
        return _count(inputs, specials, pattern, read, run, spread, crash_once)


def _count(
    inputs: Any,
    specials: list[str],
    pattern: str,
    read: ReadOptions,
    run: RunOptions,
    spread: DistributedOptions,
    crash_once: tuple[int, str] | None,
) -> WordCounts:
    spec = CountSpec(
        special_tokens=tuple(specials),
        pattern=pattern,
        read=read,
        num_threads=run.num_threads or 1,
        work_dir=spread.work_dir,
        crash_once=crash_once,
    )
    plan = plan_units(
        inputs,
        special_tokens=specials,
        pattern=pattern,
        special_in_text=read.special_in_text,
        format=read.format,
        text_field=read.text_field,
        unit_bytes=spread.unit_bytes,
    )
    results: dict[int, UnitCounts] = {}
    if spec.work_dir is not None:
        results = _resume(Path(spec.work_dir), plan, spec)
    todo = [u for u in plan.units if u.index not in results]
    bar = ProgressBar("counting", unit="bytes") if run.progress else None
    total: WordCounts | None = None
    done_bytes = sum(u.size for u in plan.units if u.index in results)
    completed = False
    try:
        if todo:
            runner = open_backend(spread.address, spread.backend, spread.workers)
            try:
                total = _gather(runner, todo, spec, results, bar, done_bytes, plan)
            finally:
                runner.close()
        if spec.work_dir is not None:
            total = _load_all(Path(spec.work_dir), plan)
        completed = True
    finally:
        if bar is not None:
            bar.close(completed)
    assert total is not None
    unit_stats = {i: r.stats for i, r in results.items()}
    stats = plan.stats(unit_stats, kept=len(plan.units) - len(todo))
    check_some_read(stats)  # before a vocabulary is trained from no text
    total.stats = stats
    return total


# Deprecated: count_pretokens, whose counts carry their stats; kept so that code calling it runs.
count_with_stats = training.returning_stats(count_pretokens)


def _gather(
    runner: Backend,
    todo: list[Any],
    spec: CountSpec,
    results: dict[int, UnitCounts],
    bar: ProgressBar | None,
    done_bytes: int,
    plan: Plan,
) -> WordCounts:
    """Runs the units of ``todo``; adds their counts (sent back) as they finish."""
    total = WordCounts()
    size = sum(u.size for u in plan.units)
    for k, result in runner.run(count_unit, [(u, spec) for u in todo]):
        results[result.index] = result
        if result.counts is not None:
            total._add_bytes(result.counts)
            result.counts = None
        done_bytes += todo[k].size
        if bar is not None:
            bar(done_bytes, size)
    return total


def _load_all(work_dir: Path, plan: Plan) -> WordCounts:
    """The sum of every unit's saved counts."""
    total: WordCounts | None = None
    for unit in plan.units:
        counts = WordCounts.load(unit_files(work_dir, unit.index)[0])
        if total is None:
            total = counts
        else:
            total.update(counts)
    assert total is not None
    return total


def _resume(work_dir: Path, plan: Plan, spec: CountSpec) -> dict[int, UnitCounts]:
    """The units of an earlier run of the same plan found done in ``work_dir``. A
    folder holding another run's work is refused, naming what differs. Compared: what
    the result depends on (the format is each planned file's); not the work_dir, the
    threads or a test's crash."""
    read = spec.read
    options = {
        "special_tokens": spec.special_tokens,
        "pattern": spec.pattern,
        "errors": read.errors,
        "special_in_text": read.special_in_text,
        "bad_records": read.bad_records,
        "text_field": read.text_field,
    }
    job = {"job": "count", "version": _core.__version__, "options": options, **plan.describe()}
    return resume_units(work_dir, job, [u.index for u in plan.units], kept_unit)


def _check_threads(num_threads: Any) -> int:
    if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive int (each task's threads), not {num_threads!r}")
    return num_threads


def train_bpe(
    inputs: Any,
    vocab_size: int,
    special_tokens: Sequence[str] | None = None,
    *,
    address: str | None = DistributedOptions.address,
    backend: str = DistributedOptions.backend,
    workers: int | None = DistributedOptions.workers,
    work_dir: str | os.PathLike[str] | None = DistributedOptions.work_dir,
    unit_bytes: int = DistributedOptions.unit_bytes,
    pattern: str = "gpt2",
    num_threads: int = 1,
    errors: str = ReadOptions.errors,
    progress: bool = RunOptions.progress,
    format: str | None = ReadOptions.format,
    text_field: str = ReadOptions.text_field,
    special_in_text: str | None = ReadOptions.special_in_text,
    bad_records: str = ReadOptions.bad_records,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """``bpekit.train_bpe`` with the counting spread over the workers
    (``count_pretokens``) and the merges made on the driver
    (``bpekit.train_from_counts``): the same vocabulary and merges."""
    specials = training._check_special_tokens(special_tokens)
    training.check_vocab_size(vocab_size, specials)
    counts = count_pretokens(
        inputs,
        specials,
        address=address,
        backend=backend,
        workers=workers,
        work_dir=work_dir,
        unit_bytes=unit_bytes,
        pattern=pattern,
        num_threads=num_threads,
        errors=errors,
        progress=progress,
        format=format,
        text_field=text_field,
        special_in_text=special_in_text,
        bad_records=bad_records,
    )
    return training.train_from_counts(counts, vocab_size, specials, progress=progress)
