"""Encoding throughput: bpekit vs tiktoken, HF tokenizers and gigatoken (when installed).

Each (tool, encoding, corpus, mode, threads) runs in its own process, which loads the
tokenizer and the text, then times the encode call itself ``--runs`` times; we report
the median of the calls after the first (bpekit, gigatoken and tiktoken all keep
caches across calls, so the first call is the cold one, shown apart as ``first``), the
spread of those calls, tokens/s, the process's peak memory, and whether its ids agree
with bpekit's (a hash of all ids). Modes:

* ``memory``: the text is already a Python ``str``. 1 thread: one ``encode`` call
  (bpekit: ``encode_to_numpy``, the array API, as gigatoken's ``encode``);
  N threads: the documents (cut after each ``<|endoftext|>``) through ``encode_batch``.
  Every call gets a new ``str`` (read again, untimed), as a pipeline's new documents
  do: CPython caches a ``str``'s UTF-8 inside it once a tool asks for it, so calls on
  the same object would time every call after the first without that conversion
  (~160 ms for the 116 MB English corpus, which is stored as UCS-4). ``--same-str``
  times calls on one object instead.
* ``file``: from the file on disk to token ids (bpekit: ``encode_file`` to a ``.npy``;
  gigatoken: ``encode_files``; tiktoken/HF have no file API: read + encode_batch).
* ``encoder``: bpekit only: the merge stage alone, on pieces pre-tokenized beforehand
  (the pre-tokenizer is timed apart and reported as ``pretokenize``).

On a noisy machine use ``--rounds N``: each configuration then runs in N fresh
processes, the configurations alternating round by round; ``MB/s`` and ``first`` are
the medians over the rounds and ``spread`` is the range of the rounds' warm figures.

Corpora come from ``python ../shared/bench/make_corpora.py`` (default
/tmp/bpekit_bench/{ts,en-small,en,ml}.txt). Peers are installed into .venv from PyPI
(``pip install tiktoken tokenizers gigatoken``), never as package dependencies.

    python benchmarks/encode_compare.py --corpora ts en-small --encodings gpt2 o200k_base
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SEP = "<|endoftext|>"
ROOT = Path(__file__).resolve().parents[1]
ENC_DIR = ROOT.parent / "shared" / "data" / "encodings"
TIKTOKEN_FILE = {"gpt2": "r50k_base", "cl100k_base": "cl100k_base", "o200k_base": "o200k_base"}


def ids_hash(ids: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(ids, dtype=np.uint32).tobytes()).hexdigest()[:12]


def split_docs(text: str) -> list[str]:
    """Documents, each ending with its separator: their ids concatenate to the whole's."""
    parts = text.split(SEP)
    return [p + SEP for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


# ---- one tool in one process ---------------------------------------------------------


def load_tool(tool: str, encoding: str, tmp: Path):
    if tool == "bpekit":
        import bpekit

        return bpekit.get_encoding(encoding)
    if tool == "tiktoken":
        sys.path.insert(0, str(ROOT / "tests"))
        from conftest import tiktoken_encoding

        return tiktoken_encoding(encoding)
    if tool == "hf":
        import tokenizers

        import bpekit
        from bpekit.formats.hf import save_hf

        path = tmp / f"{encoding}.json"
        save_hf(bpekit.get_encoding(encoding), path)
        return tokenizers.Tokenizer.from_file(str(path))
    if tool == "gigatoken":
        import gigatoken

        return gigatoken.Tokenizer.from_tiktoken(ENC_DIR / f"{TIKTOKEN_FILE[encoding]}.tiktoken")
    raise ValueError(tool)


def make_call(tool: str, tok, mode: str, threads: int, path: Path, text: str, tmp: Path):
    """A no-argument function doing the timed work and returning all ids as an array."""
    docs = split_docs(text)
    if mode == "encoder":
        return lambda: tok._core.profile(text)
    if tool == "bpekit":
        if mode == "file":
            import bpekit

            out = tmp / "tokens.npy"
            return lambda: (bpekit.encode_file(path, out, tok, num_threads=threads), bpekit.load_tokens(out))[
                1
            ]
        if threads == 1:
            # The numpy API, as gigatoken's encode returns: building a Python list of
            # millions of ints would time CPython's int objects, not the tokenizer.
            return lambda: tok.encode_to_numpy(text, allowed_special="all")
        return lambda: np.concatenate(
            [np.asarray(x, dtype=np.uint32) for x in tok.encode_batch(docs, threads, allowed_special="all")]
        )
    if tool == "tiktoken":

        def run() -> np.ndarray:
            t = path.read_text(encoding="utf-8") if mode == "file" else text
            if threads == 1:
                return np.asarray(tok.encode(t, allowed_special="all"), dtype=np.uint32)
            batch = tok.encode_batch(split_docs(t), num_threads=threads, allowed_special="all")
            return np.concatenate([np.asarray(x, dtype=np.uint32) for x in batch])

        return run
    if tool == "hf":

        def run_hf() -> np.ndarray:
            t = path.read_text(encoding="utf-8") if mode == "file" else text
            if threads == 1:
                return np.asarray(tok.encode(t, add_special_tokens=False).ids, dtype=np.uint32)
            batch = tok.encode_batch(split_docs(t), add_special_tokens=False)
            return np.concatenate([np.asarray(e.ids, dtype=np.uint32) for e in batch])

        return run_hf
    if tool == "gigatoken":
        if mode == "file":
            import awkward as ak

            return lambda: np.asarray(ak.flatten(tok.encode_files(str(path))), dtype=np.uint32)
        if threads == 1:
            return lambda: np.asarray(tok.encode(text), dtype=np.uint32)
        return lambda: np.concatenate([np.asarray(x, dtype=np.uint32) for x in tok.encode_batch_list(docs)])
    raise ValueError(tool)


def worker(args: argparse.Namespace) -> None:
    path = Path(args.path)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tok = load_tool(args.tool, args.encoding, tmp)
        # File mode must not hold the text in memory (peak memory is part of the result).
        text = "" if args.mode == "file" else path.read_text(encoding="utf-8")
        call = make_call(args.tool, tok, args.mode, args.threads, path, text, tmp)
        times, result = [], None
        for run in range(args.runs):
            if args.mode == "memory" and run > 0 and not args.same_str:
                # A new str for every call, as new documents are (see the module docs);
                # the last one is dropped first, so peak memory holds one text.
                call = text = None
                text = path.read_text(encoding="utf-8")
                call = make_call(args.tool, tok, args.mode, args.threads, path, text, tmp)
            if args.mode == "file" and args.tool == "bpekit":
                # Each run writes a new file, as a first run does: replacing the last
                # run's output would time ext4 freeing its blocks inside the final
                # rename (~28 ms for the 78 MB of en's ids), which is not encoding.
                (tmp / "tokens.npy").unlink(missing_ok=True)
            t0 = time.perf_counter()
            result = call()
            times.append(time.perf_counter() - t0)
        report = {"times": times, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
        if args.mode == "encoder":
            runs = [call() for _ in range(args.runs)]
            report["pretokenize"] = statistics.median(r[0] for r in runs)
            report["times"] = [r[1] for r in runs]
            report["tokens"] = runs[0][2]
        else:
            report["tokens"] = len(result)
            report["hash"] = ids_hash(result)
        print(json.dumps(report))


# ---- the driver ----------------------------------------------------------------------


def available(tool: str) -> bool:
    mod = {"bpekit": "bpekit", "tiktoken": "tiktoken", "hf": "tokenizers", "gigatoken": "gigatoken"}[tool]
    try:
        __import__(mod)
    except ImportError:
        return False
    return True


def run_one(
    tool: str, encoding: str, path: Path, mode: str, threads: int, runs: int, same_str: bool
) -> dict | None:
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true")
    cmd = [sys.executable, __file__, "--worker", tool, encoding, str(path), mode, str(threads), str(runs)]
    cmd += ["--same-str"] if same_str else []
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"  {tool} {mode} failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worker", nargs=6, metavar=("TOOL", "ENCODING", "PATH", "MODE", "THREADS", "RUNS"))
    p.add_argument("--dir", type=Path, default=Path(os.environ.get("BPEKIT_BENCH_DIR", "/tmp/bpekit_bench")))
    p.add_argument("--corpora", nargs="+", default=["ts", "en-small", "ml"])
    p.add_argument("--encodings", nargs="+", default=["gpt2", "o200k_base"])
    p.add_argument("--tools", nargs="+", default=["bpekit", "tiktoken", "hf", "gigatoken"])
    p.add_argument("--modes", nargs="+", default=["memory", "file", "encoder"])
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--runs", type=int, default=4, help="calls per process; the first is reported apart")
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="fresh processes per configuration, alternating; medians are reported",
    )
    p.add_argument(
        "--hf-max-mb",
        type=float,
        default=5.0,
        help="run HF tokenizers (~1 MB/s here) only on corpora up to this size",
    )
    p.add_argument(
        "--same-str",
        action="store_true",
        help="memory mode: encode the same str object at every call (its UTF-8, once made, "
        "is cached in it) instead of a new str per call",
    )
    p.add_argument("--json", type=Path, default=None, help="also write all results here")
    args = p.parse_args()
    if args.worker:
        tool, encoding, path, mode, threads, runs = args.worker
        worker(
            argparse.Namespace(
                tool=tool,
                encoding=encoding,
                path=path,
                mode=mode,
                threads=int(threads),
                runs=int(runs),
                same_str=args.same_str,
            )
        )
        return
    tools = [t for t in args.tools if available(t)]
    print(
        f"tools: {', '.join(tools)}; {os.cpu_count()} cores; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    rows = []
    for corpus in args.corpora:
        path = args.dir / f"{corpus}.txt"
        if not path.exists():
            sys.exit(f"{path} is missing: run python ../shared/bench/make_corpora.py")
        mb = path.stat().st_size / 1e6
        for encoding in args.encodings:
            print(f"\n{corpus} ({mb:,.1f} MB), {encoding}")
            print(
                f"  {'tool':<10} {'mode':<8} {'thr':>3} {'MB/s':>8} {'first':>8} {'spread':>8} "
                f"{'Mtok/s':>7} {'peak MiB':>9}  ids"
            )
            reference = None
            for mode in args.modes:
                configs = [
                    (threads, tool)
                    for threads in (args.threads if mode != "encoder" else [1])
                    for tool in (tools if mode != "encoder" else ["bpekit"])
                    if not (tool == "hf" and mb > args.hf_max_mb)
                ]
                # With --rounds, every configuration runs once per round in a fresh
                # process, the configurations alternating, so that a noisy minute on
                # the machine falls on all of them alike.
                results: dict[tuple[int, str], list[dict]] = {c: [] for c in configs}
                for _ in range(args.rounds):
                    for threads, tool in configs:
                        r = run_one(tool, encoding, path, mode, threads, args.runs, args.same_str)
                        if r is not None:
                            results[(threads, tool)].append(r)
                for threads, tool in configs:
                    rs = results[(threads, tool)]
                    if not rs:
                        continue
                    # The first call fills each tool's caches (all three keep them
                    # across calls); MB/s is the median of the later calls, so one cold
                    # call does not decide the median. `first` is that call. Over
                    # several rounds: medians of the rounds' figures.
                    warm_s = [statistics.median(r["times"][1:] or r["times"]) for r in rs]
                    med = statistics.median(warm_s)
                    first = statistics.median(r["times"][0] for r in rs)
                    warm_calls = warm_s if len(rs) > 1 else (rs[0]["times"][1:] or rs[0]["times"])
                    spread = (max(warm_calls) - min(warm_calls)) / med * 100
                    r = rs[0]
                    if mode == "encoder":
                        agree = f"(pre-tokenizer alone {mb / r['pretokenize']:,.1f} MB/s)"
                    else:
                        reference = reference or r["hash"]
                        hashes = {x["hash"] for x in rs}
                        agree = "same" if hashes == {reference} else f"DIFFER ({sorted(hashes)})"
                    peak = max(x["peak_mib"] for x in rs)
                    print(
                        f"  {tool:<10} {mode:<8} {threads:>3} {mb / med:>8,.1f} {mb / first:>8,.1f} "
                        f"{spread:>7.0f}% "
                        f"{r['tokens'] / med / 1e6:>7.2f} {peak:>9,.0f}  {agree}",
                        flush=True,
                    )
                    rows.append(
                        {
                            "corpus": corpus,
                            "encoding": encoding,
                            "tool": tool,
                            "mode": mode,
                            "threads": threads,
                            "mb_s": mb / med,
                            "mb_s_first": mb / first,
                            "rounds": [
                                {"mb_s": mb / w, "mb_s_first": mb / x["times"][0]}
                                for w, x in zip(warm_s, rs, strict=True)
                            ],
                            **r,
                            "peak_mib": peak,
                        }
                    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
