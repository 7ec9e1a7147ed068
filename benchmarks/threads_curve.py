"""Threads: counting, the merge loop and encoding at 1, 2, 4, 8 and 16 threads.

    python benchmarks/threads_curve.py --corpus en               # a bench corpus by name
    python benchmarks/threads_curve.py --corpus /data/owt-12G.txt --rounds 1
    python benchmarks/threads_curve.py --corpus en --threads 1 2 --quick

The thread counts are capped at this machine's cores. Each figure is one fresh process
(``--worker``), the thread counts taken in a new order each round:

  count    ``bpekit.count_pretokens(corpus, ["<|endoftext|>"], num_threads=T)``, timed.
  merge    ``bpekit.train_from_counts(counts, V, ["<|endoftext|>"], num_threads=T)``,
           timed (V: ``--vocab-size``, 32,000), on the counts that a first, untimed
           count saved beside the corpus (loading them is not timed). Every thread
           count must give the same merges: the script exits with status 1 if not.
  encode   ``bpekit.encode_file(corpus, out.npy, gpt2, num_threads=T)``, timed, the
           tokenizer loaded before; the ``.npy`` is written in the bench folder and
           removed.

Figures: the median over the rounds of each call's seconds, the speed-up over one
thread (one thread's median over this one's), and the merge process's peak RSS
(``VmHWM``; the counts loaded are in it). The table is printed as markdown and
written to ``results/threads-<corpus>.json`` (``--quick``: into the bench folder).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import _common as c

HERE = Path(__file__).resolve()
JOBS = ("count", "merge", "encode")


def _count(spec: dict[str, Any]) -> dict[str, Any]:
    import bpekit

    t0 = time.perf_counter()
    counts = bpekit.count_pretokens(spec["corpus"], [c.EOT], num_threads=spec["threads"])
    seconds = time.perf_counter() - t0
    if spec.get("save"):
        counts.save(spec["save"])
    return {"seconds": seconds, "distinct": len(counts), "rss": c.peak_rss_mib()}


def _merge(spec: dict[str, Any]) -> dict[str, Any]:
    import bpekit

    counts = bpekit.WordCounts.load(spec["counts"])
    t0 = time.perf_counter()
    _, merges = bpekit.train_from_counts(counts, spec["vocab_size"], [c.EOT], num_threads=spec["threads"])
    seconds = time.perf_counter() - t0
    digest = hashlib.sha256(repr(merges).encode()).hexdigest()[:16]
    return {"seconds": seconds, "merges": len(merges), "digest": digest, "rss": c.peak_rss_mib()}


def _encode(spec: dict[str, Any]) -> dict[str, Any]:
    import bpekit

    tok = bpekit.get_encoding("gpt2")
    t0 = time.perf_counter()
    n = bpekit.encode_file(spec["corpus"], spec["out"], tok, num_threads=spec["threads"])
    seconds = time.perf_counter() - t0
    os.unlink(spec["out"])
    return {"seconds": seconds, "ids": n, "rss": c.peak_rss_mib()}


WORKERS = {"count": _count, "merge": _merge, "encode": _encode}

DESCRIPTION = (
    "Each figure is one fresh process, the thread counts in a new order each round: "
    '`count_pretokens(corpus, ["<|endoftext|>"], num_threads=T)`; `train_from_counts(counts, V, '
    '["<|endoftext|>"], num_threads=T)` on counts saved beforehand (loading untimed; every thread count '
    "must give the same merges); `encode_file(corpus, out.npy, gpt2, num_threads=T)` (the tokenizer "
    "loaded untimed). Figures: the median of each call's seconds over the rounds, the speed-up over one "
    "thread, and the merge process's peak RSS (the counts loaded included). Thread counts are capped at "
    "the machine's cores; `--note` adds what the run should be read with."
)

COLUMNS = c.columns(
    ("threads", "threads", "int"),
    ("count_s", "count s", "num"),
    ("count_x", "count speed-up", "ratio"),
    ("merge_s", "merge s", "num"),
    ("merge_x", "merge speed-up", "ratio"),
    ("encode_s", "encode s", "num"),
    ("encode_x", "encode speed-up", "ratio"),
    ("merge_rss", "merge peak RSS", "mib"),
)


def _markdown(rows: list[dict[str, Any]]) -> str:
    head = [col["name"] for col in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + " ---: |" * len(head)]
    for r in rows:
        cells = [f"{r['threads']}"]
        for job in JOBS:
            cells += [f"{r[job + '_s']:.3g}", f"{r[job + '_x']:.2f}x"]
        cells.append(f"{r['merge_rss']:,.0f} MiB")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="en", help="a bench corpus's name (en, en-small, ...) or a text file")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8, 16], help="thread counts")
    ap.add_argument("--vocab-size", type=int, default=32_000)
    ap.add_argument("--rounds", type=int, default=3, help="runs per figure")
    ap.add_argument("--jobs", nargs="+", choices=JOBS, default=list(JOBS))
    ap.add_argument("--results", type=Path, default=None, help="folder of result files")
    ap.add_argument("--bench-dir", default=None, help="corpora and scratch files (default /tmp/bpekit_bench)")
    ap.add_argument(
        "--quick", action="store_true", help="results into the bench folder, not benchmarks/results"
    )
    ap.add_argument("--note", default="", help="a sentence for the table (the machine's load, say)")
    args = ap.parse_args(argv)

    bench = c.bench_dir(args.bench_dir)
    given = Path(args.corpus)
    corpus = given if given.is_file() else c.corpus_path(args.corpus, bench)
    name = corpus.stem
    cores = os.cpu_count() or 1
    threads = sorted({t for t in args.threads if 1 <= t <= cores}) or [1]
    env = c.encodings_env()
    wc = bench / f"threads-{name}.wc"
    print(f"{corpus} ({corpus.stat().st_size / 1e6:,.0f} MB), threads {threads} of {cores} cores")
    spec: dict[str, Any] = {"corpus": str(corpus), "threads": None, "save": str(wc)}
    first = c.run_worker(HERE, ["count", json.dumps(spec)], env, label="the first count")
    if first is None:
        return 1

    times: dict[tuple[str, int], list[float]] = {}
    rss: dict[int, float] = {}
    digests: dict[int, str] = {}
    out = bench / f"threads-{name}.npy"
    for r in range(args.rounds):
        for t in c.rotated(threads, r):
            for job in args.jobs:
                spec = {"corpus": str(corpus), "threads": t, "counts": str(wc), "out": str(out)}
                spec["vocab_size"] = args.vocab_size
                got = c.run_worker(HERE, [job, json.dumps(spec)], env, label=f"{job} at {t} threads")
                if got is None:
                    return 1
                times.setdefault((job, t), []).append(got["seconds"])
                if job == "merge":
                    rss[t] = max(rss.get(t, 0.0), got["rss"])
                    digests[t] = got["digest"]
                print(f"  round {r + 1} {job:6} {t:2} threads: {got['seconds']:.3f} s", flush=True)

    rows = []
    for t in threads:
        row: dict[str, Any] = {"threads": t, "merge_rss": rss.get(t)}
        for job in JOBS:
            if (job, t) in times:
                med = statistics.median(times[(job, t)])
                row[job + "_s"] = med
                row[job + "_x"] = statistics.median(times[(job, threads[0])]) / med
        rows.append(row)
    if all(all(k in r for k in ("count_s", "merge_s", "encode_s")) for r in rows):
        print("\n" + _markdown(rows))
    problems = []
    if len(set(digests.values())) > 1:
        problems.append(f"the merges differ between thread counts: {digests}")

    text = (
        f"`{name}`, {corpus.stat().st_size / 1e6:,.0f} MB, {first['distinct']:,} distinct pre-tokens; "
        f"merge to {args.vocab_size:,} tokens. Speed-up: {threads[0]} thread's median time over this row's."
    )
    if max(args.threads) > cores:
        text += f" This machine has {cores} cores: the curve beyond them is still to be measured."
    if args.note:
        text += " " + args.note
    c.write_result(
        c.results_dir(args.results, args.quick, bench),
        f"threads-{name}",
        title=f"Threads: counting, merging and encoding {name} at {', '.join(map(str, threads))} threads",
        description=DESCRIPTION,
        command=c.command(HERE.name, (argv if argv is not None else sys.argv[1:])),
        corpus={"name": name, "bytes": corpus.stat().st_size},
        runs=args.rounds,
        versions={"bpekit": c.tool_version("bpekit")},
        tables=[c.table("By thread count", text, COLUMNS, rows)],
    )
    return c.report_problems(problems)


if __name__ == "__main__":
    if not c.serve_worker(WORKERS):
        sys.exit(main())
