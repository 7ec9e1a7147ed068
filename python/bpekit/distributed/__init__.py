"""The same jobs as one machine runs, spread over many: on Ray, or on a local pool of
processes, with results identical to ``bpekit.count_pretokens``, ``bpekit.train_bpe``
and ``bpekit.encode_dataset`` (``dataset``: how a dataset is encoded in units).

The driver plans the inputs into units (``plan``: byte ranges of plain files at safe
cuts, runs of Parquet row groups, whole compressed files), the workers count one unit
each (``work``), reducers on the workers add them up by partitions of the words, and the
driver trains on the whole table (``count``: how). Counts add exactly, so neither the
number of units nor of workers changes the result.

``address=None`` starts Ray on this machine for the run (or uses the Ray this process
started already); ``"auto"`` joins the running cluster; ``backend="local"`` uses a pool
of processes instead, with no Ray at all. ``work_dir`` keeps each unit's counts in a
folder that every worker can reach: a rerun after the driver died (or was stopped)
keeps the units done, by name, size and CRC-32, and counts only the rest.

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
from typing import Any

from bpekit import training
from bpekit.distributed.count import count_pretokens, count_units, count_with_stats
from bpekit.distributed.dataset import encode_dataset
from bpekit.options import DistributedOptions, ReadOptions, RunOptions

__all__ = ["count_pretokens", "count_units", "count_with_stats", "encode_dataset", "train_bpe"]

WordCounts = training.WordCounts


def train_bpe(
    inputs: Any,
    vocab_size: int,
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
