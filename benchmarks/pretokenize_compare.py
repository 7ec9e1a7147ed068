"""Pre-tokenizer throughput: each named pattern's scanner vs the regex engine on the same
pattern, and ``count_pretokens`` with 1 and 2 threads.

Usage: .venv/bin/python benchmarks/pretokenize_compare.py [--repeat N] [--bench-dir DIR]

Corpora: en-small (English prose first, 18.8 MB) and ml (multilingual, 24.6 MB) from
``../shared/bench/make_corpora.py`` (built if missing), and cjk: the lines of
``fortunes_zh.txt`` and ``wagahaiwa_nekodearu_ja.txt`` that are mostly CJK characters.
Figures are MB/s (10^6 bytes of UTF-8 per second) on one thread, the best of N runs of
the split alone (``_core._time_pretokenize``: no decoding, no Python objects). The regex
engine is timed on the pattern text wrapped in ``(?:...)``, which changes no match but
is not recognised as a named pattern, so it goes through fancy-regex.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import bpekit
from bpekit import _core, patterns

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
NAMES = ["gpt2", "cl100k", "o200k"]


def corpora(bench_dir: Path) -> dict[str, bytes]:
    if not all((bench_dir / f"{n}.txt").exists() for n in ["en-small", "ml"]):
        subprocess.run([sys.executable, SHARED / "bench" / "make_corpora.py", bench_dir], check=True)
    out = {n: (bench_dir / f"{n}.txt").read_bytes() for n in ["en-small", "ml"]}
    cjk = []
    for name in ["fortunes_zh.txt", "wagahaiwa_nekodearu_ja.txt"]:
        for line in (SHARED / "data" / "multilingual" / name).read_text(encoding="utf-8").splitlines(True):
            chars = [c for c in line if not c.isspace()]
            if chars and sum(c >= "\u2e80" for c in chars) >= 0.8 * len(chars):
                cjk.append(line)
    out["cjk"] = "".join(cjk).encode("utf-8")
    return out


def mb_s(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e6


def machine() -> str:
    model = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor(),
    )
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--repeat", type=int, default=5, help="runs per scanner and counting figure (best is kept)"
    )
    ap.add_argument(
        "--bench-dir", type=Path, default=Path(os.environ.get("BPEKIT_BENCH_DIR", "/tmp/bpekit_bench"))
    )
    ap.add_argument("--no-regex", action="store_true", help="skip the (slow) regex-engine figures")
    args = ap.parse_args()

    data = corpora(args.bench_dir)
    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {machine()}")
    # BPEKIT_SIMD=baseline in the environment times the SSE2 kernel instead.
    print(f"scanner block kernel: {_core.scanner_kernel()}")
    print("corpus sizes: " + ", ".join(f"{k} {len(v) / 1e6:.1f} MB" for k, v in data.items()))
    print()
    print(f"{'pattern':8s} {'engine':8s} " + " ".join(f"{k:>10s}" for k in data) + "   (MB/s, 1 thread)")
    for name in NAMES:
        rows = [("scanner", name, args.repeat)]
        if not args.no_regex:
            rows.append(("regex", f"(?:{patterns.resolve(name)})", 1))
        for engine, pattern, repeat in rows:
            cells = []
            for text in data.values():
                _, secs = _core._time_pretokenize(text, pattern, repeat)
                cells.append(f"{mb_s(len(text), secs):10.0f}")
            print(f"{name:8s} {engine:8s} " + " ".join(cells), flush=True)

    print()
    path = args.bench_dir / "en-small.txt"
    size = path.stat().st_size
    for name in NAMES:
        for threads in [1, 2]:
            best = float("inf")
            for _ in range(args.repeat):
                counts = None  # free the last result outside the timed call
                t0 = time.perf_counter()
                counts = bpekit.count_pretokens(path, ["<|endoftext|>"], pattern=name, num_threads=threads)
                best = min(best, time.perf_counter() - t0)
            print(
                f"count_pretokens {name:7s} en-small, {threads} thread(s): {mb_s(size, best):6.0f} MB/s "
                f"({mb_s(size, best) / threads:.0f} per thread; {len(counts):,} distinct pieces)",
                flush=True,
            )


if __name__ == "__main__":
    main()
