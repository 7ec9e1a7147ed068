"""Training speed and memory: bpekit beside the installed peers, same corpus, same vocab size;
and, with --count, bpekit's two phases on their own (counting pre-tokens, the merge loop).

Each tool trains in its own fresh process (so peak RSS is its own); the time is the
training call alone (file reading included where the tool reads the file itself).
Medians of --runs runs, with their spread, and ratios to bpekit. Results go to
``--results`` (default benchmarks/results) as ``train-<corpus>-<vocab>.json`` or
``count-<corpus>.json``; ``report.py`` makes the tables.

    python benchmarks/train_compare.py --corpus ts --vocab-size 10000
    python benchmarks/train_compare.py --corpus en-small --vocab-size 32000
    python benchmarks/train_compare.py --count --corpus en --vocab-size 32000
    python benchmarks/train_compare.py --cs336       # corpus.en at 500, bpekit only

Peers (pip install rustbpe tokenizers gigatoken sentencepiece) are skipped when missing.
``PYTHONPATH=DIR`` times the bpekit in DIR (the workers inherit it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    EOT,
    RESULTS,
    add_ratios,
    command,
    corpus_path,
    data_dir,
    peak_rss_mib,
    run_worker,
    time_fields,
    tool_version,
    write_result,
)

GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
TOOLS = ["bpekit", "rustbpe", "sentencepiece", "tokenizers", "gigatoken"]
NAMES = {"tokenizers": "HF tokenizers"}  # tool -> the name in the results
PATTERNS = ["gpt2", "cl100k", "o200k"]


def train_once(tool: str, path: str, vocab_size: int, threads: int | None) -> float:
    """Trains once; returns the seconds the training call took."""
    if tool == "bpekit":
        import bpekit

        t = time.perf_counter()
        bpekit.train_bpe(path, vocab_size, [EOT], num_threads=threads)
        return time.perf_counter() - t
    if tool == "rustbpe":
        import rustbpe  # type: ignore[import-not-found]

        docs = Path(path).read_text(encoding="utf-8").split(EOT)
        tok = rustbpe.Tokenizer()
        t = time.perf_counter()
        tok.train_from_iterator(iter(docs), vocab_size, pattern=GPT2)
        return time.perf_counter() - t
    if tool == "tokenizers":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers  # type: ignore[import-untyped]

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(GPT2), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=[EOT],
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
        t = time.perf_counter()
        tok.train([path], trainer)
        return time.perf_counter() - t
    if tool == "gigatoken":
        import gigatoken

        t = time.perf_counter()
        gigatoken.train_bpe(gigatoken.TextFileSource([path], separator=EOT), vocab_size, [EOT])
        return time.perf_counter() - t
    if tool == "sentencepiece":
        import sentencepiece as spm  # type: ignore[import-not-found]

        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            spm.SentencePieceTrainer.train(
                input=path,
                model_prefix=os.path.join(tmp, "m"),
                vocab_size=vocab_size,
                model_type="bpe",
                character_coverage=1.0,
                byte_fallback=True,
                minloglevel=2,
                num_threads=threads or os.cpu_count(),
                max_sentence_length=1 << 20,
                input_sentence_size=0,
                train_extremely_large_corpus=False,
            )
            return time.perf_counter() - t
    raise ValueError(tool)


def count_once(path: str, pattern: str, threads: int | None) -> float:
    import bpekit

    t = time.perf_counter()
    bpekit.count_pretokens(path, [EOT], pattern=pattern, num_threads=threads)
    return time.perf_counter() - t


def merge_once(path: str, vocab_size: int) -> float:
    """The merge loop alone: ``train_from_counts`` on counts made beforehand."""
    import bpekit

    counts = bpekit.count_pretokens(path, [EOT])
    t = time.perf_counter()
    bpekit.train_from_counts(counts, vocab_size, [EOT])
    return time.perf_counter() - t


def worker(args: list[str]) -> None:
    """``train TOOL PATH VOCAB THREADS`` | ``count PATH PATTERN THREADS`` | ``merge PATH VOCAB``."""
    job, rest = args[0], args[1:]
    if job == "train":
        tool, path, vocab, threads = rest[0], rest[1], int(rest[2]), (int(rest[3]) or None)
        seconds = train_once(tool, path, vocab, threads)
    elif job == "count":
        tool, seconds = "bpekit", count_once(rest[0], rest[1], int(rest[2]) or None)
    elif job == "merge":
        tool, seconds = "bpekit", merge_once(rest[0], int(rest[1]))
    else:
        raise ValueError(job)
    version = tool_version(NAMES.get(tool, tool))
    print(json.dumps({"seconds": seconds, "peak_rss_mib": peak_rss_mib(), "version": version}))


def measure(job: list[str], runs: int) -> dict[str, Any] | None:
    """``runs`` fresh processes of one job: median seconds, spread, peak RSS, version."""
    results = [run_worker(Path(__file__), job) for _ in range(runs)]
    found = [r for r in results if r]
    if not found:
        return None
    return {
        "version": found[0]["version"],
        **time_fields([r["seconds"] for r in found]),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in found),
    }


def print_row(row: dict[str, Any]) -> None:
    label = f"{row['tool']} {row.get('case', '')}".strip()
    print(
        f"  {label:34s} {row['seconds']:8.3f} s  (min {row['seconds_min']:.3f}, max {row['seconds_max']:.3f})"
        f"  {row['throughput']:8.1f} MB/s  peak RSS {row['peak_rss_mib']:6.0f} MiB",
        flush=True,
    )


def train_workload(args: argparse.Namespace, path: Path, name: str) -> None:
    mb = path.stat().st_size / 1e6
    rows = []
    for tool in args.tools.split(","):
        if importlib.util.find_spec(tool) is None:
            print(f"  {tool}: not installed, skipped")
            continue
        m = measure(["train", tool, str(path), str(args.vocab_size), str(args.threads)], args.runs)
        if m is None:
            continue
        row = {"tool": NAMES.get(tool, tool), "case": "", **m, "throughput": mb / m["seconds"], "note": ""}
        rows.append(row)
        print_row(row)
    if args.cs336:
        cmd_args = ["--cs336", "--runs", str(args.runs)]
    else:
        cmd_args = ["--corpus", args.corpus, "--vocab-size", str(args.vocab_size), "--runs", str(args.runs)]
        cmd_args += ["--tools", args.tools] if args.tools != ",".join(TOOLS) else []
    cmd_args += ["--threads", str(args.threads)] if args.threads else []
    threads = f"{args.threads} threads" if args.threads else "all cores"
    size = f"{args.vocab_size // 1000}k" if args.vocab_size % 1000 == 0 else str(args.vocab_size)
    write_result(
        args.results,
        f"train-{name}-{size}",
        title=f"Training: {name}, vocabulary {args.vocab_size:,}",
        description=(
            f"A byte-level BPE vocabulary of {args.vocab_size:,} tokens with `<|endoftext|>` as special "
            f"token and GPT-2's pre-tokenizer pattern, trained from the file ({threads} for the tools "
            "that take a thread count). Time: the training call; throughput: corpus MB per second."
        ),
        command=command("train_compare.py", cmd_args),
        corpus={"name": name, "bytes": path.stat().st_size},
        unit="MB/s",
        rows=add_ratios(rows),
    )


def count_workload(args: argparse.Namespace, path: Path, name: str) -> None:
    mb = path.stat().st_size / 1e6
    rows = []
    for pattern in PATTERNS:
        for threads in (1, 2):
            m = measure(["count", str(path), pattern, str(threads)], args.runs)
            if m is None:
                continue
            case = f"count_pretokens, {pattern}, {threads} thread{'s' if threads > 1 else ''}"
            row = {"tool": "bpekit", "case": case, **m, "throughput": mb / m["seconds"], "ratio": None}
            row["note"] = ""
            rows.append(row)
            print_row(row)
    m = measure(["merge", str(path), str(args.vocab_size)], args.runs)
    if m is not None:
        case = f"merge loop to {args.vocab_size:,} (train_from_counts, gpt2 counts)"
        row = {"tool": "bpekit", "case": case, **m, "throughput": None, "ratio": None, "note": ""}
        rows.append(row)
        print(f"  {case}: {m['seconds']:.3f} s")
    cmd_args = ["--corpus", args.corpus, "--vocab-size", str(args.vocab_size), "--runs", str(args.runs)]
    write_result(
        args.results,
        f"count-{name}",
        title=f"Counting pre-tokens and the merge loop: {name}",
        description=(
            "bpekit's two training phases on their own, each in a fresh process: "
            "`count_pretokens` (read, split on `<|endoftext|>`, pre-tokenize, count) with each named "
            f"pattern on 1 and 2 threads, and `train_from_counts` to {args.vocab_size:,} tokens on the "
            "gpt2 counts (counting untimed). No peer exposes these phases apart."
        ),
        command=command("train_compare.py", ["--count", *cmd_args]),
        corpus={"name": name, "bytes": path.stat().st_size},
        unit="MB/s",
        rows=rows,
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="ts", help="ts | en-small | en | ml | a file path")
    p.add_argument("--vocab-size", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="threads for tools that take it (0 = all)")
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--count", action="store_true", help="bpekit's counting and merge loop apart")
    p.add_argument("--cs336", action="store_true", help="time CS336's corpus.en at vocab 500 (bpekit only)")
    p.add_argument("--data", default=None, help="data folder (default: $BPEKIT_DATA or ../shared/data)")
    p.add_argument("--results", type=Path, default=RESULTS, help="folder for the result files")
    args = p.parse_args()

    if args.cs336:
        path = data_dir(args.data) / "cs336" / "corpus.en"
        args.corpus, args.vocab_size, args.tools = str(path), 500, "bpekit"
    if Path(args.corpus).exists():
        path = Path(args.corpus)
        name = path.name
    else:
        path, name = corpus_path(args.corpus, data=args.data), args.corpus
    print(
        f"corpus {path} ({path.stat().st_size / 1e6:,.1f} MB), vocab {args.vocab_size:,}, "
        f"{args.runs} runs each, {os.cpu_count()} cores"
    )
    if args.count:
        count_workload(args, path, name)
    else:
        train_workload(args, path, name)


if __name__ == "__main__":
    main()
