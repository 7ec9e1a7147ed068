"""Encoding beside the peers: bpekit, fastokens, tokie, kitoken, gigatoken, HF tokenizers
and tiktoken on the same tokenizers, the same documents, and every document's ids
checked against the oracle.

    python benchmarks/peers_compare.py [--tokenizers olmo2 neox gpt2-hub gpt2 o200k_base]
        [--corpora en-small ml] [--workloads doc batch flat file] [--file-corpus en-small]
        [--rounds 1] [--runs 4] [--mb MB]

Tokenizers: ``tokenizer.json`` files (``olmo2``: OLMo 2's, the Llama 3 regex and 22
added tokens; ``neox``: GPT-NeoX-20B's, NFC and runs of spaces as added tokens;
``gpt2-hub``: GPT-2 as the Hub ships it, built with ``tokenizers`` from the shared
GPT-2 files, ByteLevel with its own regex; ``sp-llama``: a SentencePiece-style BPE in
Llama 2's form, trained and converted here: ``_common.sp_tokenizer_json``), whose
oracle is HF ``tokenizers``; OpenAI
encodings (``gpt2``, ``cl100k_base``, ``o200k_base``), whose oracle is tiktoken built
offline from the shared rank files. ``--tokenizers olmo2 neox gpt2-hub`` runs the
first kind, ``encode_compare.py --peers`` the second.

Documents: the text between the ``<|endoftext|>`` of a corpus of ``benchmarks/corpora.py``
(empty ones left out); ``--mb`` takes the documents of its first MB only (a smoke run).
Workloads (``peers.py`` says how each tool is driven): ``doc``, each document in turn on
one thread, lists of ids; ``batch``, one batch call on ``--threads`` threads, lists;
``flat``, one batch call to one numpy array; ``file``, from the ``--file-corpus`` file
(a corpus name or a path) to ids: bpekit's ``encode_file`` writes a ``.npy`` in a
temporary folder on disk, and again (the row ``bpekit-shm``) in ``/dev/shm``, in memory
as the peers' results are.

Each (workload, tool) runs in a fresh process that reads the documents, loads the
tokenizer (timed: ``load``), then times ``--runs`` calls, each on new ``str`` objects
(CPython caches a ``str``'s UTF-8 once a tool asks for it): the first is ``cold``, the
median of the others the figure. Then, untimed, the ids of every document of the last
call are compared with the oracle's and the documents that differ are counted: a
mismatch is reported as measured. ``--rounds N`` runs every configuration N times, the
configurations interleaved round by round; medians over the rounds. A tool that cannot
load a tokenizer, or fails, says so in its row. One result file per (tokenizer,
corpus): ``peers-<tokenizer>-<corpus>.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers
from _common import (
    RESULTS,
    bench_dir,
    call_worker,
    columns,
    command,
    corpus_path,
    data_dir,
    encodings_env,
    encodings_folder,
    gpt2_tokenizer_json,
    peak_rss_mib,
    sp_tokenizer_json,
    table,
    tiktoken_encoding,
    tool_version,
    warm_fields,
    write_atomic,
    write_result,
)
from peers import SEPARATOR, Source

HF_FILES = {
    "olmo2": ("OLMo 2", "allenai_dolma2.json"),
    "neox": ("GPT-NeoX-20B", "allenai_eleuther-ai-gpt-neox-20b-pii-special.json"),
    "gpt2-hub": ("GPT-2 (Hub-style tokenizer.json)", None),
    "sp-llama": ("SentencePiece-style BPE, Llama 2's form (32K, byte fallback, trained here)", None),
}
RANK_FILES = {"gpt2": "r50k_base", "cl100k_base": "cl100k_base", "o200k_base": "o200k_base"}
WORKLOADS = {
    "doc": "per document, 1 thread, lists",
    "batch": "batch, {n} threads, lists",
    "flat": "flat ids (numpy), {n} threads",
    "file": "file to ids, {n} threads",
}
# HF tokenizers encodes at 1-4 MB/s: on larger corpora it is the oracle only.
SLOW = {"tokenizers"}


# ---- the tokenizers and the documents ------------------------------------------------------


def source(key: str, out: Path, data: Path) -> Source:
    """The tokenizer ``key`` as the tools are given it."""
    if key in HF_FILES:
        label, name = HF_FILES[key]
        if key == "sp-llama":
            path = sp_tokenizer_json(out / "sp-llama.json", data)
        elif name is None:
            path = gpt2_tokenizer_json(out / "gpt2-hub.json", data, hub=True)
        else:
            path = data / "hf" / name
        return Source("json", label, str(path))
    if key not in RANK_FILES:
        raise SystemExit(f"unknown tokenizer {key!r}: one of {', '.join([*HF_FILES, *RANK_FILES])}")
    import bpekit
    from bpekit.formats.hf import save_hf

    exported = out / f"{key}.json"
    save_hf(bpekit.get_encoding(key), exported)
    pattern = tiktoken_encoding(key)._pat_str
    ranks = encodings_folder() / f"{RANK_FILES[key]}.tiktoken"
    return Source("tiktoken", key, str(exported), name=key, ranks=str(ranks), pattern=pattern)


def corpus_file(name: str, mb: float | None, out: Path, args: argparse.Namespace) -> Path:
    """The corpus ``name`` (a name of ``corpora.py`` or a path) or, with ``mb``, a file of
    its documents that end in the first ``mb`` MB (at least one), separators kept."""
    path = Path(name) if os.sep in name or name.endswith(".txt") else corpus_path(name, args.dir, args.data)
    if not path.is_file():  # owt-1G and the like are made apart
        raise SystemExit(
            f"{path} is missing: make it with ../shared/bench/make_big.py (see benchmarks/README.md)"
        )
    if mb is None:
        return path
    raw = path.read_bytes()
    sep = SEPARATOR.encode()
    end = raw.rfind(sep, 0, int(mb * 1e6) + 1)
    if end <= 0:  # the first document is longer: it alone
        end = raw.find(sep, int(mb * 1e6))
    part = out / f"{path.stem}-{mb:g}MB.txt"
    content = raw[: end if end > 0 else len(raw)]
    if not (part.is_file() and part.read_bytes() == content):
        part.write_bytes(content)
    return part


def read_docs(path: Path) -> list[str]:
    """The documents of a corpus file, new ``str`` objects at each call."""
    return [d for d in path.read_bytes().decode("utf-8").split(SEPARATOR) if d]


def oracle(src: Source, corpus: Path, out: Path) -> Path:
    """The oracle's ids of every document of ``corpus`` (cached by content):
    ``tokenizers`` for a ``tokenizer.json``, tiktoken for an OpenAI encoding."""
    tool = "tokenizers" if src.kind == "json" else "tiktoken"
    key = hashlib.sha1()
    for part in (
        Path(src.path).read_bytes(),
        src.name.encode(),
        corpus.read_bytes(),
        tool_version(tool).encode(),
    ):
        key.update(hashlib.sha1(part).digest())
    path = out / f"oracle-{key.hexdigest()[:16]}.npz"
    if path.is_file():
        return path
    tok = peers.LOADERS[tool](src)
    docs = read_docs(corpus)
    t0 = time.perf_counter()
    chunks, lengths = [], []
    # In slices of documents: the Python lists (and tokenizers' Encoding objects) of a
    # whole 1 GB corpus would not fit in memory.
    for start in range(0, len(docs), 1000):
        batch = docs[start : start + 1000]
        if tool == "tokenizers":
            lists = [e.ids for e in tok.encode_batch(batch, add_special_tokens=False)]
        else:
            lists = tok.encode_ordinary_batch(batch, num_threads=os.cpu_count() or 1)
        chunks += [np.asarray(x, dtype=np.uint32) for x in lists]
        lengths += [len(x) for x in lists]
    sep_id = tok.token_to_id(SEPARATOR) if tool == "tokenizers" else tok.encode_single_token(SEPARATOR)
    print(f"  oracle ({tool}): {len(docs):,} documents in {time.perf_counter() - t0:.1f} s", flush=True)
    ids = np.concatenate(chunks) if chunks else np.zeros(0, np.uint32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    write_atomic(path, lambda tmp: np.savez(tmp, ids=ids, offsets=offsets, sep_id=np.int64(sep_id)))
    return path


# ---- one tool in one process ---------------------------------------------------------------


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Loads, times ``runs`` calls, checks the last call's ids; returns the report."""
    threads, workload, tool = spec["threads"], spec["workload"], spec["tool"]
    peers.limit_cpus(threads)
    src, corpus = Source(**spec["source"]), Path(spec["corpus"])
    run = peers.call(tool, src.kind, workload)
    assert run is not None
    docs = None if workload == "file" else read_docs(corpus)
    t0 = time.perf_counter()
    try:
        tok = peers.LOADERS[tool](src)
    except Exception as e:  # a tokenizer the tool cannot read is a result, not a crash
        return {"error": f"cannot load: {type(e).__name__}: {str(e).splitlines()[0][:160]}"}
    load_s = time.perf_counter() - t0
    times, cpu, out = [], 0.0, None
    for i in range(spec["runs"]):
        out = None
        if docs is not None and i:
            docs = None
            docs = read_docs(corpus)
        cpu0, t0 = _cpu_seconds(), time.perf_counter()
        out = run.run(tok, corpus if docs is None else docs, threads)
        times.append(time.perf_counter() - t0)
        cpu += _cpu_seconds() - cpu0
    report = {
        "times": times,
        "load_s": load_s,
        # CPU time over wall time of the calls: the cores a tool kept busy.
        "cpu_s": cpu,
        "peak_mib": peak_rss_mib(),
        "version": (
            os.environ.get("PEERS_BPEKIT_VERSION", "?") if tool.startswith("bpekit") else tool_version(tool)
        ),
    }
    o = np.load(spec["oracle"])
    report["exact"] = peers.differing(
        peers.canonical(workload, out, int(o["sep_id"])), (o["ids"], o["offsets"])
    )
    return report


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """``worker(spec)`` in a fresh process with the thread settings of its workload; a
    failure is a report with an ``error``."""
    env = dict(encodings_env(), **peers.env(spec["threads"]))
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(dir=shm) as in_memory:
        env["PEERS_TMP"], env["PEERS_SHM"] = tmp, in_memory
        found, why = call_worker(Path(__file__), [json.dumps(spec)], env, timeout=timeout)
    return found if found is not None else {"error": f"failed: {why[:200]}"}


# ---- the driver ----------------------------------------------------------------------------


def exact_text(exact: dict[str, Any]) -> str:
    """The ``ids vs oracle`` cell: a mismatch in bold, so that no reader misses it."""
    n = exact["docs"]
    if not exact["differ"]:
        return f"same, {n:,} docs"
    extra = f", {exact['docs_returned']:,} returned" if exact["docs_returned"] != n else ""
    return f"**{exact['differ']:,} of {n:,} docs differ**{extra}"


def row(tool: str, api: str, reports: list[dict[str, Any]], mb: float) -> dict[str, Any]:
    """A table row from the rounds' reports of one (workload, tool)."""
    good = [r for r in reports if "error" not in r]
    if not good:
        return {"tool": tool, "api": api, "exact": reports[0]["error"]}
    timing = warm_fields(good)
    worst = max((r["exact"] for r in good), key=lambda e: e["differ"])
    return {
        "tool": tool,
        "api": api,
        "version": good[0]["version"],
        **timing,
        "throughput": mb / timing["seconds"],
        "cold": mb / statistics.median(r["times"][0] for r in good),
        "load_ms": 1000 * statistics.median(r["load_s"] for r in good),
        "cpu_per_wall": statistics.median(r["cpu_s"] / sum(r["times"]) for r in good),
        "peak_rss_mib": max(r["peak_mib"] for r in good),
        "exact": exact_text(worst) + ("" if len(good) == len(reports) else "; some rounds failed"),
        "first_difference": worst["first"],
    }


COLUMNS = columns(
    ("tool", "tool", "text"),
    ("api", "call", "code"),
    ("seconds", "time", "time"),
    ("throughput", "MB/s", "num"),
    ("ratio", "vs bpekit", "ratio"),
    ("cold", "cold MB/s", "num"),
    ("load_ms", "load ms", "int"),
    ("peak_rss_mib", "peak RSS", "mib"),
    ("exact", "ids vs oracle", "text"),
)


def run_case(args: argparse.Namespace, key: str, src: Source, corpus_name: str, workloads: list[str]) -> None:
    """Every workload of one (tokenizer, corpus), interleaved; one result file."""
    out = bench_dir(args.dir) / "peers"
    corpus = corpus_file(corpus_name, args.mb, out, args)
    size = corpus.stat().st_size
    docs = read_docs(corpus)
    docs_bytes, ndocs = sum(len(d.encode("utf-8")) for d in docs), len(docs)
    del docs
    print(f"\n{src.label}, {corpus_name} ({docs_bytes / 1e6:,.1f} MB of documents)", flush=True)
    oracle_path = oracle(src, corpus, out)
    tools = [t for t in (args.tools or peers.TOOLS[src.kind]) if t in peers.TOOLS[src.kind]]
    configs: list[tuple[str, str]] = []
    missing: dict[str, list[str]] = {w: [] for w in workloads}
    for w in workloads:
        for t in tools:
            if peers.call(t, src.kind, w) is None:
                missing[w].append(t)
            elif not (t in SLOW and size > args.slow_max_mb * 1e6):
                configs.append((w, t))
    reports: dict[tuple[str, str], list[dict[str, Any]]] = {c: [] for c in configs}
    for _ in range(args.rounds):
        for w, t in configs:
            spec = {"tool": t, "workload": w, "threads": 1 if w == "doc" else args.threads, "runs": args.runs}
            spec |= {"source": src.__dict__, "corpus": str(corpus), "oracle": str(oracle_path)}
            r = measure(spec, args.timeout)
            reports[(w, t)].append(r)
            shown = (
                r.get("error")
                or f"{docs_bytes / 1e6 / statistics.median(r['times'][1:] or r['times']):,.1f} MB/s"
            )
            print(f"  {w:5} {t:10} {shown}  {'' if 'error' in r else exact_text(r['exact'])}", flush=True)
    tables: list[dict[str, Any]] = []
    versions: dict[str, str] = {}
    for w in workloads:
        rows = []
        for t in tools:
            if (w, t) in reports:
                call = peers.call(t, src.kind, w)
                assert call is not None  # reports holds only the workloads a tool has
                api = call.api.format(n=args.threads)
                if src.kind == "tiktoken" and t in peers.VIA_EXPORT:
                    api += " (bpekit's exported tokenizer.json)"
                rows.append(row(t, api, reports[(w, t)], docs_bytes / 1e6))
                versions.setdefault(t, rows[-1].get("version", "?"))
        for r in rows:
            r.setdefault("seconds", None)
        base = next((r["seconds"] for r in rows if r["tool"] == "bpekit" and r["seconds"]), None)
        for r in rows:
            r["ratio"] = r["seconds"] / base if base and r["seconds"] else None
        skipped = [t for t in tools if t in SLOW and (w, t) not in reports and t not in missing[w]]
        notes = [f"No API for this workload: {', '.join(missing[w])}." if missing[w] else ""]
        notes.append(
            f"Not timed here (too slow for {size / 1e6:,.0f} MB): {', '.join(skipped)}." if skipped else ""
        )
        heading = WORKLOADS[w].format(n=args.threads)
        tables.append(table(heading, " ".join(n for n in notes if n), COLUMNS, rows))
    save_case(args, key, src, corpus_name, docs_bytes, ndocs, workloads, tables, versions)


def save_case(
    args: argparse.Namespace,
    key: str,
    src: Source,
    corpus_name: str,
    docs_bytes: int,
    ndocs: int,
    workloads: list[str],
    tables: list[dict[str, Any]],
    versions: dict[str, str],
) -> None:
    """``peers-<tokenizer>-<corpus>.json``, with the command line that makes it again."""
    oracle_name = "HF `tokenizers`" if src.kind == "json" else "tiktoken"
    rounds = "one round" if args.rounds == 1 else f"{args.rounds} rounds (medians of the rounds)"
    listed = [corpus_name] if workloads != ["file"] else []
    cmd = ["--tokenizers", key, "--corpora", *listed, "--workloads", *workloads]
    for option in ("rounds", "runs", "threads", "mb", "tools"):
        value = getattr(args, option)
        if value != DEFAULTS[option]:
            values = value if isinstance(value, list) else [value]
            cmd += [f"--{option}", *(f"{v:g}" if isinstance(v, float) else str(v) for v in values)]
    if "file" in workloads:
        cmd += ["--file-corpus", corpus_name]
    write_result(
        args.results,
        f"peers-{key}-{Path(corpus_name).stem}",
        title=f"Encoding beside the peers: {src.label}, {corpus_name}",
        description=(
            f"{ndocs:,} documents (the text between `<|endoftext|>`s) of `{corpus_name}`, "
            f"{docs_bytes:,} bytes (MB/s counts them). Each (workload, tool) in a fresh process, the "
            f"tools interleaved, {rounds}, {args.runs} calls each on new `str` objects: time and MB/s "
            "are the median of the warm calls, `cold MB/s` the first call's, `load` the tokenizer's loading, "
            "peak RSS the process's (the text included). `ids vs oracle`: every document's ids "
            f"compared with {oracle_name}'s; differing documents are counted, never hidden. "
            "`vs bpekit` is time over bpekit's. `1 thread` and `N threads` are enforced with each "
            "tool's setting and the process's CPU set (`benchmarks/peers.py`)."
            + (FILE_NOTE if "file" in workloads else "")
        ),
        command=command("peers_compare.py", cmd),
        corpus={"name": corpus_name, "bytes": docs_bytes},
        # The figure is the median of this many warm calls (of rounds' medians, over rounds).
        runs=args.rounds if args.rounds > 1 else args.runs - 1,
        versions=versions,
        tables=tables,
    )


# Where each tool's file workload leaves its ids.
FILE_NOTE = (
    " `file`: bpekit's `encode_file` writes its `.npy` into a folder on the disk, and in the row "
    "`bpekit-shm` into `/dev/shm`, in memory, where the peers' ids are (gigatoken and tokie return "
    "arrays)."
)

DEFAULTS = {"rounds": 1, "runs": 4, "threads": 2, "mb": None, "tools": None}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--tokenizers", nargs="+", default=["olmo2", "neox", "gpt2-hub"])
    p.add_argument("--corpora", nargs="*", default=["en-small", "ml"], help="corpora of doc, batch and flat")
    p.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    p.add_argument("--file-corpus", default="en-small", help="the file workload's corpus: a name or a path")
    p.add_argument(
        "--tools", nargs="+", default=DEFAULTS["tools"], help="default: all of the tokenizer's kind"
    )
    p.add_argument("--threads", type=int, default=DEFAULTS["threads"], help="threads of batch, flat and file")
    p.add_argument("--runs", type=int, default=DEFAULTS["runs"], help="calls per process; the first is cold")
    p.add_argument("--rounds", type=int, default=DEFAULTS["rounds"], help="fresh processes per configuration")
    p.add_argument(
        "--mb", type=float, default=DEFAULTS["mb"], help="only the documents of the first MB (smoke run)"
    )
    p.add_argument(
        "--slow-max-mb", type=float, default=5.0, help="time HF tokenizers on corpora up to this size"
    )
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds for one measurement process")
    p.add_argument(
        "--dir", type=Path, default=None, help="corpora (default: $BPEKIT_BENCH_DIR or /tmp/bpekit_bench)"
    )
    p.add_argument(
        "--data", type=Path, default=None, help="data folder (default: $BPEKIT_DATA or ../shared/data)"
    )
    p.add_argument("--results", type=Path, default=RESULTS, help="folder for the result files")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    data = data_dir(args.data)
    os.environ.update(encodings_env(data))
    out = bench_dir(args.dir) / "peers"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as snapshot:
        os.environ["PEERS_BPEKIT_VERSION"] = pin_bpekit(Path(snapshot))
        run_all(args, out, data)
    return 0


def pin_bpekit(folder: Path) -> str:
    """Copies the bpekit this process imports into ``folder`` and puts it first on the
    workers' path; returns its version. Other work rebuilds the extension in the same
    checkout: a copy keeps every row of a run on one build."""
    import bpekit

    version = tool_version("bpekit")
    shutil.copytree(
        Path(bpekit.__file__).parent, folder / "bpekit", ignore=shutil.ignore_patterns("__pycache__")
    )
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    return version


def run_all(args: argparse.Namespace, out: Path, data: Path) -> None:
    """Every (tokenizer, corpus) of the command line."""
    plan: dict[str, list[str]] = {c: [w for w in args.workloads if w != "file"] for c in args.corpora}
    if "file" in args.workloads:
        # The file corpus named as a path is the same corpus, and the same result file.
        where = corpus_file(args.file_corpus, None, out, args).resolve()
        same = [c for c in args.corpora if corpus_file(c, None, out, args).resolve() == where]
        plan.setdefault(same[0] if same else args.file_corpus, []).append("file")
    for key in args.tokenizers:
        src = source(key, out, data)
        for corpus_name, workloads in plan.items():
            if workloads:
                run_case(args, key, src, corpus_name, workloads)


if __name__ == "__main__":
    raise SystemExit(main())
