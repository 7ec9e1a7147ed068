"""Throughput: every dataset writer timed in this process, interleaved round by round,
against the single-file ``encode_file``; the ids of each output read back and checked."""

from __future__ import annotations

import gc
import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import columns, median_ratio, read_through, remove, rotated, table, time_fields
from _dataset import TOKENIZER
from _dataset.corpora import Corpus
from _dataset.readers import ids_of, split_arrays

THREADS = (1, 2)
VAL_FRACTION = 0.01
# Dataset within this share of the single file's throughput.
WITHIN = 0.05


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


def run_writer(
    writer: Writer, inputs: list[str], out: Path, tok: Any, threads: int, shard_tokens: int
) -> int:
    """``writer``'s call into ``out`` (which must not hold a dataset); the tokens it wrote."""
    import bpekit

    if writer.options is None:
        tokens: int = bpekit.encode_file(inputs, out / "tokens.npy", tok, num_threads=threads)
        return tokens
    m = bpekit.encode_dataset(
        inputs, out, tok, shard_tokens=shard_tokens, num_threads=threads, **writer.options
    )
    return int(m["totals"]["tokens"])


def prepare_output(writer: Writer, out: Path) -> None:
    """``out`` emptied (a folder holding a finished dataset is returned without work), and
    made for the single file."""
    remove(out)
    if writer.options is None:
        out.mkdir(parents=True)


def write(writer: Writer, inputs: list[str], out: Path, tok: Any, threads: int, shard_tokens: int) -> float:
    """One writer's call into ``out`` (removed first); its seconds."""
    prepare_output(writer, out)
    os.sync()  # the last output's removal is not written back during this call
    gc.collect()
    t = time.perf_counter()
    run_writer(writer, inputs, out, tok, threads, shard_tokens)
    return time.perf_counter() - t


def check_output(writer: Writer, out: Path) -> dict[str, Any]:
    """What ``writer`` wrote into ``out``: tokens and ids hash of the train ids (all ids
    for the single file), the shards, and val's tokens."""
    import bpekit

    if writer.options is None:
        tokens, digest = ids_of([bpekit.load_tokens(out / "tokens.npy")])
        return {"tokens": tokens, "hash": digest}
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    tokens, digest = ids_of(split_arrays(out, manifest))
    val_tokens, _ = ids_of(split_arrays(out, manifest, "val"))
    shards = {name: len(s["shards"]) for name, s in manifest["splits"].items()}
    return {"tokens": tokens, "hash": digest, "val_tokens": val_tokens, "shards": shards}


Key = tuple[str, str, int]  # (corpus, writer, threads)


def timed_rounds(
    corpora: list[Corpus], rounds: int, shard_tokens: int, out_root: Path
) -> tuple[dict[Key, list[float]], dict[Key, dict[str, Any]]]:
    """``{(corpus, writer, threads): [seconds per round]}``, and what each wrote in the
    first round (``check_output``)."""
    import bpekit

    tok = bpekit.get_encoding(TOKENIZER)
    out = out_root / "throughput"
    times: dict[Key, list[float]] = {}
    checks: dict[Key, dict[str, Any]] = {}
    # Warm-up: the page cache, each thread count's pool, and the tokenizer's caches on
    # each corpus (bpekit keeps them across calls, in each pool: the first call on a
    # corpus is slower).
    for c in corpora:
        read_through(c.path)
        for threads in THREADS:
            write(WRITERS[0], [str(c.path)], out, tok, threads, shard_tokens)
    remove(out)
    for r in range(rounds):
        t0 = time.perf_counter()
        for c in corpora:
            for threads in THREADS:
                for w in rotated(WRITERS, r):
                    seconds = write(w, [str(c.path)], out, tok, threads, shard_tokens)
                    times.setdefault((c.name, w.key, threads), []).append(seconds)
                    if r == 0:
                        checks[(c.name, w.key, threads)] = check_output(w, out)
                    remove(out)
        print(f"  throughput round {r + 1}/{rounds}: {time.perf_counter() - t0:.1f} s", flush=True)
    return times, checks


def throughput_table(
    corpora: list[Corpus], times: dict[Key, list[float]], checks: dict[Key, dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The table, the figures the targets are judged on, and the problems found."""
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
                vs_file = median_ratio(base, t)
                if w.key != "file":
                    figures[f"vs_file:{c.name}:{w.key}:{threads}"] = vs_file
                shards = got.get("shards")
                rows.append(
                    {
                        "corpus": c.name,
                        "writer": w.label,
                        "threads": threads,
                        **time_fields(t),
                        "throughput": mb / statistics.median(t),
                        "vs_file": None if w.key == "file" else vs_file,
                        "shards": None if shards is None else " + ".join(str(n) for n in shards.values()),
                        "tokens": got["tokens"] + got.get("val_tokens", 0),
                        "note": "; ".join(notes),
                    }
                )
    text = (
        "Each writer's call, in this process, the writers interleaved round by round; MB/s: input "
        "text per second; vs single file: `encode_file`'s time over the writer's in the same round "
        f"(median of the rounds' ratios; the target: at least {1 - WITHIN:.0%}); shards: train "
        "(+ val). The ids of every dataset's train shards, read back, are checked equal to "
        "`encode_file`'s (the split's: train + val hold as many tokens)."
    )
    cols = columns(
        ("corpus", "corpus", "text"),
        ("writer", "writer", "text"),
        ("threads", "threads", "int"),
        ("seconds", "time", "time"),
        ("throughput", "MB/s", "num"),
        ("vs_file", "vs single file", "pct"),
        ("shards", "shards", "text"),
        ("tokens", "tokens", "int"),
        ("note", "notes", "text"),
    )
    return table("Throughput: a sharded dataset against one `.npy`", text, cols, rows), figures, problems
