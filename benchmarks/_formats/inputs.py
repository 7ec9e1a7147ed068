"""The inputs ``count_pretokens`` is given (each file of ``files``, a list of the
documents, a generator that reads them), the sources timed alone (zstd, pyarrow, the
generator), and the timings of them all, interleaved round by round."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import EOT, MiB, read_through, rotated
from _formats import THREADS
from _formats.files import DOC_SIZE, OVERHEAD_SIZES, read_documents


@dataclass(frozen=True)
class Input:
    key: str  # the name in the results and on the command line of the memory worker
    label: str
    file: str  # the file it reads (the list and the generator: the documents' text file)
    kind: str  # "file" | "list" | "generator"


INPUTS = [
    Input("text", "plain text (`<|endoftext|>` between documents)", "en.docs.txt", "file"),
    Input("jsonl", "JSONL", "en.jsonl", "file"),
    Input("txt.zst", "plain text, zstd", "en.txt.zst", "file"),
    Input("jsonl.zst", "JSONL, zstd", "en.jsonl.zst", "file"),
    Input("parquet", "Parquet, zstd pages", "en.parquet", "file"),
    Input("snappy.parquet", "Parquet, snappy pages", "en.snappy.parquet", "file"),
    Input("list", "list of str, in memory", "en.docs.txt", "list"),
    Input("generator", "generator of str, reading en.docs.txt", "en.docs.txt", "generator"),
]
BY_KEY = {i.key: i for i in INPUTS}
# Inputs whose source is timed alone too: (the input counted without that source, what
# the source alone is). "over source alone + counting" compares with their sum.
ALONE = {
    "txt.zst": ("text", "zstd decompression alone (en.txt.zst, streamed to nothing)"),
    "jsonl.zst": ("jsonl", "zstd decompression alone (en.jsonl.zst, streamed to nothing)"),
    "parquet": ("text", "pyarrow alone (en.parquet: its text column in batches of ~4 MB)"),
    "snappy.parquet": ("text", "pyarrow alone (en.snappy.parquet: the same)"),
    "generator": ("text", "the generator alone (Python reading en.docs.txt, drained)"),
}
# Text per batch of a Parquet file read alone, as bpekit reads it (bpekit._arrow.BATCH_BYTES).
PARQUET_BATCH_BYTES = 4 << 20


Inputs = list[str] | Iterator[str]


def make_inputs(bench: Path, inp: Input, copies: int = 1) -> Inputs:
    """What ``count_pretokens`` gets for ``inp``, the corpus ``copies`` times over.
    A list is made here (untimed); a generator reads as it is pulled."""
    path = bench / inp.file
    if inp.kind == "file":
        return [str(path)] * copies
    if inp.kind == "list":  # a list of str is a list of paths: documents go as an iterator
        return iter([d for _ in range(copies) for d in read_documents(path)])
    return (d for _ in range(copies) for d in read_documents(path))


def count(inputs: Inputs, threads: int) -> tuple[float, Any]:
    """One ``count_pretokens`` call: its seconds and its counts."""
    import bpekit

    t = time.perf_counter()
    counts = bpekit.count_pretokens(inputs, [EOT], num_threads=threads)
    return time.perf_counter() - t, counts


def alone(bench: Path, key: str) -> float:
    """Seconds of the source of ``key`` (one of ``ALONE``) alone: the zstd file
    decompressed with ``zstandard``, streamed, to nothing; the Parquet file's text column
    read by pyarrow, a row group at a time in batches of ~4 MB; the generator drained."""
    import pyarrow.parquet as pq
    import zstandard

    t = time.perf_counter()
    if key == "generator":
        for _ in make_inputs(bench, BY_KEY[key]):
            pass
    elif key.endswith("parquet"):
        with pq.ParquetFile(bench / BY_KEY[key].file) as pf:
            for group in range(pf.metadata.num_row_groups):
                rg = pf.metadata.row_group(group)
                rows = max(64, PARQUET_BATCH_BYTES * rg.num_rows // max(rg.total_byte_size, 1))
                for batch in pf.iter_batches(batch_size=rows, row_groups=[group], columns=["text"]):
                    batch.column(0).buffers()
    else:
        with open(bench / BY_KEY[key].file, "rb") as f, zstandard.ZstdDecompressor().stream_reader(f) as r:
            while r.read(MiB):
                pass
    return time.perf_counter() - t


Job = tuple[str, str, int]  # (kind, key, threads)


def timed_rounds(bench: Path, stamp: dict[str, Any], rounds: int) -> tuple[dict[Job, list[float]], set[str]]:
    """``{(job, key, threads): [seconds per round]}`` for every job, interleaved (each
    thread count's jobs in an order rotated round by round), and the keys of the jobs
    whose counts differ from those of their plain-text file (checked in the first round,
    untimed)."""
    others = [label for label, (target, _) in OVERHEAD_SIZES.items() if target != DOC_SIZE]
    jobs_by_threads = {
        threads: [("count", inp.key, threads) for inp in INPUTS]
        + [(kind, label, threads) for label in others for kind in ("count-text", "count-list")]
        for threads in THREADS
    }
    alone_jobs = [("alone", key, 1) for key in ALONE]
    times: dict[Job, list[float]] = {job: [] for job in alone_jobs}
    times.update({job: [] for jobs in jobs_by_threads.values() for job in jobs})
    # Warm-up: the page cache (every file read once), each thread count's pool, and the
    # counts every job's are checked against in the first round.
    for name in stamp["files"]:
        read_through(bench / name)
    for threads in THREADS:
        count([str(bench / "en.docs.txt")], threads)
    expected = {
        label: count([str(bench / name)], 1)[1].to_dict() for label, (_, name) in OVERHEAD_SIZES.items()
    }
    differ: set[str] = set()
    for r in range(rounds):
        t0 = time.perf_counter()
        jobs = alone_jobs + [job for threads in THREADS for job in rotated(jobs_by_threads[threads], r)]
        for kind, key, threads in jobs:
            if kind == "alone":
                seconds = alone(bench, key)
            else:
                if kind == "count":
                    inputs = make_inputs(bench, BY_KEY[key])
                else:
                    path = bench / OVERHEAD_SIZES[key][1]
                    inputs = [str(path)] if kind == "count-text" else iter(list(read_documents(path)))
                gc.collect()
                seconds, counts = count(inputs, threads)
                del inputs
                if r == 0 and counts.to_dict() != expected["5 KB" if kind == "count" else key]:
                    differ.add(key if kind != "count-list" else f"list:{key}")
                del counts
            times[(kind, key, threads)].append(seconds)
        if r == 0:
            del expected
        print(f"  round {r + 1}/{rounds}: {time.perf_counter() - t0:.1f} s", flush=True)
    return times, differ
