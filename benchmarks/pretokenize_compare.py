"""Pre-tokenizer throughput: each named pattern's scanner vs the regex engine on the same pattern.

Usage: python benchmarks/pretokenize_compare.py [--repeat N] [--no-regex] [--results DIR]

Corpora (``benchmarks/corpora.py``, built when missing): en-small (English, prose
first, 18.8 MB), ml (multilingual, 24.6 MB) and cjk (the lines of fortunes_zh.txt and
wagahaiwa_nekodearu_ja.txt that are mostly CJK characters). Each figure times the split
alone on one thread (``_core._time_pretokenize``: no decoding, no Python objects): the
median of --repeat runs for the scanners, one run for the regex engine (~7 MB/s). The
regex engine is timed on the pattern text wrapped in ``(?:...)``, which changes no match
but is not recognised as a named pattern, so it goes through fancy-regex. Counting
(``count_pretokens``) is timed by ``train_compare.py --count``. Results go to
``--results``/pretokenize-<corpus>.json; this runs in-process, so
``PYTHONPATH=DIR`` times the bpekit in DIR.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, add_ratios, command, corpus_path, time_fields, tool_version, write_result
from bpekit import _core, patterns

NAMES = ["gpt2", "cl100k", "o200k"]
CORPORA = ["en-small", "ml", "cjk"]


def time_split(text: bytes, pattern: str, runs: int) -> dict[str, Any]:
    """``runs`` timed splits of ``text``: median, spread, and the piece count."""
    times, pieces = [], 0
    for _ in range(runs):
        pieces, seconds = _core._time_pretokenize(text, pattern, 1)
        times.append(seconds)
    return {**time_fields(times), "pieces": pieces}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per scanner figure (the median is kept)")
    ap.add_argument("--bench-dir", type=Path, default=None, help="corpora (default: $BPEKIT_BENCH_DIR)")
    ap.add_argument("--data", default=None, help="data folder (default: $BPEKIT_DATA or ../shared/data)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder for the result files")
    ap.add_argument("--no-regex", action="store_true", help="skip the (slow) regex-engine figures")
    args = ap.parse_args()

    # BPEKIT_SIMD=baseline in the environment times the SSE2 kernel instead, and
    # BPEKIT_SIMD=avx2 the AVX2 one on a CPU with AVX-512.
    kernel = _core.scanner_kernel()
    version = tool_version("bpekit")
    print(f"scanner block kernel: {kernel}")
    cmd = ["--repeat", str(args.repeat)] + (["--no-regex"] if args.no_regex else [])
    for corpus in CORPORA:
        path = corpus_path(corpus, out=args.bench_dir, data=args.data)
        text = path.read_bytes()
        mb = len(text) / 1e6
        rows = []
        for name in NAMES:
            engines = [("bpekit", name, args.repeat, f"scanner, {kernel} block kernel")]
            if not args.no_regex:
                engines.append(("fancy-regex", f"(?:{patterns.resolve(name)})", 1, "bpekit's regex fallback"))
            for tool, pattern, runs, note in engines:
                m = time_split(text, pattern, runs)
                row = {
                    "tool": tool,
                    "case": name,
                    "version": version if tool == "bpekit" else f"(in bpekit {version})",
                    **m,
                }
                row.update(throughput=mb / m["seconds"], peak_rss_mib=None, note=note)
                rows.append(row)
                print(f"  {corpus:9s} {name:7s} {tool:12s} {row['throughput']:8.0f} MB/s", flush=True)
        write_result(
            args.results,
            f"pretokenize-{corpus}",
            title=f"Pre-tokenizing: {corpus}",
            description=(
                "Splitting text into pre-tokens on one thread, no Python objects: each named "
                "pattern's hand-written scanner against the generic regex engine (fancy-regex, "
                "what tiktoken runs) on the same pattern text. The scanner's time is the median "
                f"of {args.repeat} runs; the regex engine's, one run."
            ),
            command=command("pretokenize_compare.py", cmd),
            corpus={"name": corpus, "bytes": len(text)},
            unit="MB/s",
            rows=add_ratios(rows),
        )


if __name__ == "__main__":
    main()
