"""Scaling: counting, merging and encoding from 0.1 to 12 GB of text, in one
process and on a local Ray, with each job's peak memory.

    python benchmarks/scale.py                          # owt-0.1G, owt-1G, owt-12G, ts-2.2G
    python benchmarks/scale.py --corpus owt-0.1G        # some of them (repeatable)
    python benchmarks/scale.py --quick                  # a smoke test: ts-0.02G (~21 MB)

Corpora: ``KIND-SIZE.txt`` in the bench folder (``$BPEKIT_BENCH_DIR``, default
/tmp/bpekit_bench), made when missing by ``../shared/bench/make_big.py KIND SIZE`` (about
30 s per GB): ``owt`` is OpenWebText-like text (``en.txt`` repeated with new word types
spliced in, so that the distinct pre-tokens follow OpenWebText's Heaps' law: ~1.3 M at
1 GB, ~6 M at 12 GB), ``ts`` TinyStories-like (~150 K distinct at 2.2 GB); documents are
joined by ``<|endoftext|>``. make_big.py repeats whole copies of its base, so ``owt``
is at least one copy of en.txt (~116 MB: ``owt-0.1G`` is en.txt byte for byte). Any ``owt-SIZE`` or
``ts-SIZE`` that make_big.py takes may be named.

Per corpus, the file is read through (into the page cache, as far as it fits) before
the one-process jobs and again before the Ray job, as the encode's writes evict it;
three jobs run, each in a fresh process, so that each peak RSS (the process's
``VmHWM``: the interpreter, its imports and Ray's client included) is the job's own:

  one process   ``bpekit.count_pretokens(path, ["<|endoftext|>"])`` (bpekit's default
                threads: one per core), timed, then ``bpekit.train_from_counts(counts,
                V, ["<|endoftext|>"])``, timed; V = 32,000 for owt, 10,000 for ts.
  Ray local     ``ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)`` (timed apart: "Ray
                start" in the notes), then ``bpekit.distributed.count_with_stats(path, ["<|endoftext|>"])``
                (Ray tasks of one CPU and one thread each over units of ``--unit-bytes``, default the
                library's: four per CPU from 256 MiB to 1 GiB), timed, then ``train_from_counts`` on the
                driver, timed. The counts must equal the one-process counts (distinct pre-tokens, occurrences
                and the 100 most common, compared here); the script exits with status 1 when they differ. The
                counting time includes the first tasks' cold start (Ray's workers start and import bpekit).
                Then, on the same Ray, ``bpekit.distributed.encode_dataset(path, out, "gpt2")`` (a dataset
                folder with the default layout: tasks encode units into unit files, and a task writes each
                shard from them as soon as the driver has planned it), timed; its manifest (every shard's
                sha256 among it) must equal the one process's.
  encode        ``bpekit.encode_dataset(path, out, bpekit.get_encoding("gpt2"))``
                (default threads), timed, the tokenizer loaded before. The datasets
                are written into the bench folder's ``scale-out/`` and removed.

Figures: seconds of each call; count MB/s: the file's bytes (10^6) per second of
counting; "count vs one process": Ray's counting time over the one process's; "count
B / distinct": the job's peak RSS at the end of counting (before merging) in bytes per
distinct pre-token, the working set per pre-token type (the interpreter and imports
included, which dominate for small corpora). The Ray workers are other processes: the
driver's peak RSS leaves them out, so while Ray counts, a thread of the driver reads
``/proc`` every 0.5 s for the processes below it (raylet, GCS, workers) and the notes
give each worker's peak RSS (``VmHWM``; the largest of them) and the largest sum of the
RSS of all of Ray's processes seen (shared pages, the object store's among them, count
in each process that maps them).

One run per figure; the machine is shared, so expect 10-25% noise. Progress goes to
stderr. Writes ``--results``/scale.json (default benchmarks/results; ``--quick``: the
bench folder's ``quick-results/``), rewritten after each corpus, so a long run that
stops keeps the corpora done; ``report.py`` makes the table. ``PYTHONPATH=DIR`` times
the bpekit in DIR (the jobs and Ray's workers inherit it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    MiB,
    bench_dir,
    big_corpus,
    call_worker,
    columns,
    command,
    encodings_env,
    make_big_script,
    read_through,
    report_problems,
    results_dir,
    serve_worker,
    table,
    tool_version,
    write_result,
)
from _scale import RAY_CPUS, SCRIPT, T0, log
from _scale.jobs import JOBS

DEFAULT_CORPORA = ["owt-0.1G", "owt-1G", "owt-12G", "ts-2.2G"]
QUICK_CORPORA = ["ts-0.02G"]
VOCAB = {"owt": 32_000, "ts": 10_000}


# --- One corpus -----------------------------------------------------------------------


def run_job(kind: str, spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any] | None:
    """``JOBS[kind](spec)`` in a fresh process (its stderr passed through); None when it failed.
    Each starts with the page cache's dirty data written (``os.sync``): the writeback of
    a dataset just written (8 GB on owt-12G, ~20 s at this VM's disk speed) slowed the
    next job's own writes by up to a quarter."""
    os.sync()
    t = time.perf_counter()
    found, why = call_worker(SCRIPT, [kind, json.dumps(spec)], env, capture_stderr=False)
    if found is None:
        log(f"  ! {kind} failed ({why}) after {time.perf_counter() - t:.0f} s")
    return found


def measure(
    name: str, path: Path, args: argparse.Namespace, out_dir: Path, env: dict[str, str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The table rows of one corpus and its problems."""
    size = path.stat().st_size
    kind = name.split("-", 1)[0]
    spec = {"path": str(path), "vocab_size": VOCAB[kind]}
    log(f"{name}: {path} ({size / 1e6:,.0f} MB), vocabulary {VOCAB[kind]:,}")
    log(f"  read through in {read_through(path):.1f} s")
    single = run_job("single", spec, env)
    enc = run_job("encode", {**spec, "out": str(out_dir / "one")}, env)
    # The encode wrote as many bytes as the corpus holds ids: read it through again, so
    # that Ray's counting finds in the page cache what the one process found.
    log(f"  read through again in {read_through(path):.1f} s")
    ray_spec = {**spec, "cpus": RAY_CPUS, "unit_bytes": args.unit_bytes, "out": str(out_dir / "ray")}
    ray = run_job("ray", ray_spec, env)
    threads = os.cpu_count()
    base = {"corpus": name, "mb": size / 1e6, "bytes": size, "vocab_size": VOCAB[kind]}
    rows: list[dict[str, Any]] = []
    problems: list[str] = []

    def row(run: str, found: dict[str, Any] | None) -> dict[str, Any]:
        r = {**base, "run": run}
        if found is None:
            return {**r, "note": "failed"}
        r.update({k: found.get(k) for k in ("count_s", "merge_s", "peak_rss_mib", "count_peak_rss_mib")})
        r.update(distinct=found["distinct"], occurrences=found["occurrences"])
        r["count_mbps"] = size / 1e6 / found["count_s"]
        r["bytes_per_distinct"] = found["count_peak_rss_mib"] * MiB / found["distinct"]
        return r

    one = row(f"one process ({threads} threads)", single)
    if single is None:
        problems.append(f"{name}: the one-process job failed")
    if enc is None:
        problems.append(f"{name}: the encode job failed")
        one["note"] = (one.get("note", "") + "; encode failed").lstrip("; ")
    else:
        one["encode_s"] = enc["encode_s"]
        one["encode_peak_rss_mib"] = enc["peak_rss_mib"]
        one["tokens"] = enc["tokens"]
        note = f"encode: {enc['tokens']:,} tokens, {size / 1e6 / enc['encode_s']:,.1f} MB/s, "
        note += f"peak RSS {enc['peak_rss_mib']:,.0f} MiB"
        one["note"] = "; ".join(p for p in (one.get("note"), note) if p)
    rows.append(one)

    units = f"{ray['units']} unit{'s' if ray['units'] != 1 else ''}" if ray else "failed"
    two = row(f"Ray local, {RAY_CPUS} CPUs ({units})", ray)
    if ray is None:
        problems.append(f"{name}: the Ray job failed")
    else:
        two["units"] = ray["units"]
        two["init_s"] = ray["init_s"]
        two["worker_peak_rss_mib"] = ray["worker_peak_rss_mib"]
        two["ray_total_rss_mib"] = ray["ray_total_rss_mib"]
        two["encode_s"] = ray["encode_s"]
        notes = [f"Ray start {ray['init_s']:.1f} s"]
        if ray["worker_peak_rss_mib"] is not None:
            notes.append(f"{ray['workers']} workers, each up to {ray['worker_peak_rss_mib']:,.0f} MiB")
        notes.append(f"all Ray processes up to {ray['ray_total_rss_mib']:,.0f} MiB")
        if single is not None:
            two["vs_single"] = ray["count_s"] / single["count_s"]
            keys = ("distinct", "occurrences", "top")
            same = all(ray[k] == single[k] for k in keys)
            two["same_counts"] = same
            if same:
                notes.append("counts equal the one process's")
            else:
                differ = ", ".join(k for k in keys if ray[k] != single[k])
                notes.append(f"counts DIFFER from the one process's ({differ})")
                problems.append(f"{name}: Ray's counts differ from the one process's ({differ})")
        if enc is not None:
            two["encode_vs_single"] = ray["encode_s"] / enc["encode_s"]
            note = f"encode {two['encode_vs_single']:.2f}x the one process's time"
            if ray["encode_worker_peak_rss_mib"] is not None:
                note += f", its workers up to {ray['encode_worker_peak_rss_mib']:,.0f} MiB"
            if ray["manifest_sha256"] == enc["manifest_sha256"]:
                notes.append(note + ", the same dataset (manifest and shards' sha256)")
            else:
                notes.append(note + "; its dataset DIFFERS from the one process's")
                problems.append(f"{name}: Ray's dataset differs from the one process's")
        two["note"] = "; ".join(notes)
    rows.append(two)
    return rows, problems


# --- The result -----------------------------------------------------------------------

COLUMNS = columns(
    ("corpus", "corpus", "text"),
    ("mb", "MB", "num"),
    ("run", "run", "text"),
    ("distinct", "distinct pre-tokens", "int"),
    ("occurrences", "pre-tokens", "int"),
    ("count_s", "count s", "num"),
    ("count_mbps", "count MB/s", "num"),
    ("merge_s", "merge s", "num"),
    ("encode_s", "encode s", "num"),
    ("peak_rss_mib", "peak RSS", "mib"),
    ("bytes_per_distinct", "count B / distinct", "int"),
    ("vs_single", "count vs one process", "ratio"),
    ("note", "notes", "text"),
)


def save(
    results: Path, rows: list[dict[str, Any]], cmd_args: list[str], quick: bool, unit_bytes: int | None
) -> None:
    threads = os.cpu_count()
    text = (
        "Per corpus, each job in a fresh process. one process: `count_pretokens` then "
        f"`train_from_counts` ({threads} threads, bpekit's default); Ray local: `ray.init(num_cpus="
        f"{RAY_CPUS})` (its start timed apart: in the notes), `bpekit.distributed.count_with_stats` (tasks "
        "of one CPU over units of "
        + (
            f"{unit_bytes / MiB:,.0f} MiB"
            if unit_bytes
            else "the library's default size for a count on Ray: four per CPU, from 256 MiB to 1 GiB"
        )
        + "), then `train_from_counts` on the driver; encode: `encode_dataset` "
        "with gpt2 into a dataset folder (one process: default threads; Ray: "
        "`bpekit.distributed.encode_dataset`, units of "
        + (f"{unit_bytes / MiB:,.0f} MiB" if unit_bytes else "256 MiB")
        + ", each shard written by a worker once planned, while later units encode). "
        "count MB/s: "
        "the file's MB per second of counting. peak RSS: the job's process (the encode's in the notes; "
        "Ray: the driver's, its workers in the notes, each worker's VmHWM and the largest sum of all "
        "Ray processes' RSS, read from /proc every 0.5 s). count B / distinct: the peak RSS at the end "
        "of counting, in bytes per distinct pre-token (interpreter and imports included). count vs "
        "one process: Ray's counting time over the one process's; it includes the first tasks' "
        "cold start on the fresh Ray (its workers start and import bpekit: 0.3 to 3.5 s in runs here, "
        "which dominates on the small corpora), and a file of one unit or less is one task on one CPU."
    )
    by_size = table("Counting, merging and encoding by corpus size", text, COLUMNS, rows)
    sizes = ", ".join(f"`{r['corpus']}` {r['mb']:,.0f} MB" for r in rows[::2])
    write_result(
        results,
        "scale",
        title="Scaling: counting, merging and encoding from 0.1 to 12 GB" + (" (--quick)" if quick else ""),
        description=(
            f"Training (pre-token counting, then the merge loop to 32,000 tokens for owt and 10,000 for "
            f"ts) and gpt2 encoding of growing corpora ({sizes}), in one process and with the counting "
            f"on a local Ray of {RAY_CPUS} CPUs. The corpora are made by `../shared/bench/make_big.py "
            "KIND SIZE`: `owt` OpenWebText-like (en.txt repeated with new word types spliced in so that "
            "the distinct pre-tokens grow as OpenWebText's do; `owt-0.1G` is one copy with none: `en` "
            "byte for byte, 116 MB), `ts` TinyStories-like; documents joined by `<|endoftext|>`. One "
            "run per figure. Built by `benchmarks/scale.py`; its docstring says exactly what each figure is."
        ),
        command=command("scale.py", cmd_args),
        unit="s",
        versions={"bpekit": tool_version("bpekit"), "ray": tool_version("ray")},
        runs=1,
        tables=[by_size],
        rows=[],
    )


def main() -> int:
    if serve_worker(JOBS):
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--corpus",
        action="append",
        default=None,
        metavar="KIND-SIZE",
        help=f"a corpus, e.g. owt-0.1G (repeatable; default: {' '.join(DEFAULT_CORPORA)})",
    )
    p.add_argument("--quick", action="store_true", help=f"a smoke test: {' '.join(QUICK_CORPORA)}")
    p.add_argument("--unit-bytes", type=int, default=None, help="Ray's units (default: the library's)")
    p.add_argument("--data", default=None, help="data folder (default: $BPEKIT_DATA or ../shared/data)")
    p.add_argument(
        "--make-big", type=Path, default=None, help="make_big.py (default: ../shared/bench/ beside the data)"
    )
    p.add_argument("--results", type=Path, default=None, help="folder for scale.json (benchmarks/results)")
    args = p.parse_args()
    names = args.corpus or (QUICK_CORPORA if args.quick else DEFAULT_CORPORA)
    env = encodings_env(args.data)
    env["BPEKIT_SCALE_T0"] = str(T0)
    make_big = make_big_script(args.make_big, args.data)
    bench = bench_dir()
    results = results_dir(args.results, args.quick, bench)
    out_dir = bench / "scale-out"
    cmd_args = ["--quick"] if args.quick else []
    for name in names if args.corpus else []:
        cmd_args += ["--corpus", name]
    if "--unit-bytes" in sys.argv:
        cmd_args += ["--unit-bytes", str(args.unit_bytes)]
    log(f"corpora {', '.join(names)}; {os.cpu_count()} cores; results into {results}")

    paths = {name: big_corpus(name, bench, make_big, log) for name in names}
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    try:
        for name in names:
            t = time.perf_counter()
            found, probs = measure(name, paths[name], args, out_dir, env)
            rows += found
            problems += probs
            log(f"{name}: measured in {time.perf_counter() - t:.0f} s")
            save(results, rows, cmd_args, args.quick, args.unit_bytes)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    log(f"done in {time.time() - T0:.0f} s (largest job: {children:,.0f} MiB)")
    for r in rows:
        figures = [f"{r['corpus']:9s} {r['run'][:36]:36s}"]
        for key, what in (("count_s", "count"), ("merge_s", "merge"), ("encode_s", "encode")):
            if r.get(key) is not None:
                figures.append(f"{what} {r[key]:7.1f} s")
        if r.get("peak_rss_mib") is not None:
            figures.append(f"peak {r['peak_rss_mib']:7,.0f} MiB")
        print("  " + "  ".join(figures), file=sys.stderr)
    return report_problems(problems)


if __name__ == "__main__":
    sys.exit(main())
