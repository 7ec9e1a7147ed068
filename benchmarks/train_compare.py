"""Training speed and memory: bpekit beside the installed peers, same corpus, same vocab size.

Each tool trains in its own fresh process (so peak RSS is its own); the time is the
training call alone (file reading included where the tool reads the file itself).
Medians of --runs runs, with their spread, and ratios to bpekit.

    python benchmarks/train_compare.py --corpus ts --vocab-size 10000
    python benchmarks/train_compare.py --corpus en-small --vocab-size 32000
    python benchmarks/train_compare.py --cs336       # corpus.en at 500 and count throughput

Peers (pip install rustbpe tokenizers gigatoken sentencepiece) are skipped when missing.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED, corpus_path, peak_rss_mib, run_worker, summarize

GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"
TOOLS = ["bpekit", "rustbpe", "sentencepiece", "tokenizers", "gigatoken"]
MODULE = {
    "bpekit": "bpekit",
    "rustbpe": "rustbpe",
    "sentencepiece": "sentencepiece",
    "tokenizers": "tokenizers",
    "gigatoken": "gigatoken",
}


def train_once(tool: str, path: str, vocab_size: int, threads: int | None) -> float:
    """Trains once; returns the seconds the training call took."""
    if tool == "bpekit":
        import bpekit

        t = time.perf_counter()
        bpekit.train_bpe(path, vocab_size, [EOT], num_threads=threads)
        return time.perf_counter() - t
    if tool == "rustbpe":
        import rustbpe

        docs = Path(path).read_text(encoding="utf-8").split(EOT)
        tok = rustbpe.Tokenizer()
        t = time.perf_counter()
        tok.train_from_iterator(iter(docs), vocab_size, pattern=GPT2)
        return time.perf_counter() - t
    if tool == "tokenizers":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

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
        import sentencepiece as spm

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


def worker(args: list[str]) -> None:
    tool, path, vocab, threads = args[0], args[1], int(args[2]), (int(args[3]) or None)
    seconds = train_once(tool, path, vocab, threads)
    print(json.dumps({"seconds": seconds, "peak_rss_mib": peak_rss_mib()}))


def _timed(fn, *args, **kwargs) -> tuple[object, float]:
    t0 = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - t0


def phases(path: Path, vocab_size: int) -> None:
    """bpekit's time split between counting and merging, and counting MB/s per thread count."""
    import bpekit

    size_mb = path.stat().st_size / 1e6
    for threads in (1, 2):
        best = min(_timed(bpekit.count_pretokens, path, [EOT], num_threads=threads)[1] for _ in range(3))
        print(f"  count_pretokens {threads} thread(s): {best:.3f} s  {size_mb / best:,.0f} MB/s")
    counts = bpekit.count_pretokens(path, [EOT])
    _, merge_s = _timed(bpekit.train_from_counts, counts, vocab_size, [EOT])
    merges = vocab_size - 257
    print(f"  merge loop: {merge_s:.3f} s for up to {merges:,} merges, {len(counts):,} unique pre-tokens")


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
    p.add_argument("--cs336", action="store_true", help="time corpus.en at vocab 500 (bpekit only)")
    args = p.parse_args()

    if args.cs336:
        path = SHARED / "data" / "cs336" / "corpus.en"
        args.corpus, args.vocab_size, args.tools = str(path), 500, "bpekit"
    path = Path(args.corpus) if Path(args.corpus).exists() else corpus_path(args.corpus)
    size_mb = path.stat().st_size / 1e6
    print(
        f"corpus {path} ({size_mb:,.1f} MB), vocab {args.vocab_size:,}, {args.runs} runs each, "
        f"{os.cpu_count()} cores"
    )
    results = {}
    for tool in args.tools.split(","):
        if importlib.util.find_spec(MODULE[tool]) is None:
            print(f"  {tool}: not installed, skipped")
            continue
        runs = [
            run_worker(Path(__file__), [tool, str(path), str(args.vocab_size), str(args.threads)])
            for _ in range(args.runs)
        ]
        runs = [r for r in runs if r]
        if not runs:
            continue
        med, lo, hi = summarize([r["seconds"] for r in runs])
        rss = max(r["peak_rss_mib"] for r in runs)
        results[tool] = (med, rss)
        print(f"  {tool:14s} {med:8.3f} s  (min {lo:.3f}, max {hi:.3f})  peak RSS {rss:7.0f} MiB")
    if "bpekit" in results:
        base, base_rss = results["bpekit"]
        print("ratios (peer time / bpekit time, peer RSS / bpekit RSS):")
        for tool, (sec, rss) in results.items():
            if tool != "bpekit":
                print(f"  {tool:14s} {sec / base:6.1f}x slower   {rss / base_rss:5.2f}x memory")
        phases(path, args.vocab_size)


if __name__ == "__main__":
    main()
