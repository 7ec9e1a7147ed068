"""Helpers shared by the benchmark scripts: the corpora and the data folder, the machine
and the tools' versions, fresh worker processes, timing figures, and the result files
that ``report.py`` turns into ``benchmarks/README.md`` (memory figures: ``_memory.py``).

A result file is ``<results>/<workload>.json``::

    {"workload": "train-ts-10k", "title": ..., "description": ...,
     "command": "python benchmarks/train_compare.py --corpus ts ...",
     "date": "2026-01-01 12:00 UTC", "machine": {"cpu": ..., "cores": 2, ...},
     "corpus": {"name": "ts", "bytes": 2097152}, "unit": "MB/s",
     "rows": [{"tool": "bpekit", "version": "0.1.0 (abc1234)", "case": "",
               "seconds": 0.02, "seconds_min": 0.02, "seconds_max": 0.03, "runs": 3,
               "throughput": 100.0, "ratio": 1.0, "peak_rss_mib": 24.0, "note": ""}, ...]}

``ratio`` is the row's median time over bpekit's in the same ``case`` (``None`` where
bpekit has no such case). A result may lay out its own tables instead (``"tables"``:
see ``table``). Workers run in fresh processes with this process's environment, so
``PYTHONPATH=DIR python benchmarks/X.py`` times the bpekit in DIR.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib
import json
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from corpora import DOC_SEP, bench_dir, corpus_path, data_dir

__all__ = [
    "DOC_SEP",
    "EOT",
    "REPO",
    "RESULTS",
    "MiB",
    "Targets",
    "add_ratios",
    "bench_dir",
    "big_corpus",
    "call_worker",
    "columns",
    "command",
    "corpus_path",
    "corpus_prefix",
    "data_dir",
    "encodings_env",
    "encodings_folder",
    "gpt2_tokenizer_json",
    "machine",
    "make_big_script",
    "median_ratio",
    "peak_rss_mib",
    "read_through",
    "remove",
    "report_problems",
    "results_dir",
    "rotated",
    "run_worker",
    "serve_worker",
    "sha256_file",
    "slope",
    "table",
    "tiktoken_encoding",
    "time_fields",
    "tool_version",
    "warm_fields",
    "write_atomic",
    "write_result",
    "yes",
]

T = TypeVar("T")
Row = dict[str, Any]

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
EOT = "<|endoftext|>"
MiB = 1 << 20
# The Python distribution of each tool, for its version.
DISTRIBUTIONS = {"HF tokenizers": "tokenizers"}
# make_big.py's corpora: KIND-SIZE, KIND owt or ts, SIZE as make_big.py takes it (1G, 500M).
BIG_NAME = re.compile(r"^(owt|ts)-(\d+(?:\.\d+)?[KMG]?)$")


# --- The machine and the tools -------------------------------------------------------


def machine() -> dict[str, Any]:
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


def encodings_env(data: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """This environment, with ``BPEKIT_ENCODINGS`` pointing at the data folder's
    encodings when it is not set (bpekit looks nowhere else but tiktoken's cache)."""
    env = dict(os.environ)
    if not env.get("BPEKIT_ENCODINGS"):
        env["BPEKIT_ENCODINGS"] = str(data_dir(data) / "encodings")
    return env


def encodings_folder() -> Path:
    """The folder of the rank files: the first of ``$BPEKIT_ENCODINGS`` (the driver sets it)."""
    return Path(os.environ["BPEKIT_ENCODINGS"].split(os.pathsep)[0])


def tiktoken_encoding(name: str) -> Any:
    """tiktoken's encoding ``name``, built offline from the rank files of
    ``encodings_folder()`` with tiktoken's own pattern (as the tests build it)."""
    tests = str(REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    return importlib.import_module("_shared_data").build_tiktoken(name, encodings_folder())


def gpt2_tokenizer_json(path: Path, data: Path, hub: bool = False) -> Path:
    """GPT-2's ``tokenizer.json`` at ``path``, built with HF ``tokenizers`` from the shared
    vocab.json and merges.txt (``hub``: with the ByteLevel post-processor
    ``openai-community/gpt2`` ships, which changes no id)."""
    import tokenizers  # type: ignore[import-untyped]
    from tokenizers import decoders, models, pre_tokenizers, processors

    cs336 = data / "cs336"
    tok = tokenizers.Tokenizer(
        models.BPE.from_file(str(cs336 / "gpt2_vocab.json"), str(cs336 / "gpt2_merges.txt"))
    )
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if hub:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens([EOT])
    tok.save(str(path))
    return path


def sp_tokenizer_json(path: Path, data: Path) -> Path:
    """A SentencePiece-style BPE ``tokenizer.json`` at ``path``, as Llama 2 and Mistral
    ship theirs: a 32K sentencepiece BPE with ``byte_fallback``, trained (~3 s) on 6 MB
    of the shared English corpora, converted by transformers' ``LlamaConverter``
    (``Metaspace``, ``prepend_scheme`` "first", no split), ``<|endoftext|>`` added."""
    import tempfile
    import warnings

    import sentencepiece as spm  # type: ignore[import-untyped]
    import tokenizers
    from transformers import LlamaTokenizer  # type: ignore[import-untyped]
    from transformers.convert_slow_tokenizer import LlamaConverter  # type: ignore[import-untyped]

    names = ["tinystories_v2_train_head_2MiB.txt", "gutenberg_grimms_fairy_tales.txt", "nltk_webtext.txt"]
    names += ["linux_6.1_docs_en.txt", "taylorswift_wikipedia_en.txt"]
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "train.txt"
        with open(text, "wb") as f:
            for name in names:
                f.write((data / "corpora" / name).read_bytes()[:1_200_000] + b"\n")
        spm.SentencePieceTrainer.train(
            input=str(text),
            model_prefix=str(Path(tmp) / "sp"),
            model_type="bpe",
            vocab_size=32000,
            byte_fallback=True,
            num_threads=1,
            minloglevel=2,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = LlamaConverter(LlamaTokenizer(str(Path(tmp) / "sp.model"), legacy=False)).converted()
    tok.add_special_tokens([tokenizers.AddedToken(EOT, special=True)])
    tok.save(str(path))
    return path


# --- Files and corpora ---------------------------------------------------------------


def corpus_prefix(name: str, mb: float) -> str:
    """The first ``mb`` MB of the corpus ``name`` as text (a character cut at the end dropped)."""
    return corpus_path(name).read_bytes()[: int(mb * 1e6)].decode("utf-8", errors="ignore")


def make_big_script(given: Path | None, data: str | os.PathLike[str] | None) -> Path:
    """make_big.py: ``given``, else ``../shared/bench/`` beside the data folder."""
    return given or data_dir(data).parent / "bench" / "make_big.py"


def big_corpus(name: str, bench: Path, make_big: Path, log: Callable[[str], None] | None = None) -> Path:
    """``bench/NAME.txt`` for a NAME ``KIND-SIZE`` (``owt-1G``), made by make_big.py when
    missing (its progress to stderr, ``log`` told when it starts and ends)."""
    say = log or (lambda message: print(message, flush=True))
    m = BIG_NAME.match(name)
    if not m:
        raise SystemExit(f"corpus {name!r}: use KIND-SIZE, KIND owt or ts, SIZE as make_big.py takes (1G)")
    path = bench / f"{name}.txt"
    if path.is_file():
        return path
    if not make_big.is_file():
        raise SystemExit(f"{path} is missing and so is {make_big} to build it: use --make-big PATH")
    say(f"building {path} with {make_big.name} {m.group(1)} {m.group(2)} ...")
    t = time.perf_counter()
    env = dict(os.environ, BPEKIT_BENCH_DIR=str(bench))
    cmd = [sys.executable, str(make_big), m.group(1), m.group(2), str(path)]
    subprocess.run(cmd, check=True, env=env, stdout=sys.stderr)
    say(f"  built in {time.perf_counter() - t:.0f} s")
    return path


def read_through(path: Path) -> float:
    """Reads ``path`` once (into the page cache); its seconds."""
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(16 * MiB)
        while f.readinto(buf):
            pass
    return time.perf_counter() - t


def write_atomic(path: Path, content: bytes | Callable[[Path], object]) -> None:
    """Writes ``content`` (bytes, or a function that writes the file it is given) under a
    temporary name with ``path``'s suffix, then renames it, so a file there is whole."""
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.part{path.suffix}")
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        content(tmp)
    tmp.replace(path)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(16 * MiB):
            h.update(block)
    return h.hexdigest()


def remove(path: Path) -> None:
    """Removes the folder or file ``path`` when it is there."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


# --- Fresh processes -----------------------------------------------------------------


def call_worker(
    script: Path,
    args: list[str],
    env: dict[str, str] | None = None,
    *,
    timeout: float | None = None,
    capture_stderr: bool = True,
) -> tuple[dict[str, Any] | None, str]:
    """Runs ``script --worker ARGS`` in a fresh process, whose last stdout line is JSON:
    that value and "", or None and why it failed (its last stderr line, its exit status
    or the timeout). ``capture_stderr=False`` passes its stderr through."""
    cmd = [sys.executable, str(script), "--worker", *args]
    stderr = subprocess.PIPE if capture_stderr else None
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"no result in {timeout:g} s"
    if proc.returncode != 0:
        last = (proc.stderr or "").strip().splitlines()
        return None, last[-1] if last else f"exit status {proc.returncode}"
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result, ""


def run_worker(
    script: Path, args: list[str], env: dict[str, str] | None = None, label: str | None = None
) -> dict[str, Any] | None:
    """``call_worker``'s value, or None after saying on stderr that ``label`` failed."""
    result, why = call_worker(script, args, env)
    if result is None:
        print(f"  ! {label or ' '.join(args)} failed: {why}", file=sys.stderr)
    return result


def serve_worker(workers: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]]) -> bool:
    """In a worker process (``--worker KIND SPEC``): prints ``workers[KIND](SPEC)`` as JSON
    (SPEC is JSON) and returns True; elsewhere False."""
    if len(sys.argv) < 4 or sys.argv[1] != "--worker":
        return False
    print(json.dumps(workers[sys.argv[2]](json.loads(sys.argv[3]))))
    return True


# --- Times ---------------------------------------------------------------------------


def peak_rss_mib() -> float:
    """This process's peak RSS so far (``VmHWM``), in MiB.

    Why not ``ru_maxrss``: Linux keeps it across ``exec``, taking the peak of the memory
    the process had before. A worker started by ``subprocess`` (vfork, then exec)
    reported the peak of the benchmark's driver: every tool of a run showed the same
    784-1,444 MiB. ``ru_maxrss`` only where ``/proc`` cannot say."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_fields(seconds: Sequence[float]) -> dict[str, Any]:
    """A row's time: the median of ``seconds``, their spread and how many there are."""
    return {
        "seconds": statistics.median(seconds),
        "seconds_min": min(seconds),
        "seconds_max": max(seconds),
        "runs": len(seconds),
    }


def warm_fields(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """A row's time from workers that each timed several calls (``"times"``; the first
    one cold): the median of each worker's later calls, the median of those over the
    workers; the spread of the workers' medians, or with one worker of its calls."""
    warm = [statistics.median(r["times"][1:] or r["times"]) for r in reports]
    calls = warm if len(reports) > 1 else (reports[0]["times"][1:] or reports[0]["times"])
    return {
        "seconds": statistics.median(warm),
        "seconds_min": min(calls),
        "seconds_max": max(calls),
        "runs": len(calls),
    }


def median_ratio(num: Sequence[float], den: Sequence[float]) -> float:
    """The median over the rounds of ``num[r] / den[r]``."""
    return statistics.median(a / b for a, b in zip(num, den, strict=True))


def rotated(items: list[T], r: int) -> list[T]:
    """``items`` starting at the ``r``-th (round ``r``'s order): no item is always the
    first after a change of thread count or after another given item."""
    r %= len(items)
    return items[r:] + items[:r]


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of ``ys`` over ``xs``."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def add_ratios(rows: list[Row]) -> list[Row]:
    """Sets each row's ``ratio``: its median time over bpekit's in the same case."""
    base = {r.get("case", ""): r["seconds"] for r in rows if r["tool"] == "bpekit"}
    for r in rows:
        b = base.get(r.get("case", ""))
        r["ratio"] = r["seconds"] / b if b else None
    return rows


# --- Results -------------------------------------------------------------------------


def command(script: str, args: list[str]) -> str:
    """The command line that regenerates a result, as run from the repository root."""
    return shlex.join(["python", f"benchmarks/{script}", *args])


def results_dir(given: Path | None, quick: bool, bench: Path) -> Path:
    """Where results go: ``given``, else a ``--quick`` run's into the bench folder's
    ``quick-results/`` (never over the committed ones), else ``benchmarks/results``."""
    return given or (bench / "quick-results" if quick else RESULTS)


def columns(*specs: tuple[str, str, str]) -> list[dict[str, str]]:
    """A table's columns from ``(key, name, kind)``; ``report.py`` lists the kinds."""
    return [{"key": key, "name": name, "kind": kind} for key, name, kind in specs]


def table(heading: str, text: str, cols: list[dict[str, str]], rows: list[Row]) -> dict[str, Any]:
    """A table that a result lays out itself (``"tables"``), as ``report.py`` reads it."""
    return {"heading": heading, "text": text, "columns": cols, "rows": rows}


class Targets:
    """The rows of a targets table: each target, what this run measured ("-" where
    nothing was), and whether that meets it."""

    def __init__(self) -> None:
        self.rows: list[Row] = []

    def add(self, target: str, measured: str | None, met: bool) -> None:
        met_text = "-" if not measured else yes(met)
        self.rows.append({"target": target, "measured": measured or "-", "met": met_text})

    def table(self, heading: str, text: str) -> dict[str, Any]:
        cols = columns(("target", "target", "text"), ("measured", "measured", "text"), ("met", "met", "text"))
        return table(heading, text, cols, self.rows)


def yes(met: bool) -> str:
    return "yes" if met else "no"


def _rounded(value: Any) -> Any:
    """``value`` with every float to 4 significant digits (the noise is larger)."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def write_result(results: Path, workload: str, **fields: Any) -> Path:
    """Writes ``results/<workload>.json`` with the machine and the date (UTC) added."""
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    payload = _rounded({"workload": workload, **fields, "date": date, "machine": machine()})
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{workload}.json"
    write_atomic(path, (json.dumps(payload, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    print(f"  -> {path}")
    return path


def report_problems(problems: list[str]) -> int:
    """The exit status of a run: 1 after listing ``problems`` on stderr, else 0."""
    if not problems:
        return 0
    print("\nFAILED:", file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    return 1
