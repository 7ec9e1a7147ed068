"""Helpers shared by the benchmark scripts: corpora, the machine, child-process timing,
and the result files that ``report.py`` turns into ``benchmarks/README.md``.

A result file is ``<results>/<workload>.json``::

    {"workload": "train-ts-10k", "title": ..., "description": ...,
     "command": "python benchmarks/train_compare.py --corpus ts ...",
     "date": "2026-01-01 12:00 UTC", "machine": {"cpu": ..., "cores": 2, ...},
     "corpus": {"name": "ts", "bytes": 2097152}, "unit": "MB/s",
     "rows": [{"tool": "bpekit", "version": "0.1.0 (abc1234)", "case": "",
               "seconds": 0.02, "seconds_min": 0.02, "seconds_max": 0.03, "runs": 3,
               "throughput": 100.0, "ratio": 1.0, "peak_rss_mib": 24.0, "note": ""}, ...]}

``ratio`` is the row's median time over bpekit's in the same ``case`` (``None`` where
bpekit has no such case). Workers run in fresh processes with this process's
environment, so ``PYTHONPATH=DIR python benchmarks/X.py`` times the bpekit in DIR.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

from corpora import bench_dir, corpus_path, data_dir

__all__ = [
    "REPO",
    "RESULTS",
    "add_ratios",
    "bench_dir",
    "command",
    "corpus_path",
    "data_dir",
    "encodings_env",
    "machine",
    "peak_rss_mib",
    "run_worker",
    "summarize",
    "tool_version",
    "write_result",
]

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
# The Python distribution of each tool, for its version.
DISTRIBUTIONS = {"HF tokenizers": "tokenizers"}


def machine() -> dict:
    """The CPU model, cores, memory, OS and Python of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    memory_gib = None
    try:
        with open("/proc/meminfo") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
        memory_gib = round(kib / 2**20, 1)
    except (OSError, StopIteration, ValueError):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory_gib,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def tool_version(tool: str) -> str:
    """``tool``'s version as this process imports it. bpekit's adds the commit of the
    checkout it is imported from (``+dirty`` when its sources differ from that commit),
    so a run against another build (``PYTHONPATH``) says which one it timed."""
    if tool != "bpekit":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(DISTRIBUTIONS.get(tool, tool))
        except PackageNotFoundError:
            return "?"
    import bpekit

    here = Path(bpekit.__file__).resolve().parent
    try:
        top = Path(_git("rev-parse", "--show-toplevel", cwd=here))
        commit = _git("rev-parse", "--short=10", "HEAD", cwd=top)
        paths = ["src", "python", "Cargo.toml", "Cargo.lock", "pyproject.toml"]
        dirty = _git("status", "--porcelain", "--untracked-files=no", "--", *paths, cwd=top)
    except (OSError, subprocess.CalledProcessError):
        return bpekit.__version__
    return f"{bpekit.__version__} ({commit}{'+dirty' if dirty else ''})"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def encodings_env(data: Path | None = None) -> dict[str, str]:
    """This environment, with ``BPEKIT_ENCODINGS`` pointing at the data folder's
    encodings when it is not set (bpekit looks nowhere else but tiktoken's cache)."""
    env = dict(os.environ)
    if not env.get("BPEKIT_ENCODINGS"):
        env["BPEKIT_ENCODINGS"] = str(data_dir(data) / "encodings")
    return env


def run_worker(script: Path, args: list[str], env: dict[str, str] | None = None) -> dict | None:
    """Runs ``script --worker ARGS`` in a fresh process; its last stdout line is JSON."""
    cmd = [sys.executable, str(script), "--worker", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"  ! {' '.join(args)} failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summarize(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def add_ratios(rows: list[dict]) -> list[dict]:
    """Sets each row's ``ratio``: its median time over bpekit's in the same case."""
    base = {r.get("case", ""): r["seconds"] for r in rows if r["tool"] == "bpekit"}
    for r in rows:
        b = base.get(r.get("case", ""))
        r["ratio"] = r["seconds"] / b if b else None
    return rows


def command(script: str, args: list[str]) -> str:
    """The command line that regenerates a result, as run from the repository root."""
    return shlex.join(["python", f"benchmarks/{script}", *args])


def _rounded(value):
    """``value`` with every float to 4 significant digits (the noise is larger)."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def write_result(results: Path, workload: str, **fields) -> Path:
    """Writes ``results/<workload>.json`` with the machine and the date (UTC) added."""
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    payload = _rounded({"workload": workload, **fields, "date": date, "machine": machine()})
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{workload}.json"
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"  -> {path}")
    return path
