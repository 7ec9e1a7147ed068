"""Helpers shared by the benchmark scripts: corpora, child-process timing, tables."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BENCH_DIR = Path(os.environ.get("BPEKIT_BENCH_DIR", "/tmp/bpekit_bench"))
CORPORA = ("ts", "en-small", "en", "ml")


def corpus_path(name: str) -> Path:
    """The shared benchmark corpus ``name``, built by ../shared/bench/make_corpora.py if missing."""
    path = BENCH_DIR / f"{name}.txt"
    if not path.exists():
        maker = SHARED / "bench" / "make_corpora.py"
        if not maker.exists():
            sys.exit(f"corpus {path} is missing and {maker} is not there to build it")
        subprocess.run([sys.executable, str(maker), str(BENCH_DIR)], check=True)
    return path


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_worker(script: Path, args: list[str]) -> dict | None:
    """Runs ``script --worker ARGS`` in a fresh process; its last stdout line is JSON."""
    proc = subprocess.run([sys.executable, str(script), "--worker", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  ! {' '.join(args)} failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summarize(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)
