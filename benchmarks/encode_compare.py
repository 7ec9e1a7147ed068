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

Corpora come from ``benchmarks/corpora.py`` (built when missing, in $BPEKIT_BENCH_DIR,
default /tmp/bpekit_bench), the rank files from the data folder's ``encodings/``
(``--data``, else $BPEKIT_DATA, else ../shared/data). Peers are installed into .venv
from PyPI (``pip install tiktoken tokenizers gigatoken``), never as package
dependencies. Each (corpus, encoding) is one workload, written to
``--results``/encode-<corpus>-<encoding>.json; ``PYTHONPATH=DIR`` times the bpekit in
DIR (the workers inherit it).

``--peers`` runs the peer workloads of ``peers_compare.py`` on the encodings instead:
per document, batch, flat and file, beside fastokens, tokie, kitoken, gigatoken and
tiktoken, every document's ids checked against tiktoken.

    python benchmarks/encode_compare.py --corpora ts en-small --encodings gpt2 o200k_base
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    EOT,
    RESULTS,
    add_ratios,
    command,
    corpus_path,
    encodings_env,
    encodings_folder,
    peak_rss_mib,
    run_worker,
    tiktoken_encoding,
    tool_version,
    warm_fields,
    write_result,
)

SEP = EOT
TOOL_NAMES = {"bpekit": "bpekit", "tiktoken": "tiktoken", "hf": "HF tokenizers", "gigatoken": "gigatoken"}


def description(args: argparse.Namespace) -> str:
    """What one encode workload measures, for its result file."""
    calls = f"calls 2-{args.runs}" if args.runs > 2 else "the calls after the first"
    rounds = f", over {args.rounds} alternating rounds of fresh processes" if args.rounds > 1 else ""
    return (
        "Token ids from text, each configuration in a fresh process that loads the tokenizer and "
        f"the text, then times the call {args.runs} times: the time is the median of {calls}{rounds} "
        "(all tools keep caches across calls; the first, cold call is in the notes). `memory`: the "
        "text is a new Python `str` at each call; 1 thread: one `encode` call (bpekit: "
        "`encode_to_numpy`), 2 threads: `encode_batch` over its documents. `file`: from the file to "
        "ids (bpekit: `encode_file` to a `.npy`; gigatoken: `encode_files`; tiktoken and HF: read, "
        "then `encode_batch`). `merge stage alone`: bpekit's encoder on pieces pre-tokenized "
        f"beforehand. HF tokenizers runs on corpora up to {args.hf_max_mb:g} MB only."
    )


TIKTOKEN_FILE = {"gpt2": "r50k_base", "cl100k_base": "cl100k_base", "o200k_base": "o200k_base"}


def rate(x: float) -> str:
    """A throughput to three significant digits."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def ids_hash(ids: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(ids, dtype=np.uint32).tobytes()).hexdigest()[:12]


def split_docs(text: str) -> list[str]:
    """Documents, each ending with its separator: their ids concatenate to the whole's."""
    parts = text.split(SEP)
    return [p + SEP for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


# ---- one tool in one process ---------------------------------------------------------


def load_tool(tool: str, encoding: str, tmp: Path) -> Any:
    """The tokenizer; rank files come from $BPEKIT_ENCODINGS, which the driver sets."""
    if tool == "bpekit":
        import bpekit

        return bpekit.get_encoding(encoding)
    if tool == "tiktoken":
        return tiktoken_encoding(encoding)
    if tool == "hf":
        import tokenizers  # type: ignore[import-untyped]

        import bpekit
        from bpekit.formats.hf import save_hf

        path = tmp / f"{encoding}.json"
        save_hf(bpekit.get_encoding(encoding), path)
        return tokenizers.Tokenizer.from_file(str(path))
    if tool == "gigatoken":
        import gigatoken

        return gigatoken.Tokenizer.from_tiktoken(encodings_folder() / f"{TIKTOKEN_FILE[encoding]}.tiktoken")
    raise ValueError(tool)


def make_call(
    tool: str, tok: Any, mode: str, threads: int, path: Path, text: str, tmp: Path
) -> Callable[[], Any]:
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
            import awkward as ak  # type: ignore[import-untyped]

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
        times: list[float] = []
        result: Any = None
        for run in range(args.runs):
            if args.mode == "memory" and run > 0 and not args.same_str:
                # A new str for every call, as new documents are (see the module docs);
                # the last one is dropped first, so peak memory holds one text.
                del call, text
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
        report: dict[str, Any] = {"times": times, "peak_mib": peak_rss_mib()}
        report["version"] = tool_version(TOOL_NAMES[args.tool])
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
    tool: str, encoding: str, path: Path, mode: str, threads: int, runs: int, same_str: bool, data: str | None
) -> dict[str, Any] | None:
    env = dict(encodings_env(data), RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true")
    args = [tool, encoding, str(path), mode, str(threads), str(runs)] + (["--same-str"] if same_str else [])
    return run_worker(Path(__file__), args, env, label=f"{tool} {mode}")


def run_peers(argv: list[str]) -> None:
    """``--peers``: the per-document, batch, flat and file workloads beside fastokens,
    tokie, kitoken, gigatoken and tiktoken, each document checked against tiktoken
    (``peers_compare.py``, whose options the rest of the line are; ``--encodings``
    names its tokenizers, gpt2 and o200k_base by default)."""
    import peers_compare

    argv = ["--tokenizers" if a == "--encodings" else a for a in argv if a != "--peers"]
    if "--tokenizers" not in argv:
        argv = ["--tokenizers", "gpt2", "o200k_base", *argv]
    raise SystemExit(peers_compare.main(argv))


def main() -> None:
    if "--peers" in sys.argv[1:]:
        run_peers(sys.argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--peers", action="store_true", help=(run_peers.__doc__ or "").split(" (")[0])
    p.add_argument("--worker", nargs=6, metavar=("TOOL", "ENCODING", "PATH", "MODE", "THREADS", "RUNS"))
    p.add_argument(
        "--dir", type=Path, default=None, help="corpora (default: $BPEKIT_BENCH_DIR or /tmp/bpekit_bench)"
    )
    p.add_argument("--data", default=None, help="data folder (default: $BPEKIT_DATA or ../shared/data)")
    p.add_argument("--results", type=Path, default=RESULTS, help="folder for the result files")
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
        help="run HF tokenizers (~1 MB/s) only on corpora up to this size",
    )
    p.add_argument(
        "--same-str",
        action="store_true",
        help="memory mode: encode the same str object at every call (its UTF-8, once made, "
        "is cached in it) instead of a new str per call",
    )
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
    for corpus in args.corpora:
        path = corpus_path(corpus, out=args.dir, data=args.data)
        for encoding in args.encodings:
            encode_workload(args, tools, corpus, path, encoding, p)


def encode_workload(
    args: argparse.Namespace,
    tools: list[str],
    corpus: str,
    path: Path,
    encoding: str,
    parser: argparse.ArgumentParser,
) -> None:
    """Every mode and thread count of one (corpus, encoding), printed and written to
    ``encode-<corpus>-<encoding>.json``."""
    mb = path.stat().st_size / 1e6
    print(f"\n{corpus} ({mb:,.1f} MB), {encoding}")
    print(
        f"  {'tool':<10} {'mode':<8} {'thr':>3} {'MB/s':>8} {'first':>8} {'spread':>8} "
        f"{'Mtok/s':>7} {'peak MiB':>9}  ids"
    )
    reference = None
    rows = []
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
        results: dict[tuple[int, str], list[dict[str, Any]]] = {c: [] for c in configs}
        for _ in range(args.rounds):
            for threads, tool in configs:
                r = run_one(tool, encoding, path, mode, threads, args.runs, args.same_str, args.data)
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
            timing = warm_fields(rs)
            med = timing["seconds"]
            first = statistics.median(r["times"][0] for r in rs)
            spread = (timing["seconds_max"] - timing["seconds_min"]) / med * 100
            r = rs[0]
            if mode == "encoder":
                ids = None
                agree = f"(pre-tokenizer alone {mb / r['pretokenize']:,.1f} MB/s)"
                note = f"pre-tokenizer alone {rate(mb / r['pretokenize'])} MB/s"
            else:
                reference = reference or r["hash"]
                hashes = {x["hash"] for x in rs}
                ids = "same" if hashes == {reference} else "DIFFER"
                agree = "same" if ids == "same" else f"DIFFER ({sorted(hashes)})"
                note = f"first call {rate(mb / first)} MB/s" + ("" if ids == "same" else "; ids DIFFER")
            peak = max(x["peak_mib"] for x in rs)
            print(
                f"  {tool:<10} {mode:<8} {threads:>3} {mb / med:>8,.1f} {mb / first:>8,.1f} "
                f"{spread:>7.0f}% "
                f"{r['tokens'] / med / 1e6:>7.2f} {peak:>9,.0f}  {agree}",
                flush=True,
            )
            case = "merge stage alone (pre-tokenized)" if mode == "encoder" else mode
            rows.append(
                {
                    "tool": TOOL_NAMES[tool],
                    "case": f"{case}, {threads} thread{'s' if threads > 1 else ''}",
                    "version": r["version"],
                    **timing,
                    "rounds": len(rs),
                    "throughput": mb / med,
                    "first_call_throughput": mb / first,
                    "tokens": r["tokens"],
                    "mtok_s": r["tokens"] / med / 1e6,
                    "peak_rss_mib": peak,
                    "ids": ids,
                    "note": note,
                }
            )
    cmd = ["--corpora", corpus, "--encodings", encoding]
    for option in ("tools", "modes", "threads", "runs", "rounds", "hf_max_mb", "same_str"):
        value = getattr(args, option)
        if value != parser.get_default(option):
            flag = "--" + option.replace("_", "-")
            if value is True:
                cmd.append(flag)
            else:
                cmd += [flag, *map(str, value if isinstance(value, list) else [value])]
    write_result(
        args.results,
        f"encode-{corpus}-{encoding}",
        title=f"Encoding: {corpus}, {encoding}",
        description=description(args),
        command=command("encode_compare.py", cmd),
        corpus={"name": corpus, "bytes": path.stat().st_size},
        unit="MB/s",
        rows=add_ratios(rows),
    )


if __name__ == "__main__":
    main()
