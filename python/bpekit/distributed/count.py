"""Counting pre-tokens over many workers (``bpekit.distributed.count_pretokens``).

The driver plans the units; workers count them, each unit's counts split by word into
one partition per reducer (``work.count_unit``); a reducer per partition adds that
partition of every unit (``work.reduce_partition``); the driver appends the reducers'
sums, which share no word, into the whole table. So the driver never adds a unit's
counts: what it receives is the final table, once, and its memory is that table.
Counts add exactly, so neither the units, the workers nor the partitions change the
result.

On Ray the partitions stay in its object store until their reducer takes them; with
``work_dir`` (or on the local pool, in a temporary folder) they are files, which a
rerun keeps. Either way the reducers run once every unit is counted.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from bpekit import _core, training
from bpekit._lock import FolderLock
from bpekit._progress import ProgressBar
from bpekit.distributed.backends import Backend, RayBackend, open_backend
from bpekit.distributed.plan import DEFAULT_UNIT_BYTES, Plan, Unit, plan_units
from bpekit.distributed.work import (
    CountSpec,
    UnitCounts,
    count_unit,
    count_unit_kept,
    kept_unit,
    partition_handles,
    reduce_partition,
    resume_units,
)
from bpekit.options import DistributedOptions, ReadOptions, RunOptions
from bpekit.sources import check_some_read, warn_skipped

__all__ = ["check_threads", "count_pretokens", "count_units", "count_with_stats"]

WordCounts = training.WordCounts


def count_pretokens(
    inputs: Any,
    special_tokens: Sequence[str] | None = None,
    *,
    address: str | None = DistributedOptions.address,
    backend: str = DistributedOptions.backend,
    workers: int | None = DistributedOptions.workers,
    work_dir: str | os.PathLike[str] | None = DistributedOptions.work_dir,
    unit_bytes: int | None = DistributedOptions.unit_bytes,
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
    run = RunOptions(num_threads=check_threads(num_threads), progress=progress)
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
    planned = functools.partial(
        plan_units,
        inputs,
        special_tokens=specials,
        pattern=pattern,
        special_in_text=read.special_in_text,
        format=read.format,
        text_field=read.text_field,
    )
    unit = spread.unit_bytes or DEFAULT_UNIT_BYTES
    plan = planned(unit_bytes=unit)  # before Ray starts: bad inputs fail at once
    runner = open_backend(spread.address, spread.backend, spread.workers)
    try:
        if spread.unit_bytes is None and spread.work_dir is None and runner.keeps_objects:
            larger = larger_units(sum(u.size for u in plan.units), runner.workers)
            if larger > unit:
                unit, plan = larger, planned(unit_bytes=larger)
        spec = CountSpec(
            special_tokens=tuple(specials),
            pattern=pattern,
            read=read,
            num_threads=run.num_threads or 1,
            work_dir=spread.work_dir,
            parts=runner.workers,
            crash_once=crash_once,
        )
        if spec.work_dir is not None:
            return _count_in(Path(spec.work_dir), runner, plan, spec, run.progress, resume=True)
        if runner.keeps_objects:
            spec = replace(spec, parts=partitions(runner.workers, unit))
            return _count_kept(runner, plan, spec, run.progress)
        # Workers of a local pool keep their partitions in a folder of this machine.
        with tempfile.TemporaryDirectory(prefix="bpekit-count-") as folder:
            return _count_in(Path(folder), runner, plan, replace(spec, work_dir=folder), run.progress)
    finally:
        runner.close()


#: Input bytes per partition of a unit's counts, at least. Ray sends a task's results
#: of under 100 KiB back to the caller, the driver, with the task's reply rather than
#: keeping them in its object store; a unit's counts are about 7% of its input on
#: OpenWebText-like text (18 MB for 256 MiB), so a partition per 16 MiB of input, about
#: 1 MB of counts, stays well above that.
MIN_PARTITION_INPUT = 16 << 20


#: The largest units of a count on Ray with no ``work_dir`` (``larger_units``).
MAX_KEPT_UNIT = 1 << 30


def larger_units(total: int, workers: int) -> int:
    """The unit size of a count on Ray with no ``work_dir`` (so no rerun to keep units
    for): at least four units per worker, as few as ``MAX_KEPT_UNIT`` allows, and as
    many as a multiple of the workers, of one size (from ``DEFAULT_UNIT_BYTES``).

    Why large: each unit's counts repeat the words of the others, which the reducers
    add up again (owt-12G on 2 CPUs, one run each, counted in 25.6-25.9 s with units
    of 256 MiB, 22.2-22.8 s with 1 GiB and 21.6-22.2 s with 3 GiB). Why a multiple of
    the workers, of one size: each worker gets as much as the others, and none waits
    on the last unit; owt-12G in units of 1 GiB made eleven and a third, and one of
    the 2 workers sat idle for the last 1.2 s of a 16 s count. (Units are cut file by
    file, and at least ``DEFAULT_UNIT_BYTES``: where files are several, or the input
    is small, the count of units is what they make.)"""
    units = max(4 * workers, -(-total // MAX_KEPT_UNIT))
    units = -(-units // workers) * workers
    return max(DEFAULT_UNIT_BYTES, -(-total // units))


def partitions(workers: int, unit_bytes: int) -> int:
    """How many partitions the counts are split into on Ray: one per worker, as far as
    each stays large enough to bypass the driver (``MIN_PARTITION_INPUT``). Saved in
    files (``work_dir``, the local pool), they are one per worker."""
    return max(1, min(workers, unit_bytes // MIN_PARTITION_INPUT))


def _count_in(
    folder: Path, runner: Backend, plan: Plan, spec: CountSpec, progress: bool, resume: bool = False
) -> WordCounts:
    """Counts each unit into ``folder``, then reduces each partition on a worker."""
    results: dict[int, UnitCounts] = {}
    if resume:
        kept = _resume(folder, plan, spec)
        # A rerun splits its units as the earlier run did, whatever its own number of
        # workers (the partitions never change the counts): so every unit done is kept.
        # Units of runs that split them differently are counted again.
        splits = Counter(len(r.ends) for r in kept.values())
        if splits:
            spec = replace(spec, parts=splits.most_common(1)[0][0])
        results = {i: r for i, r in kept.items() if len(r.ends) == spec.parts}
    todo = [u for u in plan.units if u.index not in results]
    with _Progress(plan, results, progress) as bar:
        for k, result in runner.run(count_unit, [(u, spec) for u in todo]):
            results[result.index] = result
            bar.done(todo[k])
    handles = [partition_handles(folder, results[u.index]) for u in plan.units]
    reduced = runner.run(reduce_partition, [(p, [h[p] for h in handles]) for p in range(spec.parts)])
    return _finish(plan, results, len(plan.units) - len(todo), spec.parts, reduced)


def _count_kept(runner: Backend, plan: Plan, spec: CountSpec, progress: bool) -> WordCounts:
    """Counts each unit on a worker that keeps its partitions in Ray's store, then
    reduces each partition on a worker.

    The reducers start once every unit is counted, not with the units: Ray gives tasks
    of another function their turn, so reducers started early waited for units on
    CPUs of their own, and Ray started a worker process for each (owt-1G on 2 CPUs:
    6 workers instead of 3, the count 2.4x the one process's time instead of 0.94x).
    Adding a unit's partitions is 7% of counting it."""
    assert isinstance(runner, RayBackend)
    mapped, kept = runner.submit(count_unit_kept, [(u, spec) for u in plan.units], keep=spec.parts)
    results: dict[int, UnitCounts] = {}
    with _Progress(plan, results, progress) as bar:
        for k, result in mapped:
            results[result.index] = result
            bar.done(plan.units[k])
    reduced = runner.run(reduce_partition, [(p, [k[p] for k in kept]) for p in range(spec.parts)])
    # ``kept`` lives until every reducer's sum is in: a reducer's sum lost with its
    # node is made again from the partitions, which Ray can make again only while
    # they are referenced (freed once their reducer ended, they could not be).
    total = _finish(plan, results, 0, spec.parts, reduced)
    del kept
    return total


def _finish(
    plan: Plan,
    results: dict[int, UnitCounts],
    kept: int,
    parts: int,
    reduced: Iterator[tuple[int, bytes]],
) -> WordCounts:
    """The whole table from the reducers' partitions, with the run's stats."""
    total = WordCounts._from_partitions(parts, reduced)
    stats = plan.stats({i: r.stats for i, r in results.items()}, kept=kept)
    check_some_read(stats)  # before a vocabulary is trained from no text
    total.stats = stats
    return total


class _Progress:
    """The bar of a count: bytes of the units counted (those kept count at once)."""

    def __init__(self, plan: Plan, results: dict[int, UnitCounts], show: bool) -> None:
        self.total = sum(u.size for u in plan.units)
        self.bytes = sum(u.size for u in plan.units if u.index in results)
        self.bar = ProgressBar("counting", unit="bytes") if show else None
        self.completed = False

    def done(self, unit: Unit) -> None:
        self.bytes += unit.size
        if self.bar is not None:
            self.bar(self.bytes, self.total)

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if self.bar is not None:
            self.bar.close(kind is None)


# Deprecated: count_pretokens, whose counts carry their stats; kept so that code calling it runs.
count_with_stats = training.returning_stats(count_pretokens)


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


def check_threads(num_threads: Any) -> int:
    if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive int (each task's threads), not {num_threads!r}")
    return num_threads
