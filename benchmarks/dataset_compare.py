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
single file's time over the writer's in the same round (100%: as fast; the
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
every 2 ms). Reported: the rerun's time over the full run's (the target: about 0.5),
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
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    command,
    corpus_path,
    encodings_env,
    make_big_script,
    remove,
    report_problems,
    results_dir,
    serve_worker,
    tool_version,
    write_result,
)
from _dataset.corpora import OWT, prepare_corpora
from _dataset.memory import memory_table, memory_worker
from _dataset.peers import peer_rounds, peer_worker, peers_table
from _dataset.resume import dataset_worker, resume_rounds, resume_table
from _dataset.targets import targets_table
from _dataset.throughput import throughput_table, timed_rounds

SHARD_TOKENS = 2**24
QUICK_SHARD_TOKENS = 2**18
PARTS = ("throughput", "memory", "resume", "peers")
WORKERS = {"mem": memory_worker, "dataset": dataset_worker, "peer": peer_worker}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=None, help="rounds of every timing (default 3; --quick: 1)")
    p.add_argument("--quick", action="store_true", help="slices of the corpora, small shards, 1 round")
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="what to measure (all)")
    p.add_argument("--corpora", nargs="+", choices=("en", OWT), default=["en", OWT], help="(both)")
    p.add_argument("--data", default=None, help="data folder (default: $BPEKIT_DATA or ../shared/data)")
    p.add_argument(
        "--make-big", type=Path, default=None, help="make_big.py (default: ../shared/bench/ beside the data)"
    )
    p.add_argument("--results", type=Path, default=None, help="folder for dataset.json (benchmarks/results)")
    return p.parse_args()


Found = tuple[dict[str, Any], dict[str, Any], list[str]]


def print_summary(part: str, rows: list[dict[str, Any]]) -> None:
    """The throughput and peers tables' rows, one line each."""
    for row in rows if part in ("throughput", "peers") else []:
        if part == "throughput":
            vs = "" if row["vs_file"] is None else f"{row['vs_file']:5.0%}"
            name, writer = row["corpus"], row["writer"][:44]
            print(f"  {name:7s} {writer:44s} {row['threads']}t {row['throughput']:7.1f} MB/s {vs}")
        else:
            vs = "" if row["vs_bpekit"] is None else f"{row['vs_bpekit']:5.2f}x"
            print(
                f"  {row['tool']:13s} {row['pipeline'][:50]:50s} {row['threads']}t "
                f"{row['throughput']:7.1f} MB/s {vs:>6s} {row['peak_rss']:6.0f} MiB ids {row['ids']}"
            )


def main() -> int:
    if serve_worker(WORKERS):
        return 0
    args = parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    shard_tokens = QUICK_SHARD_TOKENS if args.quick else SHARD_TOKENS
    env = encodings_env(args.data)
    os.environ["BPEKIT_ENCODINGS"] = env["BPEKIT_ENCODINGS"]

    corpora = prepare_corpora(args.corpora, args.quick, args.data, make_big_script(args.make_big, args.data))
    bench = corpus_path("en", data=args.data).parent
    out_root = bench / "dataset-out"
    results = results_dir(args.results, args.quick, bench)
    for c in corpora:
        docs = "" if c.documents is None else f", {c.documents:,} documents"
        print(f"{c.name}: {c.path} ({c.text_bytes / 1e6:,.1f} MB of text{docs})")
    print(f"{rounds} round(s), shards of {shard_tokens:,} tokens, {os.cpu_count()} cores", flush=True)

    en = next((c for c in corpora if c.name == "en"), None)

    def measure(part: str) -> Found | None:
        """One part's table, its figures for the targets and the problems it found."""
        if part == "throughput":
            return throughput_table(corpora, *timed_rounds(corpora, rounds, shard_tokens, out_root))
        if part == "memory":
            return memory_table(corpora, shard_tokens, out_root, env)
        if part == "resume":
            return resume_table(resume_rounds(corpora, rounds, shard_tokens, out_root, env))
        return None if en is None else peers_table(en, peer_rounds(en, rounds, shard_tokens, out_root, env))

    t0 = time.perf_counter()
    tables: list[dict[str, Any]] = []
    figures: dict[str, Any] = {}
    problems: list[str] = []
    try:
        for part in (p for p in PARTS if p in args.parts):
            if (found := measure(part)) is not None:
                table, figs, probs = found
                tables.append(table)
                figures.update(figs)
                problems += probs
                print_summary(part, table["rows"])
    finally:
        remove(out_root)
    tables.append(targets_table(corpora, figures))
    print(f"  measured in {time.perf_counter() - t0:.0f} s")

    cmd_args = [] if args.rounds is None else ["--rounds", str(args.rounds)]
    cmd_args += ["--quick"] if args.quick else []
    if args.parts != list(PARTS):
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
    return report_problems(problems)


if __name__ == "__main__":
    sys.exit(main())
