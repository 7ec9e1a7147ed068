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
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
>>> _ = path.write_text("low low lower<|endoftext|>newest" * 50)
>>> counts = count_pretokens(path, ["<|endoftext|>"], backend="local", workers=2, unit_bytes=256)
>>> counts == bpekit.count_pretokens(path, ["<|endoftext|>"])
True
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bpekit
from bpekit import training
from bpekit._progress import ProgressBar
from bpekit._utf8 import check_errors
from bpekit.distributed.backends import Backend, open_backend
from bpekit.distributed.dataset import encode_dataset
from bpekit.distributed.plan import DEFAULT_UNIT_BYTES, Plan, plan_units
from bpekit.distributed.work import (
    CountSpec,
    UnitCounts,
    count_unit,
    holding_work_dir,
    kept_unit,
    resume_units,
    unit_files,
)
from bpekit.sources import (
    check_bad_records,
    check_some_read,
    check_special_in_text,
    check_text_field,
    warn_skipped,
)

__all__ = ["count_pretokens", "count_with_stats", "encode_dataset", "train_bpe"]

WordCounts = training.WordCounts


def count_pretokens(
    inputs: Any,
    special_tokens: Sequence[str] | None = None,
    *,
    address: str | None = None,
    backend: str = "ray",
    workers: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    unit_bytes: int = DEFAULT_UNIT_BYTES,
    pattern: str = "gpt2",
    num_threads: int = 1,
    errors: str = "strict",
    progress: bool = False,
    format: str | None = None,
    text_field: str = "text",
    special_in_text: str | None = None,
    bad_records: str = "error",
    _crash_once: tuple[int, str] | None = None,
) -> WordCounts:
    """``bpekit.count_pretokens`` of files, counted in units of about ``unit_bytes`` by
    the workers of ``backend`` (see the module's doc); the same counts, byte for byte
    once saved. ``num_threads`` is each task's threads (Ray gives each task one CPU);
    ``workers`` is the local pool's processes, or the CPUs of a Ray started here."""
    counts, stats = count_with_stats(
        inputs,
        special_tokens,
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
        _crash_once=_crash_once,
    )
    warn_skipped(stats)
    return counts


@holding_work_dir
def count_with_stats(
    inputs: Any,
    special_tokens: Sequence[str] | None = None,
    *,
    address: str | None = None,
    backend: str = "ray",
    workers: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    unit_bytes: int = DEFAULT_UNIT_BYTES,
    pattern: str = "gpt2",
    num_threads: int = 1,
    errors: str = "strict",
    progress: bool = False,
    format: str | None = None,
    text_field: str = "text",
    special_in_text: str | None = None,
    bad_records: str = "error",
    _crash_once: tuple[int, str] | None = None,
) -> tuple[WordCounts, dict[str, Any]]:
    """``count_pretokens``, also returning what was read, as
    ``bpekit.training.count_with_stats`` does, with ``"units"`` (how many) and
    ``"kept"`` (units a rerun found done in ``work_dir``)."""
    specials = training._check_special_tokens(special_tokens)
    spec = CountSpec(
        special_tokens=tuple(specials),
        pattern=pattern,
        errors=check_errors(errors),
        special_in_text=check_special_in_text(special_in_text),
        bad_records=check_bad_records(bad_records),
        text_field=check_text_field(text_field),
        num_threads=_check_threads(num_threads),
        work_dir=None if work_dir is None else os.fspath(work_dir),
        crash_once=_crash_once,
    )
    plan = plan_units(
        inputs,
        special_tokens=specials,
        pattern=pattern,
        special_in_text=spec.special_in_text,
        format=format,
        text_field=spec.text_field,
        unit_bytes=unit_bytes,
    )
    results: dict[int, UnitCounts] = {}
    if spec.work_dir is not None:
        results = _resume(Path(spec.work_dir), plan, spec)
    todo = [u for u in plan.units if u.index not in results]
    bar = ProgressBar("counting", unit="bytes") if progress else None
    total: WordCounts | None = None
    done_bytes = sum(u.size for u in plan.units if u.index in results)
    completed = False
    try:
        if todo:
            runner = open_backend(address, backend, workers)
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
    return total, stats


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


# What may change between a run and its rerun: the result does not depend on it.
_NOT_COMPARED = ("work_dir", "crash_once", "num_threads")


def _resume(work_dir: Path, plan: Plan, spec: CountSpec) -> dict[int, UnitCounts]:
    """The units of an earlier run of the same plan found done in ``work_dir``. A
    folder holding another run's work is refused, naming what differs."""
    job = {
        "job": "count",
        "version": bpekit.__version__,
        "options": {k: v for k, v in vars(spec).items() if k not in _NOT_COMPARED},
        **plan.describe(),
    }
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
    address: str | None = None,
    backend: str = "ray",
    workers: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    unit_bytes: int = DEFAULT_UNIT_BYTES,
    pattern: str = "gpt2",
    num_threads: int = 1,
    errors: str = "strict",
    progress: bool = False,
    format: str | None = None,
    text_field: str = "text",
    special_in_text: str | None = None,
    bad_records: str = "error",
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
