"""Counting pre-tokens from each input format: the same documents as plain text, JSONL,
zstd, Parquet and Python iterables, against plain text in the same run.

    python benchmarks/formats_compare.py [--rounds 5] [--no-memory]

The ``en`` corpus (``benchmarks/corpora.py``), its own separators made blank lines, is
cut into documents of ~5 KB (at a blank line where one is near, else at a line end;
never inside a line) and written into the bench folder (``$BPEKIT_BENCH_DIR``, default /tmp/bpekit_bench) as:

  en.docs.txt          the documents joined by ``<|endoftext|>`` (the plain-text baseline)
  en.jsonl             ``{"text": ...}`` per document (``json.dumps``, ASCII escapes)
  en.txt.zst           en.docs.txt, zstd level 3 (python ``zstandard``)
  en.jsonl.zst         en.jsonl, zstd level 3
  en.parquet           one string column ``text``, zstd pages, row groups of 10,000 rows
  en.snappy.parquet    the same with snappy pages
  en.docs500.txt       the same text in documents of ~500 B (for the iterables' overhead)
  en.docs50k.txt       ... and of ~50 KB

and ``en.formats.json``, which says what they were built from: they are rebuilt only
when a file is missing or the corpus changed.

Times: every workload once per round, the workloads interleaved, ``--rounds`` rounds, in
this process (the thread pool and the page cache warm, as they are in a long job); the
figure is the median over the rounds, and each ratio to plain text is the median of the
ratios taken within one round. ``count_pretokens`` (gpt2 pattern, ``<|endoftext|>`` a
special token) on 1 and 2 threads of: each file above, a list of the documents held in
memory (new ``str`` objects for every call, as new documents are: CPython keeps a
``str``'s UTF-8 once asked for it) and a generator that reads them from en.docs.txt;
and, alone, the zstd decompression (``zstandard``, streamed to nothing), pyarrow
reading the Parquet column, and the generator (drained), one thread.
MB/s counts the documents' text (their UTF-8 bytes, without separators or JSON syntax),
the same for every format, so the figures compare.

Memory: each input counted (2 threads) in its own process, for the corpus and for it
2, 4 and 8 times over (each file named so many times; the list and the generator read
the documents so many times): the process's peak RSS, the call's own peak RSS above
the RSS it started at (the peak reset through /proc/self/clear_refs; pages of mapped
files count), its peak anonymous memory above the start (heap alone, sampled every
2 ms), and how much each grows per corpus more (a least-squares slope).

Writes ``--results``/formats.json (default benchmarks/results); ``report.py`` makes the
tables. ``PYTHONPATH=DIR`` times the bpekit in DIR (the memory workers inherit it).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import re
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, command, corpus_path, run_worker, tool_version, write_result

EOT = "<|endoftext|>"
SOURCE_SEP = b"\n<|endoftext|>\n"  # between the documents of corpora.py's en.txt
DOC_SIZE = 5_000
OVERHEAD_SIZES = {"500 B": (500, "en.docs500.txt"), "5 KB": (DOC_SIZE, "en.docs.txt")}
OVERHEAD_SIZES["50 KB"] = (50_000, "en.docs50k.txt")
ROW_GROUP_ROWS = 10_000
ZSTD_LEVEL = 3
STAMP = "en.formats.json"
STAMP_VERSION = 3
THREADS = (1, 2)
MEMORY_THREADS = 2
# The memory runs: the corpus this many times over.
COPIES = (1, 2, 4, 8)
# Memory is independent of input size when the call's peak grows by less than this
# share of the input added (the corpus's text is CORPUS_MIB): buffers and allocators
# vary by tens of MiB from run to run at any size, where memory that holds the input
# grows by the input's size.
FLAT_SHARE = 0.05
MiB = 1 << 20


# --- The corpus in documents ----------------------------------------------------------


def cut(text: bytes, target: int) -> Iterator[bytes]:
    """``text`` in documents of about ``target`` bytes that together are ``text``: each
    ends at the blank line nearest its ``target``-th byte within 80-120% of ``target``,
    else at the end of the line that holds that byte; never inside a line."""
    start, n = 0, len(text)
    while start < n:
        mid, lo, hi = start + target, start + target * 4 // 5, start + target * 6 // 5
        if n <= hi:
            yield text[start:]
            return
        before, after = text.rfind(b"\n\n", lo, mid), text.find(b"\n\n", mid, hi)
        if before != -1 or after != -1:
            end = 2 + min((i for i in (before, after) if i != -1), key=lambda i: abs(i - mid))
        else:
            end = text.find(b"\n", mid - 1)
            end = n if end == -1 else end + 1
        yield text[start:end]
        start = end


def documents(en: bytes, target: int) -> list[bytes]:
    """en.txt in documents of about ``target`` bytes: its own documents' separators become
    blank lines (most of its documents are shorter than 5 KB: C4 pages, news items), then
    the text is cut by ``cut``."""
    return list(cut(en.replace(SOURCE_SEP, b"\n\n"), target))


def read_documents(path: Path, block: int = 1 << 16) -> Iterator[str]:
    """The documents of a file that joins them by ``<|endoftext|>``, read ``block``
    characters at a time: every one a new ``str``."""
    with open(path, encoding="utf-8", newline="") as f:
        rest = ""
        while chunk := f.read(block):
            parts = (rest + chunk).split(EOT)
            rest = parts.pop()
            yield from parts
        yield rest


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(16 * MiB):
            h.update(chunk)
    return h.hexdigest()


def _write(path: Path, content: bytes | Callable[[Path], None]) -> None:
    """Writes ``content`` (bytes, or a function that writes the file it is given) under a
    temporary name, then renames it, so a file there is whole."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        content(tmp)
    tmp.replace(path)


def build(bench: Path, en_path: Path, quiet: bool = False) -> dict:
    """Writes the files of the module's docstring into ``bench`` unless ``en.formats.json``
    says they were made from these bytes of ``en_path`` and they are all there; returns
    that stamp: the documents' count and text bytes per size, each file's size."""
    stamp_path = bench / STAMP
    source = {"name": en_path.name, "bytes": en_path.stat().st_size, "sha256": _sha256(en_path)}
    try:
        stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
        if (
            stamp.get("version") == STAMP_VERSION
            and stamp.get("source") == source
            and all((bench / name).stat().st_size == size for name, size in stamp["files"].items())
        ):
            return stamp
    except (OSError, ValueError, KeyError):
        pass
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    t0 = time.perf_counter()
    if not quiet:
        print(f"building the format files from {en_path} into {bench} ...", flush=True)
    en = en_path.read_bytes()
    docs_info = {}
    for label, (target, name) in OVERHEAD_SIZES.items():
        docs = documents(en, target)
        _write(bench / name, EOT.encode().join(docs))
        docs_info[label] = {"count": len(docs), "bytes": sum(map(len, docs)), "file": name}
        if target == DOC_SIZE:
            base = docs
    texts = [d.decode("utf-8") for d in base]
    del en
    jsonl = "".join(json.dumps({"text": t}) + "\n" for t in texts).encode("ascii")
    _write(bench / "en.jsonl", jsonl)
    cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    _write(bench / "en.jsonl.zst", cctx.compress(jsonl))
    _write(bench / "en.txt.zst", cctx.compress((bench / "en.docs.txt").read_bytes()))
    del jsonl
    table = pa.table({"text": pa.array(texts, pa.string())})
    for name, codec in (("en.parquet", "zstd"), ("en.snappy.parquet", "snappy")):
        _write(
            bench / name,
            lambda p, c=codec: pq.write_table(table, p, compression=c, row_group_size=ROW_GROUP_ROWS),
        )
    names = [info["file"] for info in docs_info.values()]
    names += ["en.jsonl", "en.txt.zst", "en.jsonl.zst", "en.parquet", "en.snappy.parquet"]
    stamp = {
        "version": STAMP_VERSION,
        "source": source,
        "documents": docs_info,
        "row_group_rows": ROW_GROUP_ROWS,
        "zstd_level": ZSTD_LEVEL,
        "files": {name: (bench / name).stat().st_size for name in names},
    }
    _write(stamp_path, lambda p: p.write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8"))
    if not quiet:
        for name, size in stamp["files"].items():
            print(f"  {name:20s} {size:>13,d} bytes")
        print(f"  built in {time.perf_counter() - t0:.0f} s", flush=True)
    return stamp


# --- The workloads --------------------------------------------------------------------


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


def make_inputs(bench: Path, inp: Input, copies: int = 1):
    """What ``count_pretokens`` gets for ``inp``, the corpus ``copies`` times over.
    A list is made here (untimed); a generator reads as it is pulled."""
    path = bench / inp.file
    if inp.kind == "file":
        return [str(path)] * copies
    if inp.kind == "list":  # a list of str is a list of paths: documents go as an iterator
        return iter([d for _ in range(copies) for d in read_documents(path)])
    return (d for _ in range(copies) for d in read_documents(path))


def count(inputs, threads: int):
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


def _rotated(items: list, r: int) -> list:
    """``items`` starting at the ``r``-th (round ``r``'s order): no input is always the
    first after a change of thread count or after another given input."""
    r %= len(items)
    return items[r:] + items[:r]


def timed_rounds(bench: Path, stamp: dict, rounds: int) -> tuple[dict[tuple, list[float]], set[str]]:
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
    times: dict[tuple, list[float]] = {job: [] for job in alone_jobs}
    times.update({job: [] for jobs in jobs_by_threads.values() for job in jobs})
    # Warm-up: the page cache (every file read once), each thread count's pool, and the
    # counts every job's are checked against in the first round.
    for name in stamp["files"]:
        with open(bench / name, "rb") as f:
            while f.read(16 * MiB):
                pass
    for threads in THREADS:
        count([str(bench / "en.docs.txt")], threads)
    expected = {
        label: count([str(bench / name)], 1)[1].to_dict() for label, (_, name) in OVERHEAD_SIZES.items()
    }
    differ: set[str] = set()
    for r in range(rounds):
        t0 = time.perf_counter()
        jobs = alone_jobs + [job for threads in THREADS for job in _rotated(jobs_by_threads[threads], r)]
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


def ratios(num: list[float], den: list[float]) -> float:
    """The median over the rounds of ``num[r] / den[r]``."""
    return statistics.median(a / b for a, b in zip(num, den, strict=True))


def _time_fields(seconds: list[float]) -> dict:
    return {
        "seconds": statistics.median(seconds),
        "seconds_min": min(seconds),
        "seconds_max": max(seconds),
        "runs": len(seconds),
    }


def throughput_table(times, differ, stamp, bench: Path) -> tuple[dict, dict]:
    """The main table and the figures the targets are judged on."""
    mb = stamp["documents"]["5 KB"]["bytes"] / 1e6
    rows, figures = [], {}
    for key, (_, label) in ALONE.items():
        t = times[("alone", key, 1)]
        rows.append(
            {
                "input": label,
                "file": BY_KEY[key].file,
                "file_mb": stamp["files"][BY_KEY[key].file] / 1e6,
                "threads": 1,
                **_time_fields(t),
                "throughput": mb / statistics.median(t),
                "note": "no counting",
            }
        )
    for threads in THREADS:
        text = times[("count", "text", threads)]
        for inp in INPUTS:
            t = times[("count", inp.key, threads)]
            over = None
            if inp.key in ALONE:
                plain, source = times[("count", ALONE[inp.key][0], threads)], times[("alone", inp.key, 1)]
                over = statistics.median(a / (b + c) - 1 for a, b, c in zip(t, plain, source, strict=True))
                figures[f"over:{inp.key}:{threads}"] = over
            vs_text = ratios(text, t)
            figures[f"vs_text:{inp.key}:{threads}"] = vs_text
            notes = []
            if inp.key in differ:
                notes.append("counts differ from plain text's!")
            if inp.key == "list":
                notes.append("list made before each call, untimed")
            rows.append(
                {
                    "input": inp.label,
                    "file": None if inp.kind == "list" else inp.file,
                    "file_mb": stamp["files"].get(inp.file, 0) / 1e6 if inp.kind == "file" else None,
                    "threads": threads,
                    **_time_fields(t),
                    "throughput": mb / statistics.median(t),
                    "vs_text": vs_text,
                    "over": over,
                    "note": "; ".join(notes),
                }
            )
    # Scaling: 2 threads over 1 for each input, beside text's.
    for inp in INPUTS:
        figures[f"scaling:{inp.key}"] = ratios(times[("count", inp.key, 1)], times[("count", inp.key, 2)])
    table = {
        "heading": "Throughput by input",
        "text": (
            "`count_pretokens` of the same documents in each form. MB/s: document text per second; "
            "vs text: throughput over plain text's in the same round (median of the rounds' ratios); "
            "over source alone + counting: the input's time over the sum of its source alone (the "
            "zstd decompression; pyarrow reading the column; the Python generator drained) and the "
            "counting of the plain file "
            "(JSONL for `.jsonl.zst`), in the same round, less one: its cost beyond the two parts."
        ),
        "columns": [
            {"key": "input", "name": "input", "kind": "text"},
            {"key": "file", "name": "file", "kind": "code"},
            {"key": "file_mb", "name": "file MB", "kind": "num"},
            {"key": "threads", "name": "threads", "kind": "int"},
            {"key": "seconds", "name": "time", "kind": "time"},
            {"key": "throughput", "name": "MB/s", "kind": "num"},
            {"key": "vs_text", "name": "vs text", "kind": "pct"},
            {"key": "over", "name": "over source alone + counting", "kind": "signed_pct"},
            {"key": "note", "name": "notes", "kind": "text"},
        ],
        "rows": rows,
    }
    return table, figures


def overhead_table(times, differ, stamp) -> tuple[dict, dict]:
    rows, figures = [], {}
    for threads in THREADS:
        for label, (target, _) in OVERHEAD_SIZES.items():
            info = stamp["documents"][label]
            mb = info["bytes"] / 1e6
            if target == DOC_SIZE:
                text, lst = times[("count", "text", threads)], times[("count", "list", threads)]
            else:
                text, lst = times[("count-text", label, threads)], times[("count-list", label, threads)]
            us = statistics.median((b - a) / info["count"] * 1e6 for a, b in zip(text, lst, strict=True))
            figures[f"us_per_doc:{label}:{threads}"] = us
            rows.append(
                {
                    "size": label,
                    "documents": info["count"],
                    "mean_bytes": info["bytes"] / info["count"],
                    "threads": threads,
                    "text_mbps": mb / statistics.median(text),
                    "list_mbps": mb / statistics.median(lst),
                    "vs_text": ratios(text, lst),
                    "us_per_doc": us,
                    "runs": len(lst),
                    "note": "counts differ from plain text's!" if differ & {label, f"list:{label}"} else "",
                }
            )
    table = {
        "heading": "Per-document cost of an iterable",
        "text": (
            "The same text cut into documents of about 500 B, 5 KB and 50 KB, counted from a list of "
            "`str` (new objects for every call) and from a plain-text file of the same documents joined by "
            "`<|endoftext|>`, in the same rounds. µs per document: (list time - text time) / documents, "
            "median over the rounds."
        ),
        "columns": [
            {"key": "size", "name": "documents of", "kind": "text"},
            {"key": "documents", "name": "documents", "kind": "int"},
            {"key": "mean_bytes", "name": "mean bytes", "kind": "int"},
            {"key": "threads", "name": "threads", "kind": "int"},
            {"key": "text_mbps", "name": "text MB/s", "kind": "num"},
            {"key": "list_mbps", "name": "list MB/s", "kind": "num"},
            {"key": "vs_text", "name": "list vs text", "kind": "pct"},
            {"key": "us_per_doc", "name": "µs per document beyond text", "kind": "num"},
            {"key": "note", "name": "notes", "kind": "text"},
        ],
        "rows": rows,
    }
    return table, figures


# --- Memory ---------------------------------------------------------------------------


STATUS_KEYS = ("VmHWM", "VmRSS", "RssAnon")


def _status_mib() -> dict[str, float]:
    with open("/proc/self/status") as f:
        status = f.read()
    return {k: int(re.search(rf"^{k}:\s+(\d+) kB", status, re.M).group(1)) / 1024 for k in STATUS_KEYS}


class AnonSampler(threading.Thread):
    """The largest anonymous RSS (heap, not the pages of mapped files) seen every
    ``period`` seconds while it runs. The counting call releases the GIL, so it samples
    during the call."""

    def __init__(self, period: float = 0.002) -> None:
        super().__init__(daemon=True)
        self.period, self.peak, self.done = period, 0.0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, _status_mib()["RssAnon"])
            self.done.wait(self.period)

    def stop(self) -> float:
        self.done.set()
        self.join()
        return max(self.peak, _status_mib()["RssAnon"])


def memory_worker(bench: Path, key: str, copies: int, threads: int) -> dict:
    """Counts ``key`` ``copies`` times over in this fresh process: its peak RSS, the
    RSS before the call, the call's own peak RSS (the peak reset just before it) and
    its peak anonymous RSS (sampled), both above where the call started."""
    import bpekit  # noqa: F401  (imported before the RSS before the call is read)

    if key.endswith("parquet"):
        import pyarrow.parquet  # noqa: F401  (its libraries are no part of what reading holds)
    inputs = make_inputs(bench, BY_KEY[key], copies)
    gc.collect()
    setup = _status_mib()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        reset = True
    except OSError:
        reset = False
    sampler = AnonSampler()
    sampler.start()
    seconds, counts = count(inputs, threads)
    anon = sampler.stop()
    after = _status_mib()
    return {
        "seconds": seconds,
        "rss_before_mib": setup["VmRSS"],
        "peak_rss_mib": max(setup["VmHWM"], after["VmHWM"]),
        "call_peak_mib": after["VmHWM"] - setup["VmRSS"] if reset else None,
        "call_anon_mib": anon - setup["RssAnon"],
        "unique": len(counts),
    }


def _slope(xs: tuple[int, ...], ys: list[float]) -> float:
    """The least-squares slope of ``ys`` over ``xs``."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def memory_table(bench: Path, corpus_mib: float) -> tuple[dict, dict]:
    rows, figures = [], {"corpus_mib": corpus_mib}
    script = Path(__file__)
    for inp in INPUTS:
        m = {}
        for copies in COPIES:
            m[copies] = run_worker(script, ["mem", str(bench), inp.key, str(copies), str(MEMORY_THREADS)])
            if m[copies] is None:
                break
            r = m[copies]
            call = "-" if r["call_peak_mib"] is None else f"{r['call_peak_mib']:.0f}"
            print(
                f"  memory {inp.key:15s} {copies}x: before {r['rss_before_mib']:.0f} MiB, peak "
                f"{r['peak_rss_mib']:.0f} MiB, call {call} MiB, call anonymous {r['call_anon_mib']:.0f} MiB",
                flush=True,
            )
        if len(m) < len(COPIES) or any(v is None for v in m.values()):
            continue
        row = {"input": inp.label, "before": m[1]["rss_before_mib"], "peak": m[1]["peak_rss_mib"]}
        for name, key in (("call", "call_peak_mib"), ("anon", "call_anon_mib")):
            values = [m[c][key] for c in COPIES]
            if any(v is None for v in values):
                continue
            row[name] = dict(zip(map(str, COPIES), values, strict=True))
            row[f"{name}_text"] = " / ".join(f"{v:,.0f}" for v in values) + " MiB"
            row[f"{name}_slope"] = _slope(COPIES, values)
            figures[f"{name}_slope:{inp.key}"] = row[f"{name}_slope"]
        notes = []
        if inp.kind == "list":
            notes.append(
                f"the list is in before; at {COPIES[-1]}x it is {m[COPIES[-1]]['rss_before_mib']:,.0f} MiB"
            )
        rows.append({**row, "note": "; ".join(notes)})
    sizes = " / ".join(f"{c}x" for c in COPIES)
    table = {
        "heading": "Memory",
        "text": (
            f"Each input counted on {MEMORY_THREADS} threads in a fresh process, for the corpus (1x) and "
            f"for it {', '.join(map(str, COPIES[1:]))} times over (each file named so many times; "
            "the list and the generator read the documents so many times). Before: the RSS when the "
            "call starts (the interpreter, bpekit, pyarrow for Parquet, the list), 1x; peak: the "
            "process's peak RSS, 1x; call: the call's own peak RSS above its start (the peak reset "
            "through /proc/self/clear_refs before the call), pages of mapped files included; "
            "anonymous: the same for anonymous memory alone (heap, no file pages), sampled every 2 ms; "
            f"per 1x more: the least-squares slope over {sizes}, in MiB per 1x "
            f"({corpus_mib:.0f} MiB of text) more input. "
            "A repeated corpus adds no new pre-tokens, so the counts are the same size at every size: "
            "what grows is what reading holds."
        ),
        "columns": [
            {"key": "input", "name": "input", "kind": "text"},
            {"key": "before", "name": "before", "kind": "mib"},
            {"key": "peak", "name": "peak", "kind": "mib"},
            {"key": "call_text", "name": f"call, {sizes}", "kind": "text"},
            {"key": "call_slope", "name": "per 1x more", "kind": "signed_mib"},
            {"key": "anon_text", "name": f"anonymous, {sizes}", "kind": "text"},
            {"key": "anon_slope", "name": "per 1x more", "kind": "signed_mib"},
            {"key": "note", "name": "notes", "kind": "text"},
        ],
        "rows": rows,
    }
    return table, figures


# --- The input-format targets ---------------------------------------------------------


def targets_table(figures: dict) -> dict:
    """Each input-format target against this run's figures (missing figures: "-")."""
    rows = []

    def add(target: str, measured: str | None, met: bool) -> None:
        rows.append(
            {"target": target, "measured": measured or "-", "met": "-" if not measured else _yes(met)}
        )

    def share(target: str, key: str, least: float) -> None:
        v = figures.get(key)
        add(target, None if v is None else f"{v:.0%}", v is not None and v >= least)

    share("JSONL >= 70% of plain text, 1 thread", "vs_text:jsonl:1", 0.70)
    s, st = figures.get("scaling:jsonl"), figures.get("scaling:text")
    if s and st:
        add(
            "JSONL scales with threads as text does",
            f"2 threads / 1: JSONL {s:.2f}x, text {st:.2f}x",
            s >= 0.9 * st,
        )
    for key in ("txt.zst", "jsonl.zst"):
        x = figures.get(f"over:{key}:1")
        measured = None if x is None else f"{x:+.0%}"
        add(
            f"`{BY_KEY[key].file}` <= decompression + counting + 10%, 1 thread",
            measured,
            x is not None and x <= 0.10,
        )
    for key in ("parquet", "snappy.parquet"):
        share(f"{BY_KEY[key].label} >= 60% of plain text, 1 thread", f"vs_text:{key}:1", 0.60)
    share("list of ~5 KB `str` >= 70% of plain text, 1 thread", "vs_text:list:1", 0.70)
    share("generator of ~5 KB `str` >= 70% of plain text, 1 thread", "vs_text:generator:1", 0.70)
    limit = FLAT_SHARE * figures.get("corpus_mib", 0)
    for name, prefix in (("RSS", "call_slope"), ("anonymous memory", "anon_slope")):
        slopes = {
            k: figures[f"{prefix}:{k}"]
            for k, inp in BY_KEY.items()
            if inp.kind != "list" and figures.get(f"{prefix}:{k}") is not None
        }
        if slopes:
            over = [k for k in slopes if slopes[k] > limit]
            parts = [f"{BY_KEY[k].label}: {slopes[k]:+.0f} MiB" for k in over]
            flat = [v for k, v in slopes.items() if k not in over]
            if flat:
                parts.append(f"{'the others' if over else 'all'} at most {max(flat):+.0f} MiB")
            add(
                f"memory independent of input size: the call's peak {name} grows by less than "
                f"{FLAT_SHARE:.0%} of the input added ({limit:.1f} MiB per 1x more; every input "
                "but the list)",
                "; ".join(parts),
                not over,
            )
    return {
        "heading": "Targets: input formats",
        "text": "Each target against this run's figures above.",
        "columns": [
            {"key": "target", "name": "target", "kind": "text"},
            {"key": "measured", "name": "measured", "kind": "text"},
            {"key": "met", "name": "met", "kind": "text"},
        ],
        "rows": rows,
    }


def _yes(met: bool) -> str:
    return "yes" if met else "no"


# --- Main -----------------------------------------------------------------------------


def _version(module: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return "?"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, bench, key, copies, threads = sys.argv[2:]
        print(json.dumps(memory_worker(Path(bench), key, int(copies), int(threads))))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5, help="rounds of the interleaved timings (default 5)")
    p.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    p.add_argument("--data", default=None, help="data folder (default: $BPEKIT_DATA or ../shared/data)")
    p.add_argument("--results", type=Path, default=RESULTS, help="folder for the result files")
    args = p.parse_args()

    en_path = corpus_path("en", data=args.data)
    bench = en_path.parent
    stamp = build(bench, en_path)
    docs = stamp["documents"]["5 KB"]
    print(
        f"{docs['count']:,} documents, {docs['bytes'] / 1e6:,.1f} MB of text; {args.rounds} rounds, "
        f"{os.cpu_count()} cores",
        flush=True,
    )
    t0 = time.perf_counter()
    times, differ = timed_rounds(bench, stamp, args.rounds)
    main_table, figures = throughput_table(times, differ, stamp, bench)
    over_table, over_figures = overhead_table(times, differ, stamp)
    figures.update(over_figures)
    tables = [main_table, over_table]
    if not args.no_memory:
        mem_table, mem_figures = memory_table(bench, docs["bytes"] / MiB)
        figures.update(mem_figures)
        tables.append(mem_table)
    tables.append(targets_table(figures))
    for row in main_table["rows"]:
        vs = "" if row.get("vs_text") is None else f"{row['vs_text']:5.0%}"
        print(f"  {row['input'][:44]:44s} {row['threads']}t {row['throughput']:7.1f} MB/s  {vs}")
    print(f"  timed in {time.perf_counter() - t0:.0f} s")

    cmd_args = ["--rounds", str(args.rounds)] + (["--no-memory"] if args.no_memory else [])
    write_result(
        args.results,
        "formats",
        title="Counting from each input format: en in documents of ~5 KB",
        description=(
            f"`count_pretokens` (gpt2 pattern, `<|endoftext|>` special) of the `en` corpus cut into "
            f"{docs['count']:,} documents of ~5 KB (at blank lines or line ends), as plain text joined by "
            f"`<|endoftext|>`, JSONL, zstd (level {ZSTD_LEVEL}), Parquet (row groups of "
            f"{ROW_GROUP_ROWS:,} rows) and Python iterables, all in one process, the inputs interleaved, "
            "round by round; the time is the median over the rounds (min-max beside it). MB/s counts "
            f"the documents' text ({docs['bytes']:,} bytes, no separators, no JSON), the same for every "
            "input. The counts of every input are checked equal to plain text's. Built by "
            "`benchmarks/formats_compare.py` into the bench folder."
        ),
        command=command("formats_compare.py", cmd_args),
        corpus={"name": "en", "bytes": docs["bytes"]},
        unit="MB/s",
        versions={
            "bpekit": tool_version("bpekit"),
            "zstandard": _version("zstandard"),
            "pyarrow": _version("pyarrow"),
        },
        runs=args.rounds,
        tables=tables,
        rows=[],
    )


if __name__ == "__main__":
    main()
