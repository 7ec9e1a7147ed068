"""Training minbpe's ``RegexTokenizer`` (GPT-4 split pattern) on 1 MB of text to 1,024
tokens: ``bpekit.minbpe`` against minbpe's own algorithm, in one run.

    python benchmarks/minbpe_compare.py [--mb 1] [--vocab-size 1024] [--rounds 3]

The baseline is minbpe's training loop as minbpe's source has it
(``tests/_minbpe_reference.py``: every merge recounts every pair of every chunk in
Python), which is what ``pip install``-free minbpe runs; it runs once (about ten
minutes on 1 MB), bpekit ``--rounds`` times (median). The merges are compared: they
must be identical. ``BasicTokenizer`` (no split; bpekit on numpy arrays) is timed the
same way on the first 100 KB to 512 tokens.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from _common import (
    REPO,
    RESULTS,
    command,
    corpus_prefix,
    peak_rss_mib,
    time_fields,
    tool_version,
    write_result,
)

sys.path.insert(0, str(REPO / "tests"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--vocab-size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()

    import _minbpe_reference as ref  # type: ignore[import-not-found]

    from bpekit.minbpe import GPT4_SPLIT_PATTERN, BasicTokenizer, RegexTokenizer

    text = corpus_prefix("en-small", args.mb)
    size = len(text.encode("utf-8"))
    rows = []
    for name, factory, sample, vocab_size, reference in [
        (
            "RegexTokenizer",
            RegexTokenizer,
            text,
            args.vocab_size,
            lambda t, n: ref.train_regex(t, n, GPT4_SPLIT_PATTERN),
        ),
        ("BasicTokenizer", BasicTokenizer, text[:100_000], 512, ref.train_basic),
    ]:
        times = []
        for _ in range(args.rounds):
            tok = factory()
            t0 = time.perf_counter()
            tok.train(sample, vocab_size)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        want = reference(sample, vocab_size)
        ref_time = time.perf_counter() - t0
        same = "same" if want == tok.merges else "DIFFERENT"
        nbytes = len(sample.encode("utf-8"))
        case = f"{name}, {nbytes / 1e6:g} MB -> {vocab_size} tokens"
        med = statistics.median(times)
        rows.append(
            {
                "tool": "bpekit",
                "case": case,
                "version": tool_version("bpekit"),
                **time_fields(times),
                "throughput": nbytes / med / 1e6,
                "ratio": 1.0,
                "note": f"merges {same}",
            }
        )
        rows.append(
            {
                "tool": "minbpe (its algorithm)",
                "case": case,
                "version": "karpathy/minbpe",
                "seconds": ref_time,
                "runs": 1,
                "throughput": nbytes / ref_time / 1e6,
                "ratio": ref_time / med,
                "note": f"merges {same}",
            }
        )
        print(
            f"{case}: bpekit {med:.2f} s, minbpe {ref_time:.1f} s ({ref_time / med:.0f}x), merges {same}",
            flush=True,
        )
    write_result(
        args.results,
        "train-minbpe",
        title="Training minbpe's tokenizers",
        description=(
            "`bpekit.minbpe.RegexTokenizer.train` (GPT-4 split pattern) and `BasicTokenizer.train` against "
            "minbpe's own training loop (`tests/_minbpe_reference.py`, minbpe's algorithm: every merge "
            "recounts every pair in Python), on the start of the `en-small` corpus; the merges must be "
            "identical (minbpe breaks ties by first occurrence). bpekit: median of "
            f"{args.rounds} runs; minbpe: one run. Peak RSS of the whole process: "
            f"{peak_rss_mib():,.0f} MiB."
        ),
        command=command("minbpe_compare.py", [f"--mb={args.mb:g}", f"--vocab-size={args.vocab_size}"]),
        corpus={"name": "en-small", "bytes": size},
        unit="MB/s",
        rows=rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
