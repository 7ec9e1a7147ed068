"""Writing a training-ready token dataset: ``encode_dataset``'s shards against
the single-file ``encode_file``, its memory at 1, 2 and 4 times the input, resuming after
a kill, and the nanoGPT / llm.c ``dev/data`` style pipelines of tiktoken and HF tokenizers.

    python benchmarks/dataset_compare.py [--rounds 3] [--parts throughput memory resume peers]
    python benchmarks/dataset_compare.py --quick        # a smoke test: slices, 1 round

Corpora, tokenizer gpt2 throughout:

  en       the ``en`` corpus (``benchmarks/corpora.py``, ~116 MB) as ``en.jsonl``: its
           23,161 documents of ~5 KB, one JSON record each (built by
           ``formats_compare.py`` into the bench folder, ``$BPEKIT_BENCH_DIR``, default
           /tmp/bpekit_bench); bpekit writes ``<|endoftext|>`` after each record.
  owt-1G   ``owt-1G.txt``: 1 GB of OpenWebText-like text from
           ``../shared/bench/make_big.py owt 1G`` (built into the bench folder when
           missing, ~35 s), documents joined by ``<|endoftext|>`` in the text.

MB/s counts the input text: en's documents' UTF-8 (no JSON syntax), owt-1G's file bytes.
``--quick`` takes the first ~4 MB of en.jsonl and ~16 MB of owt-1G.txt (cut at a document
boundary, written to the bench folder's ``quick/``), shards of 2**18 tokens instead of
2**24 (so there are several), one round, and writes its result file to the bench
folder's ``quick-results/`` unless ``--results`` is given. Outputs are written into
the bench folder's ``dataset-out/`` (the same disk as the corpora) and removed.

Throughput: in this process, after a warm-up (each corpus read, and written once per
thread count, untimed: the page cache, the thread pools and the tokenizer's caches,
which bpekit keeps across calls), ``--rounds`` rounds; in each, for each corpus and
thread count (1, 2), every writer once, in an order rotated round by round, each output
removed before its run (a folder holding a finished dataset is returned without work)
and the page cache synced after the removal: ``bpekit.encode_file(inputs, "tokens.npy",
tok, num_threads=n)`` (the single-file baseline) and ``bpekit.encode_dataset(inputs,
out_dir, tok, shard_tokens=2**24, num_threads=n)`` with ``shard_format`` ``"npy"``,
``"bin"`` and ``"llmc"``, and npy with ``val_fraction=0.01``. The time is the call; the
figure the median over the rounds; "vs single file" the median over the rounds of the
single file's time over the writer's in the same round (100%: as fast; the issue's
target: at least 95%). In the first round the ids are checked: the concatenation of
the train shards (read back with ``np.load``, ``np.memmap`` and llm.c's header layout)
equals ``encode_file``'s array; with a validation split, train + val hold as many tokens.

Memory: ``encode_file`` and ``encode_dataset`` (npy, 2 threads) each in a fresh process,
on the corpus named 1, 2 and 4 times (a list of the same path repeated): the process's
peak RSS (VmHWM), the call's own peak RSS above the RSS it started at (the peak reset
through /proc/self/clear_refs), its peak anonymous memory above the start (sampled
every 2 ms), and how much each grows per 1x more input (least-squares slope), as
``formats_compare.py`` measures them. Memory independent of input size: the slope is
under 5% of the corpus's size.

Resume: per round and corpus, ``encode_dataset(path, out_dir, "gpt2", shard_tokens=2**24,
num_threads=2)`` run to the end in a fresh process (the full run: its call's time, its
shards the reference); then the same in another folder, killed with SIGKILL as soon as
its ``manifest.json`` (rewritten after each finished shard, ``"complete": false``) lists
at least half of the full run's shards; then the same call again (``resume=True`` is the
default), timed; all three watched alike (the manifest and the shard files polled
every 2 ms). Reported: the rerun's time over the full run's (the issue: about 0.5),
beside the share of tokens the killed run's manifest did not list (what is left to
do), and whether every shard and index file of the resumed dataset has the full run's
sha256.
A bpekit that cannot resume yet is reported as such, and the script exits with status 1
after writing its results.

Peers, en only: from en.jsonl on disk to a ``.bin`` of uint16 ids with
``<|endoftext|>`` after each document, each configuration in a fresh process that loads
its tokenizer first (untimed), the configurations interleaved round by round; the time
runs from opening en.jsonl to the file written. tiktoken (built offline from the same
rank files): ``encode_ordinary_batch`` over batches of 1,024 documents on 1 and 2
threads, ids appended to a list with the eot, a uint16 array per batch, concatenated
and written (nanoGPT's ``prepare.py``); and llm.c's ``dev/data`` way, a
``multiprocessing.Pool(2)`` ``imap`` over the documents (chunksize 16) of
``encode_ordinary`` + eot as a uint16 array per document. HF tokenizers (GPT-2 built
from ``gpt2_encoder.json`` and ``gpt2_vocab.bpe``: ``BPE`` + ``ByteLevel``)
``encode_batch`` over the same batches (threads: ``RAYON_NUM_THREADS``). bpekit:
``encode_dataset(..., shard_format="bin")`` on the file, and ``encode_batch_to_numpy``
over the same Python batches. Every row's ids are compared with bpekit's (a hash of all
ids). "vs bpekit": the row's time over ``encode_dataset``'s on as many threads (the pool:
2), median of the rounds' ratios.

Writes ``--results``/dataset.json (default benchmarks/results); ``report.py`` makes the
tables. ``PYTHONPATH=DIR`` times the bpekit in DIR (the workers inherit it).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import multiprocessing
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, RESULTS, command, corpus_path, data_dir, encodings_env, tool_version, write_result
from formats_compare import AnonSampler, _rotated, _slope, _status_mib, _time_fields, ratios
from formats_compare import build as build_formats

TOKENIZER = "gpt2"
EOT = "<|endoftext|>"
SEP = b"\n<|endoftext|>\n"  # between make_big.py's documents
SHARD_TOKENS = 2**24
QUICK_SHARD_TOKENS = 2**18
VAL_FRACTION = 0.01
THREADS = (1, 2)
MEMORY_THREADS = 2
RESUME_THREADS = 2
COPIES = (1, 2, 4)
# Memory is independent of input size when the call's peak grows by less than this
# share of the input added (as in formats_compare.py).
FLAT_SHARE = 0.05
# Dataset within this share of the single file's throughput .
WITHIN = 0.05
# The rerun after a kill is on target when it costs at most the work left plus this
# share of a full run.
RESUME_SLACK = 0.10
OWT = "owt-1G"
OWT_SIZE = "1G"
QUICK_BYTES = {"en": 4_000_000, OWT: 16_000_000}
PEER_BATCH_DOCS = 1024
POOL_CHUNKSIZE = 16  # llm.c's dev/data/fineweb.py
POLL_S = 0.002
MiB = 1 << 20
# llm.c's token files: magic -> (version, id dtype); a header of 256 int32.
LLMC = {20240520: (1, np.uint16), 20240801: (7, np.uint32)}
LLMC_HEADER_BYTES = 256 * 4
SHARD_NAME = re.compile(r"^\d+\.(npy|bin)$")


# --- The corpora ----------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    name: str  # "en" or "owt-1G"
    path: Path  # the file the writers read
    text_bytes: int  # what MB/s counts
    documents: int | None  # records (en); None for text split at its special tokens


def _jsonl_text_bytes(path: Path) -> tuple[int, int]:
    """The UTF-8 bytes of a JSONL file's ``text`` fields, and its records."""
    total = records = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                total += len(json.loads(line)["text"].encode("utf-8"))
                records += 1
    return total, records


def _write_prefix(source: Path, dest: Path, limit: int, cut_at: bytes) -> None:
    """The first ``limit`` bytes of ``source``, cut after the last ``cut_at`` in them."""
    with open(source, "rb") as f:
        head = f.read(limit)
    end = head.rfind(cut_at)
    if end == -1:
        raise SystemExit(f"{source}: no {cut_at!r} in its first {limit:,} bytes to cut a slice at")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    tmp.write_bytes(head[: end + (len(cut_at) if cut_at == b"\n" else 0)])
    tmp.replace(dest)


def owt_path(bench: Path, make_big: Path) -> Path:
    """``owt-1G.txt`` in the bench folder, made by make_big.py when missing."""
    path = bench / f"{OWT}.txt"
    if path.is_file():
        return path
    if not make_big.is_file():
        raise SystemExit(f"{path} is missing and so is {make_big} to build it: use --make-big PATH")
    print(f"building {path} with {make_big} ...", flush=True)
    t0 = time.perf_counter()
    env = dict(os.environ, BPEKIT_BENCH_DIR=str(bench))
    subprocess.run([sys.executable, str(make_big), "owt", OWT_SIZE, str(path)], check=True, env=env)
    print(f"  built in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def prepare_corpora(names: list[str], quick: bool, data: str | None, make_big: Path) -> list[Corpus]:
    en_path = corpus_path("en", data=data)
    bench = en_path.parent
    corpora = []
    for name in names:
        if name == "en":
            stamp = build_formats(bench, en_path)
            path = bench / "en.jsonl"
            if quick:
                _write_prefix(path, bench / "quick" / "en.jsonl", QUICK_BYTES["en"], b"\n")
                path = bench / "quick" / "en.jsonl"
                text_bytes, records = _jsonl_text_bytes(path)
            else:
                text_bytes, records = stamp["documents"]["5 KB"]["bytes"], stamp["documents"]["5 KB"]["count"]
            corpora.append(Corpus("en", path, text_bytes, records))
        else:
            path = owt_path(bench, make_big)
            if quick:
                _write_prefix(path, bench / "quick" / path.name, QUICK_BYTES[OWT], SEP)
                path = bench / "quick" / path.name
            corpora.append(Corpus(OWT, path, path.stat().st_size, None))
    return corpora


def _read_through(path: Path) -> None:
    """Reads ``path`` once (into the page cache)."""
    with open(path, "rb") as f:
        while f.read(16 * MiB):
            pass


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


# --- Reading the outputs back ---------------------------------------------------------


def read_shard(path: Path, shard_format: str, dtype: str) -> np.ndarray:
    """A shard's ids: ``np.load`` (npy), ``np.memmap`` (bin), llm.c's header, then the ids (llmc)."""
    if shard_format == "npy":
        return np.load(path, mmap_mode="r")
    if shard_format == "bin":
        return np.memmap(path, dtype=np.dtype(dtype), mode="r")
    header = np.fromfile(path, dtype="<i4", count=256)
    magic, version, tokens = (int(x) for x in header[:3])
    if magic not in LLMC or LLMC[magic][0] != version:
        raise ValueError(f"{path}: not an llm.c token file (magic {magic}, version {version})")
    expected = LLMC_HEADER_BYTES + tokens * np.dtype(LLMC[magic][1]).itemsize
    if path.stat().st_size != expected:
        raise ValueError(f"{path}: {path.stat().st_size:,} bytes, but its header says {expected:,}")
    return np.memmap(path, dtype=LLMC[magic][1], mode="r", offset=LLMC_HEADER_BYTES, shape=(tokens,))


def split_arrays(root: Path, manifest: dict, split: str = "train") -> Iterator[np.ndarray]:
    """The ids of each shard of ``split``, in order."""
    for shard in manifest.get("splits", {}).get(split, {}).get("shards", []):
        yield read_shard(root / shard["file"], manifest["format"], manifest["dtype"])


class IdsHash:
    """A hash of a sequence of ids, whatever their dtype or how they are cut in arrays."""

    def __init__(self) -> None:
        self.h, self.tokens = hashlib.sha256(), 0

    def update(self, ids: np.ndarray) -> None:
        step = 1 << 22
        for i in range(0, len(ids), step):
            self.h.update(np.ascontiguousarray(ids[i : i + step], dtype="<u4").tobytes())
        self.tokens += len(ids)

    def result(self) -> tuple[int, str]:
        return self.tokens, self.h.hexdigest()[:16]


def ids_of(arrays: Iterator[np.ndarray]) -> tuple[int, str]:
    h = IdsHash()
    for a in arrays:
        h.update(a)
    return h.result()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(16 * MiB):
            h.update(block)
    return h.hexdigest()


def file_hashes(root: Path) -> dict[str, str]:
    """The sha256 of every file of a dataset folder but its manifest, by relative path."""
    return {
        str(p.relative_to(root)): _sha256(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


# --- Throughput -----------------------------------------------------------------------


@dataclass(frozen=True)
class Writer:
    key: str
    label: str
    options: dict[str, Any] | None  # encode_dataset's; None: encode_file


WRITERS = [
    Writer("file", "`encode_file` to one `.npy` (baseline)", None),
    Writer("npy", "`encode_dataset`, npy shards", {"shard_format": "npy"}),
    Writer("bin", "`encode_dataset`, bin shards", {"shard_format": "bin"}),
    Writer("llmc", "`encode_dataset`, llmc shards", {"shard_format": "llmc"}),
    Writer("val", f"`encode_dataset`, npy, `val_fraction={VAL_FRACTION}`", {"val_fraction": VAL_FRACTION}),
    Writer("nosum", "`encode_dataset`, npy, `checksums=False` (no sha256)", {"checksums": False}),
]
BY_KEY = {w.key: w for w in WRITERS}


def write(writer: Writer, inputs: list[str], out: Path, tok: Any, threads: int, shard_tokens: int) -> float:
    """One writer's call into ``out`` (removed first); its seconds."""
    import bpekit

    _remove(out)
    if writer.options is None:
        out.mkdir(parents=True)
    os.sync()  # the last output's removal is not written back during this call
    gc.collect()
    t = time.perf_counter()
    if writer.options is None:
        bpekit.encode_file(inputs, out / "tokens.npy", tok, num_threads=threads)
    else:
        bpekit.encode_dataset(
            inputs, out, tok, shard_tokens=shard_tokens, num_threads=threads, **writer.options
        )
    return time.perf_counter() - t


def check_output(writer: Writer, out: Path) -> dict:
    """What ``writer`` wrote into ``out``: tokens and ids hash of the train ids (all ids
    for the single file), the shards, and val's tokens."""
    import bpekit

    if writer.options is None:
        tokens, digest = ids_of(iter([bpekit.load_tokens(out / "tokens.npy")]))
        return {"tokens": tokens, "hash": digest}
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    tokens, digest = ids_of(split_arrays(out, manifest))
    val_tokens, _ = ids_of(split_arrays(out, manifest, "val"))
    shards = {name: len(s["shards"]) for name, s in manifest["splits"].items()}
    return {"tokens": tokens, "hash": digest, "val_tokens": val_tokens, "shards": shards}


def timed_rounds(
    corpora: list[Corpus], rounds: int, shard_tokens: int, out_root: Path
) -> tuple[dict[tuple, list[float]], dict[tuple, dict]]:
    """``{(corpus, writer, threads): [seconds per round]}``, and what each wrote in the
    first round (``check_output``)."""
    import bpekit

    tok = bpekit.get_encoding(TOKENIZER)
    out = out_root / "throughput"
    times: dict[tuple, list[float]] = {}
    checks: dict[tuple, dict] = {}
    # Warm-up: the page cache, each thread count's pool, and the tokenizer's caches on
    # each corpus (bpekit keeps them across calls, in each pool: the first call on a
    # corpus is slower).
    for c in corpora:
        _read_through(c.path)
        for threads in THREADS:
            write(WRITERS[0], [str(c.path)], out, tok, threads, shard_tokens)
    _remove(out)
    for r in range(rounds):
        t0 = time.perf_counter()
        for c in corpora:
            for threads in THREADS:
                for w in _rotated(WRITERS, r):
                    seconds = write(w, [str(c.path)], out, tok, threads, shard_tokens)
                    times.setdefault((c.name, w.key, threads), []).append(seconds)
                    if r == 0:
                        checks[(c.name, w.key, threads)] = check_output(w, out)
                    _remove(out)
        print(f"  throughput round {r + 1}/{rounds}: {time.perf_counter() - t0:.1f} s", flush=True)
    return times, checks


def throughput_table(
    corpora: list[Corpus], times: dict[tuple, list[float]], checks: dict[tuple, dict]
) -> tuple[dict, dict, list[str]]:
    rows, figures, problems = [], {}, []
    for c in corpora:
        mb = c.text_bytes / 1e6
        for threads in THREADS:
            base = times[(c.name, "file", threads)]
            ref = checks[(c.name, "file", 1)]
            for w in WRITERS:
                t = times[(c.name, w.key, threads)]
                got = checks[(c.name, w.key, threads)]
                notes = []
                if w.key == "val":
                    same = got["tokens"] + got["val_tokens"] == ref["tokens"]
                    notes.append(f"val: {got['val_tokens']:,} of {ref['tokens']:,} tokens")
                else:
                    same = (got["tokens"], got["hash"]) == (ref["tokens"], ref["hash"])
                if not same:
                    what = "tokens" if w.key == "val" else "ids"
                    notes.append(f"{what} differ from `encode_file` on 1 thread!")
                    problems.append(f"{c.name}, {w.key}, {threads} threads: {what} differ from encode_file's")
                vs_file = ratios(base, t)
                if w.key != "file":
                    figures[f"vs_file:{c.name}:{w.key}:{threads}"] = vs_file
                shards = got.get("shards")
                rows.append(
                    {
                        "corpus": c.name,
                        "writer": w.label,
                        "threads": threads,
                        **_time_fields(t),
                        "throughput": mb / statistics.median(t),
                        "vs_file": None if w.key == "file" else vs_file,
                        "shards": None if shards is None else " + ".join(str(n) for n in shards.values()),
                        "tokens": got["tokens"] + got.get("val_tokens", 0),
                        "note": "; ".join(notes),
                    }
                )
    table = {
        "heading": "Throughput: a sharded dataset against one `.npy`",
        "text": (
            "Each writer's call, in this process, the writers interleaved round by round; MB/s: input "
            "text per second; vs single file: `encode_file`'s time over the writer's in the same round "
            "(median of the rounds' ratios; the issue's target: at least "
            f"{1 - WITHIN:.0%}); shards: train (+ val). The ids of every dataset's train shards, read "
            "back, are checked equal to `encode_file`'s (the split's: train + val hold as many tokens)."
        ),
        "columns": [
            {"key": "corpus", "name": "corpus", "kind": "text"},
            {"key": "writer", "name": "writer", "kind": "text"},
            {"key": "threads", "name": "threads", "kind": "int"},
            {"key": "seconds", "name": "time", "kind": "time"},
            {"key": "throughput", "name": "MB/s", "kind": "num"},
            {"key": "vs_file", "name": "vs single file", "kind": "pct"},
            {"key": "shards", "name": "shards", "kind": "text"},
            {"key": "tokens", "name": "tokens", "kind": "int"},
            {"key": "note", "name": "notes", "kind": "text"},
        ],
        "rows": rows,
    }
    return table, figures, problems


# --- Memory ---------------------------------------------------------------------------


def memory_worker(spec: dict) -> dict:
    """One writer on the corpus ``copies`` times over, in this fresh process: its peak
    RSS, the RSS before the call, the call's own peak RSS and its peak anonymous RSS,
    both above where the call started (as formats_compare.py's memory_worker)."""
    import bpekit

    tok = bpekit.get_encoding(TOKENIZER)
    inputs = [spec["path"]] * spec["copies"]
    out = Path(spec["out"])
    writer = BY_KEY[spec["writer"]]
    _remove(out)
    if writer.options is None:
        out.mkdir(parents=True)
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
    t = time.perf_counter()
    if writer.options is None:
        tokens = bpekit.encode_file(inputs, out / "tokens.npy", tok, num_threads=spec["threads"])
    else:
        m = bpekit.encode_dataset(
            inputs, out, tok, shard_tokens=spec["shard_tokens"], num_threads=spec["threads"], **writer.options
        )
        tokens = m["totals"]["tokens"]
    seconds = time.perf_counter() - t
    anon = sampler.stop()
    after = _status_mib()
    return {
        "seconds": seconds,
        "tokens": tokens,
        "rss_before_mib": setup["VmRSS"],
        "peak_rss_mib": max(setup["VmHWM"], after["VmHWM"]),
        "call_peak_mib": after["VmHWM"] - setup["VmRSS"] if reset else None,
        "call_anon_mib": anon - setup["RssAnon"],
    }


def memory_table(corpora: list[Corpus], shard_tokens: int, out_root: Path, env: dict) -> tuple[dict, dict]:
    rows, figures = [], {}
    out = out_root / "memory"
    for c in corpora:
        corpus_mib = c.text_bytes / MiB
        figures[f"corpus_mib:{c.name}"] = corpus_mib
        for key in ("file", "npy"):
            m: dict[int, dict] = {}
            for copies in COPIES:
                spec = {"path": str(c.path), "copies": copies, "writer": key, "out": str(out)}
                spec.update(threads=MEMORY_THREADS, shard_tokens=shard_tokens)
                r = _worker("mem", spec, env)
                _remove(out)
                if r is None:
                    break
                m[copies] = r
                call = "-" if r["call_peak_mib"] is None else f"{r['call_peak_mib']:.0f}"
                print(
                    f"  memory {c.name} {key:4s} {copies}x: before {r['rss_before_mib']:.0f} MiB, peak "
                    f"{r['peak_rss_mib']:.0f} MiB, call {call} MiB, anonymous {r['call_anon_mib']:.0f} MiB "
                    f"({r['seconds']:.1f} s)",
                    flush=True,
                )
            if len(m) < len(COPIES):
                continue
            row: dict[str, Any] = {
                "corpus": c.name,
                "writer": BY_KEY[key].label,
                "before": m[1]["rss_before_mib"],
                "peak": m[1]["peak_rss_mib"],
                "peak_max": m[COPIES[-1]]["peak_rss_mib"],
            }
            for name, field in (("call", "call_peak_mib"), ("anon", "call_anon_mib")):
                values = [m[n][field] for n in COPIES]
                if any(v is None for v in values):
                    continue
                row[f"{name}_text"] = " / ".join(f"{v:,.0f}" for v in values) + " MiB"
                row[f"{name}_slope"] = _slope(COPIES, values)
                figures[f"{name}_slope:{c.name}:{key}"] = row[f"{name}_slope"]
            rows.append(row)
    sizes = " / ".join(f"{n}x" for n in COPIES)
    table = {
        "heading": "Memory at 1, 2 and 4 times the input",
        "text": (
            f"Each writer on {MEMORY_THREADS} threads in a fresh process, on the corpus named "
            f"{', '.join(map(str, COPIES))} times (a list of one path repeated). Before: the RSS when the "
            "call starts (the interpreter, bpekit, the tokenizer); peak: the process's peak RSS at 1x and "
            f"{COPIES[-1]}x; call: the call's own peak RSS above its start (the peak reset through "
            "/proc/self/clear_refs), pages of mapped files included; anonymous: the same for anonymous "
            "memory alone (heap), sampled every 2 ms; per 1x more: the least-squares slope over "
            f"{sizes}, in MiB per corpus more."
        ),
        "columns": [
            {"key": "corpus", "name": "corpus", "kind": "text"},
            {"key": "writer", "name": "writer", "kind": "text"},
            {"key": "before", "name": "before", "kind": "mib"},
            {"key": "peak", "name": "peak, 1x", "kind": "mib"},
            {"key": "peak_max", "name": f"peak, {COPIES[-1]}x", "kind": "mib"},
            {"key": "call_text", "name": f"call, {sizes}", "kind": "text"},
            {"key": "call_slope", "name": "per 1x more", "kind": "signed_mib"},
            {"key": "anon_text", "name": f"anonymous, {sizes}", "kind": "text"},
            {"key": "anon_slope", "name": "per 1x more", "kind": "signed_mib"},
        ],
        "rows": rows,
    }
    return table, figures


# --- Resume ---------------------------------------------------------------------------


def dataset_worker(spec: dict) -> dict:
    """``encode_dataset`` as a user runs it (resume is the default), timed; an error is
    reported, not raised."""
    import bpekit

    t = time.perf_counter()
    try:
        m = bpekit.encode_dataset(
            spec["path"],
            spec["out"],
            TOKENIZER,
            shard_tokens=spec["shard_tokens"],
            num_threads=spec["threads"],
        )
    except Exception as e:  # the driver says what failed
        return {"error": f"{type(e).__name__}: {e}"}
    return {"seconds": time.perf_counter() - t, "tokens": m["totals"]["tokens"]}


@dataclass
class Watched:
    result: dict | None  # the worker's report (None when killed or failed)
    killed: bool
    listed: int  # shards the manifest listed when the run ended or was killed
    listed_tokens: int
    listed_while_running: int  # the most shards listed while "complete" was false
    on_disk: int  # finished shard files seen
    error: str = ""


def _listed(root: Path) -> tuple[int, int, bool] | None:
    """Shards and tokens ``root/manifest.json`` lists, and whether it says complete."""
    try:
        m = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    shards = [s for split in (m.get("splits") or {}).values() for s in split.get("shards", [])]
    return len(shards), sum(s.get("tokens", 0) for s in shards), bool(m.get("complete"))


def _on_disk(root: Path) -> int:
    n = 0
    for split in ("train", "val"):
        try:
            n += sum(1 for name in os.listdir(root / split) if SHARD_NAME.match(name))
        except OSError:
            pass
    return n


def watch(spec: dict, env: dict, stop: Callable[[int, int], bool] | None) -> Watched:
    """Runs ``dataset_worker(spec)`` in a fresh process, watching its manifest (read
    again whenever its mtime changes) and its shard files every 2 ms; kills it with
    SIGKILL once ``stop(listed shards, shard files)`` is true."""
    root = Path(spec["out"])
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "dataset", json.dumps(spec)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen_mtime, listed, tokens, most, on_disk, killed = None, 0, 0, 0, 0, False
    while proc.poll() is None:
        try:
            mtime = (root / "manifest.json").stat().st_mtime_ns
        except OSError:
            mtime = None
        if mtime is not None and mtime != seen_mtime:
            seen_mtime = mtime
            got = _listed(root)
            if got is not None:
                listed, tokens, complete = got
                if not complete:
                    most = max(most, listed)
        on_disk = _on_disk(root)
        if stop is not None and stop(listed, on_disk):
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(POLL_S)
    out, err = proc.communicate()
    got = _listed(root)
    if got is not None and not killed:
        listed, tokens, _ = got
    if killed:
        return Watched(None, True, listed, tokens, most, on_disk)
    if proc.returncode != 0:
        return Watched(None, False, listed, tokens, most, on_disk, (err.strip().splitlines() or ["?"])[-1])
    result = json.loads(out.strip().splitlines()[-1])
    return Watched(result, False, listed, tokens, most, on_disk, result.get("error", ""))


def resume_rounds(corpora: list[Corpus], rounds: int, shard_tokens: int, out_root: Path, env: dict) -> list:
    """Per corpus, per round: a full run, a run killed at half its shards, the rerun."""
    found = []
    full_dir, part_dir = out_root / "resume-full", out_root / "resume-part"
    for c in corpora:
        spec = {"path": str(c.path), "shard_tokens": shard_tokens, "threads": RESUME_THREADS}
        runs: list[dict] = []
        for r in range(rounds):
            _remove(full_dir)
            _remove(part_dir)
            os.sync()
            full = watch({**spec, "out": str(full_dir)}, env, None)
            if full.result is None or full.error:
                runs.append({"error": f"the full run failed: {full.error}"})
                break
            manifest = json.loads((full_dir / "manifest.json").read_text(encoding="utf-8"))
            shards = [s for split in manifest["splits"].values() for s in split["shards"]]
            expected, total = len(shards), manifest["totals"]["tokens"]
            half = math.ceil(expected / 2)
            reference = file_hashes(full_dir)
            run: dict[str, Any] = {"full": full.result["seconds"], "shards": expected, "tokens": total}
            # A manifest that lists no shard until the run ends cannot be resumed from:
            # kill when half the shard files are there instead, to show what a rerun does.
            per_shard = full.listed_while_running > 0
            if not per_shard:
                run["note"] = (
                    "the manifest listed no shard before the run ended: killed at half the shard files"
                )

            def stop(listed: int, files: int, half: int = half, per_shard: bool = per_shard) -> bool:
                return (listed if per_shard else files) >= half

            os.sync()
            part = watch({**spec, "out": str(part_dir)}, env, stop)
            if not part.killed:
                run["error"] = (
                    f"the run ended before it could be killed ({part.listed_while_running} of {expected} "
                    f"shards listed while it ran{'; ' + part.error if part.error else ''})"
                )
                runs.append(run)
                break
            run.update(killed_listed=part.listed, killed_tokens=part.listed_tokens, killed_files=part.on_disk)
            run["left"] = 1 - part.listed_tokens / total if total else None
            # Watched as the other two runs are, so that all three share the watcher's cost.
            rerun = watch({**spec, "out": str(part_dir)}, env, None)
            if rerun.result is None or rerun.error:
                message = f"the rerun failed: {rerun.error}"
                if "FileExistsError" in rerun.error and "resum" in rerun.error:
                    message = f"this bpekit cannot resume a killed run yet ({rerun.error})"
                run["error"] = message
                runs.append(run)
                break
            run["rerun"] = rerun.result["seconds"]
            run["ratio"] = run["rerun"] / run["full"]
            got = file_hashes(part_dir)
            run["identical"] = got == reference
            if not run["identical"]:
                differ = sorted(k for k in reference.keys() | got.keys() if reference.get(k) != got.get(k))
                run["differ"] = differ
            runs.append(run)
            left = "-" if run["left"] is None else f"{run['left']:.0%}"
            print(
                f"  resume {c.name} round {r + 1}/{rounds}: full {run['full']:.2f} s, killed at "
                f"{part.listed}/{expected} shards listed ({left} of the tokens left), rerun "
                f"{run['rerun']:.2f} s = {run['ratio']:.2f}x, identical: {run['identical']}",
                flush=True,
            )
        _remove(full_dir)
        _remove(part_dir)
        found.append((c, runs))
    return found


def resume_table(found: list) -> tuple[dict, dict, list[str]]:
    rows, figures, problems = [], {}, []
    for c, runs in found:
        done = [r for r in runs if "ratio" in r]
        failed = [r for r in runs if r.get("error")]
        row: dict[str, Any] = {"corpus": c.name, "runs": len(done)}
        notes = sorted({r["note"] for r in runs if r.get("note")})
        if failed:
            notes.append(f"FAILED: {failed[0]['error']}")
            problems.append(f"resume, {c.name}: {failed[0]['error']}")
        if done:
            row.update(
                full=statistics.median(r["full"] for r in done),
                rerun=statistics.median(r["rerun"] for r in done),
                ratio=statistics.median(r["ratio"] for r in done),
                left=statistics.median(r["left"] for r in done),
                shards=done[0]["shards"],
                killed=" / ".join(str(r["killed_listed"]) for r in done),
                identical="yes" if all(r["identical"] for r in done) else "NO",
            )
            figures[f"resume_ratio:{c.name}"] = row["ratio"]
            figures[f"resume_left:{c.name}"] = row["left"]
            figures[f"resume_identical:{c.name}"] = all(r["identical"] for r in done)
            for r in done:
                if not r["identical"]:
                    notes.append(f"differ: {', '.join(r['differ'][:4])}")
                    problems.append(
                        f"resume, {c.name}: the resumed dataset differs ({', '.join(r['differ'][:4])})"
                    )
        elif runs and "full" in runs[0]:
            row.update(full=runs[0]["full"], shards=runs[0]["shards"])
        row["note"] = "; ".join(notes)
        rows.append(row)
    table = {
        "heading": "Resume after SIGKILL at half the shards",
        "text": (
            f"`encode_dataset` ({RESUME_THREADS} threads, npy shards of the throughput table's size) in "
            "fresh processes: a full run; a run killed with SIGKILL once its manifest lists at least half "
            "of the full run's shards; the same call again (it resumes), timed. Full run and rerun: the "
            "call's seconds (median over the rounds); killed at: the shards the manifest listed at the "
            "kill, per round; left: the share of the tokens it did not list (what a rerun must redo); "
            "rerun / full: the issue's target is about 0.5; identical: every shard and index file of the "
            "resumed dataset has the full run's sha256."
        ),
        "columns": [
            {"key": "corpus", "name": "corpus", "kind": "text"},
            {"key": "shards", "name": "shards", "kind": "int"},
            {"key": "full", "name": "full run, s", "kind": "num"},
            {"key": "killed", "name": "killed at, shards listed", "kind": "text"},
            {"key": "left", "name": "left", "kind": "pct"},
            {"key": "rerun", "name": "rerun, s", "kind": "num"},
            {"key": "ratio", "name": "rerun / full", "kind": "ratio"},
            {"key": "identical", "name": "identical", "kind": "text"},
            {"key": "runs", "name": "rounds", "kind": "int"},
            {"key": "note", "name": "notes", "kind": "text"},
        ],
        "rows": rows,
    }
    return table, figures, problems


# --- Peers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    key: str
    tool: str  # tool_version's name
    label: str
    threads: int


PEERS = [
    Peer("bpekit", "bpekit", '`encode_dataset(..., shard_format="bin")` on en.jsonl', 1),
    Peer("bpekit", "bpekit", '`encode_dataset(..., shard_format="bin")` on en.jsonl', 2),
    Peer("bpekit-batch", "bpekit", "documents read in Python, `encode_batch_to_numpy(eos=...)`", 1),
    Peer("bpekit-batch", "bpekit", "documents read in Python, `encode_batch_to_numpy(eos=...)`", 2),
    Peer("tiktoken", "tiktoken", "`encode_ordinary_batch` + eot, uint16 (nanoGPT)", 1),
    Peer("tiktoken", "tiktoken", "`encode_ordinary_batch` + eot, uint16 (nanoGPT)", 2),
    Peer("tiktoken-pool", "tiktoken", "`Pool(2).imap` of `encode_ordinary` + eot (llm.c `dev/data`)", 2),
    Peer("hf", "HF tokenizers", "`encode_batch` + eot, uint16", 1),
    Peer("hf", "HF tokenizers", "`encode_batch` + eot, uint16", 2),
]


def read_batches(path: Path, size: int) -> Iterator[list[str]]:
    """The documents of a JSONL file, ``size`` at a time."""
    batch: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                batch.append(json.loads(line)["text"])
                if len(batch) == size:
                    yield batch
                    batch = []
    if batch:
        yield batch


def read_texts(path: Path) -> Iterator[str]:
    for batch in read_batches(path, PEER_BATCH_DOCS):
        yield from batch


def load_peer(key: str) -> Any:
    """The tokenizer of ``key``, from the rank files in $BPEKIT_ENCODINGS (the driver sets it)."""
    enc_dir = Path(os.environ["BPEKIT_ENCODINGS"].split(os.pathsep)[0])
    if key.startswith("bpekit"):
        import bpekit

        return bpekit.get_encoding(TOKENIZER)
    if key.startswith("tiktoken"):
        sys.path.insert(0, str(REPO / "tests"))
        from _shared_data import build_tiktoken

        return build_tiktoken(TOKENIZER, enc_dir)
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE.from_file(str(enc_dir / "gpt2_encoder.json"), str(enc_dir / "gpt2_vocab.bpe")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([EOT])
    return tok


_POOL_ENC: Any = None  # the pool's workers' tiktoken encoding, inherited through fork


def _pool_tokenize(text: str) -> np.ndarray:
    ids = _POOL_ENC.encode_ordinary(text)
    ids.append(_POOL_ENC.eot_token)
    return np.array(ids, dtype=np.uint16)


def run_peer(key: str, tok: Any, path: Path, out: Path, threads: int, shard_tokens: int) -> None:
    """From ``path`` on disk to token ids in ``out`` (a folder for bpekit, else a ``.bin``)."""
    global _POOL_ENC
    if key == "bpekit":
        import bpekit

        bpekit.encode_dataset(
            [str(path)], out, tok, shard_format="bin", shard_tokens=shard_tokens, num_threads=threads
        )
        return
    arrays = []
    if key == "tiktoken-pool":
        _POOL_ENC = tok
        with multiprocessing.get_context("fork").Pool(threads) as pool:
            arrays = list(pool.imap(_pool_tokenize, read_texts(path), chunksize=POOL_CHUNKSIZE))
    else:
        for texts in read_batches(path, PEER_BATCH_DOCS):
            if key == "bpekit-batch":
                ids, _ = tok.encode_batch_to_numpy(texts, threads, eos=EOT, disallowed_special=())
                arrays.append(ids.astype(np.uint16))
                continue
            flat: list[int] = []
            if key == "tiktoken":
                eot = tok.eot_token
                for doc in tok.encode_ordinary_batch(texts, num_threads=threads):
                    flat.extend(doc)
                    flat.append(eot)
            else:
                eot = tok.token_to_id(EOT)
                for enc in tok.encode_batch(texts, add_special_tokens=False):
                    flat.extend(enc.ids)
                    flat.append(eot)
            arrays.append(np.array(flat, dtype=np.uint16))
    np.concatenate(arrays).tofile(out)


def peer_worker(spec: dict) -> dict:
    """One peer configuration in this fresh process: the tokenizer loaded (untimed), then
    the pipeline timed; its ids hashed; peak RSS (the pool's workers apart)."""
    key, threads = spec["key"], spec["threads"]
    tok = load_peer(key)
    path, out = Path(spec["path"]), Path(spec["out"])
    _remove(out)
    gc.collect()
    t = time.perf_counter()
    run_peer(key, tok, path, out, threads, spec["shard_tokens"])
    seconds = time.perf_counter() - t
    if key == "bpekit":
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        tokens, digest = ids_of(split_arrays(out, manifest))
    else:
        tokens, digest = ids_of(iter([np.memmap(out, dtype=np.uint16, mode="r")]))
    _remove(out)
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "seconds": seconds,
        "tokens": tokens,
        "hash": digest,
        "peak_rss_mib": _status_mib()["VmHWM"],
        "children_peak_mib": children if key == "tiktoken-pool" else None,
    }


def peer_rounds(corpus: Corpus, rounds: int, shard_tokens: int, out_root: Path, env: dict) -> dict:
    """``{(key, threads): [worker report per round]}``, the configurations interleaved."""
    found: dict[tuple[str, int], list[dict]] = {(p.key, p.threads): [] for p in PEERS}
    _read_through(corpus.path)
    for r in range(rounds):
        t0 = time.perf_counter()
        for p in _rotated(PEERS, r):
            spec = {
                "key": p.key,
                "threads": p.threads,
                "path": str(corpus.path),
                "shard_tokens": shard_tokens,
            }
            spec["out"] = str(out_root / ("peer" if p.key == "bpekit" else "peer.bin"))
            penv = dict(env, RAYON_NUM_THREADS=str(p.threads), TOKENIZERS_PARALLELISM="true")
            rep = _worker("peer", spec, penv)
            if rep is not None:
                found[(p.key, p.threads)].append(rep)
        print(f"  peers round {r + 1}/{rounds}: {time.perf_counter() - t0:.1f} s", flush=True)
    return found


def peers_table(corpus: Corpus, found: dict) -> tuple[dict, dict, list[str]]:
    rows, figures, problems = [], {}, []
    mb = corpus.text_bytes / 1e6
    reference = next((r for r in found[("bpekit", 1)] + found[("bpekit", 2)]), None)
    for p in PEERS:
        reps = found[(p.key, p.threads)]
        if not reps:
            problems.append(f"peers: {p.tool} ({p.key}, {p.threads} threads) failed")
            continue
        t = [r["seconds"] for r in reps]
        base = [r["seconds"] for r in found[("bpekit", p.threads)]]
        vs = None
        if base and p.key != "bpekit" and len(base) == len(t):
            vs = statistics.median(a / b for a, b in zip(t, base, strict=True))
            figures[f"vs_bpekit:{p.key}:{p.threads}"] = vs
        notes = []
        same = reference is not None and all(
            (r["tokens"], r["hash"]) == (reference["tokens"], reference["hash"]) for r in reps
        )
        if not same:
            notes.append("ids DIFFER from bpekit's")
            problems.append(f"peers: {p.tool} ({p.key}, {p.threads} threads): ids differ from bpekit's")
        children = [r["children_peak_mib"] for r in reps if r.get("children_peak_mib")]
        if children:
            notes.append(f"each worker process up to {max(children):,.0f} MiB besides")
        rows.append(
            {
                "tool": p.tool,
                "pipeline": p.label,
                "threads": p.threads,
                **_time_fields(t),
                "throughput": mb / statistics.median(t),
                "vs_bpekit": vs,
                "peak_rss": max(r["peak_rss_mib"] for r in reps),
                "ids": "same" if same else "DIFFER",
                "note": "; ".join(notes),
            }
        )
    table = {
        "heading": "Peers: en.jsonl to a `.bin` of uint16 ids",
        "text": (
            f"{corpus.documents:,} documents from en.jsonl on disk to token ids in a file, "
            "`<|endoftext|>` after each document, each configuration in a fresh process that loads its "
            "tokenizer first (untimed); the time runs from opening the file to the ids written (bpekit's "
            "`encode_dataset` includes its shards' sha256 and manifest). vs bpekit: the row's time over "
            "`encode_dataset`'s (bin) on as many threads in the same round (the pool: 2). ids: a hash of "
            f"all ids against bpekit's. The Python pipelines read batches of {PEER_BATCH_DOCS:,} documents "
            "(`json.loads` per line) and build one uint16 array per batch (the pool: per document), "
            "concatenated and written with `tofile`."
        ),
        "columns": [
            {"key": "tool", "name": "tool", "kind": "text"},
            {"key": "pipeline", "name": "pipeline", "kind": "text"},
            {"key": "threads", "name": "threads", "kind": "int"},
            {"key": "seconds", "name": "time", "kind": "time"},
            {"key": "throughput", "name": "MB/s", "kind": "num"},
            {"key": "vs_bpekit", "name": "vs bpekit", "kind": "ratio"},
            {"key": "peak_rss", "name": "peak RSS", "kind": "mib"},
            {"key": "ids", "name": "ids", "kind": "text"},
            {"key": "note", "name": "notes", "kind": "text"},
        ],
        "rows": rows,
    }
    return table, figures, problems


# --- The dataset targets --------------------------------------------------------------


def targets_table(corpora: list[Corpus], figures: dict) -> dict:
    rows = []

    def add(target: str, measured: str | None, met: bool) -> None:
        rows.append(
            {"target": target, "measured": measured or "-", "met": "-" if not measured else _yes(met)}
        )

    for c in corpora:
        got = {k: v for k, v in figures.items() if k.startswith(f"vs_file:{c.name}:")}
        for what, keys in (("hashing", lambda k: k != "nosum"), ("without sha256", lambda k: k == "nosum")):
            mine = {k: v for k, v in got.items() if keys(k.split(":")[2])}
            if not mine:
                continue
            worst = min(mine, key=mine.__getitem__)
            _, _, key, threads = worst.split(":")
            add(
                f"{c.name}: every dataset writer ({what}) within {WITHIN:.0%} of `encode_file`'s throughput",
                f"lowest {mine[worst]:.0%} ({key}, {threads} thread{'s' if threads != '1' else ''})",
                mine[worst] >= 1 - WITHIN,
            )
    for c in corpora:
        limit = FLAT_SHARE * figures.get(f"corpus_mib:{c.name}", 0)
        parts, flat = [], True
        for key in ("file", "npy"):
            for name in ("call", "anon"):
                v = figures.get(f"{name}_slope:{c.name}:{key}")
                if v is not None:
                    parts.append(f"{key} {'RSS' if name == 'call' else 'anonymous'} {v:+.0f} MiB")
                    flat = flat and v <= limit
        if parts:
            add(
                f"{c.name}: peak memory independent of input size (the call's peak grows by less than "
                f"{FLAT_SHARE:.0%} of the input per 1x more: {limit:.1f} MiB)",
                ", ".join(parts),
                flat,
            )
    for c in corpora:
        ratio, left = figures.get(f"resume_ratio:{c.name}"), figures.get(f"resume_left:{c.name}")
        if ratio is not None and left is not None:
            add(
                f"{c.name}: a rerun after a kill at half the shards takes about half a full run (at most "
                f"the work left + {RESUME_SLACK:.0%} of a full run)",
                f"{ratio:.2f}x of a full run with {left:.0%} of the tokens left",
                ratio <= left + RESUME_SLACK,
            )
            same = figures.get(f"resume_identical:{c.name}")
            add(
                f"{c.name}: the resumed dataset is byte-identical to a full run", _yes(bool(same)), bool(same)
            )
        elif f"resume_failed:{c.name}" in figures:
            add(f"{c.name}: resume after a kill", f"failed: {figures[f'resume_failed:{c.name}']}", False)
    return {
        "heading": "Targets: token datasets",
        "text": "Each target of the issue's \"Speed and memory\" against this run's figures above.",
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


WORKERS: dict[str, Callable[[dict], dict]] = {
    "mem": memory_worker,
    "dataset": dataset_worker,
    "peer": peer_worker,
}


def _worker(kind: str, spec: dict, env: dict) -> dict | None:
    """``WORKERS[kind](spec)`` in a fresh process; its last stdout line is JSON."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, json.dumps(spec)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"  ! {kind} {spec} failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(WORKERS[sys.argv[2]](json.loads(sys.argv[3]))))
        return 0
    parts = ("throughput", "memory", "resume", "peers")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=None, help="rounds of every timing (default 3; --quick: 1)")
    p.add_argument("--quick", action="store_true", help="slices of the corpora, small shards, 1 round")
    p.add_argument("--parts", nargs="+", choices=parts, default=list(parts), help="what to measure (all)")
    p.add_argument("--corpora", nargs="+", choices=("en", OWT), default=["en", OWT], help="(both)")
    p.add_argument("--data", default=None, help="data folder (default: $BPEKIT_DATA or ../shared/data)")
    p.add_argument(
        "--make-big", type=Path, default=None, help="make_big.py (default: ../shared/bench/ beside the data)"
    )
    p.add_argument("--results", type=Path, default=None, help="folder for dataset.json (benchmarks/results)")
    args = p.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    shard_tokens = QUICK_SHARD_TOKENS if args.quick else SHARD_TOKENS
    env = encodings_env(args.data)
    os.environ["BPEKIT_ENCODINGS"] = env["BPEKIT_ENCODINGS"]
    make_big = args.make_big or data_dir(args.data).parent / "bench" / "make_big.py"

    corpora = prepare_corpora(args.corpora, args.quick, args.data, make_big)
    bench = corpus_path("en", data=args.data).parent
    out_root = bench / "dataset-out"
    results = args.results or (bench / "quick-results" if args.quick else RESULTS)
    for c in corpora:
        docs = "" if c.documents is None else f", {c.documents:,} documents"
        print(f"{c.name}: {c.path} ({c.text_bytes / 1e6:,.1f} MB of text{docs})")
    print(f"{rounds} round(s), shards of {shard_tokens:,} tokens, {os.cpu_count()} cores", flush=True)

    t0 = time.perf_counter()
    tables, figures, problems = [], {}, []
    try:
        if "throughput" in args.parts:
            times, checks = timed_rounds(corpora, rounds, shard_tokens, out_root)
            table, figs, probs = throughput_table(corpora, times, checks)
            tables.append(table)
            figures.update(figs)
            problems += probs
            for row in table["rows"]:
                vs = "" if row["vs_file"] is None else f"{row['vs_file']:5.0%}"
                name, writer = row["corpus"], row["writer"][:44]
                print(f"  {name:7s} {writer:44s} {row['threads']}t {row['throughput']:7.1f} MB/s {vs}")
        if "memory" in args.parts:
            table, figs = memory_table(corpora, shard_tokens, out_root, env)
            tables.append(table)
            figures.update(figs)
        if "resume" in args.parts:
            found = resume_rounds(corpora, rounds, shard_tokens, out_root, env)
            table, figs, probs = resume_table(found)
            for c, runs in found:
                failed = [r["error"] for r in runs if r.get("error")]
                if failed:
                    figs[f"resume_failed:{c.name}"] = failed[0]
            tables.append(table)
            figures.update(figs)
            problems += probs
        en = next((c for c in corpora if c.name == "en"), None)
        if "peers" in args.parts and en is not None:
            found_peers = peer_rounds(en, rounds, shard_tokens, out_root, env)
            table, figs, probs = peers_table(en, found_peers)
            tables.append(table)
            figures.update(figs)
            problems += probs
            for row in table["rows"]:
                vs = "" if row["vs_bpekit"] is None else f"{row['vs_bpekit']:5.2f}x"
                print(
                    f"  {row['tool']:13s} {row['pipeline'][:50]:50s} {row['threads']}t "
                    f"{row['throughput']:7.1f} MB/s {vs:>6s} {row['peak_rss']:6.0f} MiB ids {row['ids']}"
                )
    finally:
        _remove(out_root)
    tables.append(targets_table(corpora, figures))
    print(f"  measured in {time.perf_counter() - t0:.0f} s")

    cmd_args = [] if args.rounds is None else ["--rounds", str(args.rounds)]
    cmd_args += ["--quick"] if args.quick else []
    if args.parts != list(parts):
        cmd_args += ["--parts", *args.parts]
    if args.corpora != ["en", OWT]:
        cmd_args += ["--corpora", *args.corpora]
    sizes = ", ".join(f"{c.name} {c.text_bytes / 1e6:,.0f} MB" for c in corpora)
    write_result(
        results,
        "dataset",
        title="Writing a training-ready token dataset" + (" (--quick: slices)" if args.quick else ""),
        description=(
            f"`bpekit.encode_dataset` (gpt2, shards of {shard_tokens:,} tokens) against the single-file "
            f"`encode_file` on the same input, its peak memory at 1, 2 and 4 times the input, resuming "
            "after SIGKILL, and the tiktoken / HF tokenizers pipelines of nanoGPT's and llm.c's data "
            f"scripts. Corpora ({sizes} of text): `en` as en.jsonl, its {en.documents if en else 0:,} "
            "documents of ~5 KB one JSON record each (`<|endoftext|>` after each), and `owt-1G`, "
            "1 GB of OpenWebText-like text from `../shared/bench/make_big.py owt 1G` (documents joined "
            "by `<|endoftext|>`). MB/s counts the input text (en: the documents' UTF-8, no JSON syntax). "
            f"Times are medians over {rounds} round(s) (min-max beside them). Built by "
            "`benchmarks/dataset_compare.py`; its docstring says exactly what each figure is."
        ),
        command=command("dataset_compare.py", cmd_args),
        unit="MB/s",
        versions={
            "bpekit": tool_version("bpekit"),
            "tiktoken": tool_version("tiktoken"),
            "HF tokenizers": tool_version("HF tokenizers"),
            "numpy": np.__version__,
        },
        runs=rounds,
        tables=tables,
        rows=[],
    )
    if problems:
        print("\nFAILED:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
