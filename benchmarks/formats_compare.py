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
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, MiB, command, corpus_path, tool_version, write_result
from _formats.files import ROW_GROUP_ROWS, ZSTD_LEVEL, build
from _formats.inputs import timed_rounds
from _formats.memory import memory_table, memory_worker
from _formats.tables import overhead_table, targets_table, throughput_table


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, folder, key, copies, threads = sys.argv[2:]
        print(json.dumps(memory_worker(Path(folder), key, int(copies), int(threads))))
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
    main_table, figures = throughput_table(times, differ, stamp)
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
            "zstandard": tool_version("zstandard"),
            "pyarrow": tool_version("pyarrow"),
        },
        runs=args.rounds,
        tables=tables,
        rows=[],
    )


if __name__ == "__main__":
    main()
