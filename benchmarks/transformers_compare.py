"""``datasets.map(batched=True)`` with transformers' ``AutoTokenizer``: transformers
alone, with bpekit's patch (``bpekit.patch_transformers()``) and with fastokens'
(``fastokens.patch_transformers()``); offsets off and on; on 1 and 2 processes.

    python benchmarks/transformers_compare.py [--corpus en-small] [--mb MB] [--runs 2]
        [--num-proc 1 2] [--tools transformers bpekit fastokens]

The tokenizer is OLMo 2's ``tokenizer.json`` (``../shared/data/hf/allenai_dolma2.json``)
in a folder as a model ships it (``PreTrainedTokenizerFast`` with its BOS, EOS and pad
tokens, saved), loaded with ``AutoTokenizer.from_pretrained``. The documents are the
corpus's (the text between ``<|endoftext|>``s), a ``datasets.Dataset`` of one column;
the call is ``ds.map(lambda b: tok(b["text"], return_offsets_mapping=...),
batched=True, num_proc=N)``, what a training pipeline runs. Each (tool, offsets,
processes) runs in a fresh process, interleaved, ``--runs`` maps each: the first is
cold, the median of the others the figure. Every column of the mapped dataset (ids,
token types, attention mask, offsets) is hashed, untimed, and compared with
transformers alone's: a difference is reported as measured. ``vs transformers`` and
``vs fastokens`` are their time over the row's.

``none`` is the map's own floor: its function returns, for each batch, the outputs made
beforehand (untimed, by bpekit's patch), so the time is datasets' alone. datasets 4's
``map`` defaults to ``on_mixed_types="use_json"``, which looks at every id of every
list the function returns in Python, to find mixed types; the ``plain`` maps pass
``on_mixed_types=None`` (what a pipeline that returns ids only may pass) and time the
tokenizer without that scan.
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    RESULTS,
    bench_dir,
    call_worker,
    columns,
    command,
    corpus_path,
    data_dir,
    peak_rss_mib,
    table,
    tool_version,
    write_result,
)
from peers_compare import pin_bpekit

SEPARATOR = "<|endoftext|>"
TOOLS = ["none", "transformers", "bpekit", "fastokens"]
MAPS = {"default": {}, "plain": {"on_mixed_types": None}}
MAP_NAMES = {"default": "defaults", "plain": "`on_mixed_types=None`"}
SPECIALS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|pad|>"}


def olmo2_folder(out: Path, data: Path) -> Path:
    """OLMo 2's tokenizer as a folder ``AutoTokenizer`` loads."""
    from transformers import PreTrainedTokenizerFast

    folder = out / "olmo2-transformers"
    if not (folder / "tokenizer_config.json").is_file():
        tok = PreTrainedTokenizerFast(tokenizer_file=str(data / "hf" / "allenai_dolma2.json"), **SPECIALS)
        tok.save_pretrained(str(folder))
    return folder


def documents(corpus: Path, mb: float | None) -> list[str]:
    docs = [d for d in corpus.read_bytes().decode("utf-8").split(SEPARATOR) if d]
    if mb is None:
        return docs
    out, size = [], 0
    for d in docs:
        out.append(d)
        size += len(d.encode("utf-8"))
        if size >= mb * 1e6:
            break
    return out


def _hash(table: Any) -> str:
    """A hash of every column of a mapped dataset's Arrow table, values and shapes."""
    h = hashlib.sha1()
    for name in sorted(table.column_names):
        h.update(name.encode())
        h.update(json.dumps(table.column(name).to_pylist()).encode())
    return h.hexdigest()


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Patches (or not), loads, maps ``runs`` times; returns the times and the hash."""
    import datasets

    datasets.disable_progress_bars()
    tool = spec["tool"]
    if tool in ("bpekit", "none"):
        import bpekit

        bpekit.patch_transformers()
    elif tool == "fastokens":
        import fastokens

        fastokens.patch_transformers()
    from transformers import AutoTokenizer

    ds = datasets.Dataset.from_dict({"text": documents(Path(spec["corpus"]), spec["mb"])})
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(spec["folder"])
    load_s = time.perf_counter() - t0
    offsets = spec["offsets"]

    def encode(batch: dict[str, list[str]]) -> Any:
        return tok(batch["text"], return_offsets_mapping=offsets)

    kwargs: dict[str, Any] = dict(MAPS[spec["map"]], batched=True, num_proc=spec["num_proc"])
    function: Any = encode
    if tool == "none":
        # The outputs live in a module's global, inherited by the map's forked workers:
        # as the function's closure, datasets would hash and pickle every id each map.
        import _map_floor

        _map_floor.fill(ds["text"], encode)
        function = _map_floor.made
    times, cpu, out = [], [], None
    for run in range(spec["runs"]):
        if tool == "none":
            kwargs["new_fingerprint"] = f"none-{run}"
        c0, t0 = _cpu_seconds(), time.perf_counter()
        out = ds.map(function, remove_columns=["text"], **kwargs)
        times.append(time.perf_counter() - t0)
        cpu.append(_cpu_seconds() - c0)
    assert out is not None
    pinned = tool in ("bpekit", "none")
    version = os.environ.get("BENCH_BPEKIT_VERSION", "?") if pinned else tool_version(tool)
    return {
        "times": times,
        "cpu": cpu,
        "load_s": load_s,
        "peak_mib": peak_rss_mib(),
        "hash": _hash(out.data.table),
        "version": version,
    }


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (a map's pool)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as cache:
        # A cache of its own: no map is read back from an earlier one.
        env = dict(os.environ, HF_DATASETS_CACHE=cache, HF_HOME=cache)
        found, why = call_worker(Path(__file__), [json.dumps(spec)], env, timeout=timeout)
    return found if found is not None else {"error": f"failed: {why[:200]}"}


COLUMNS = columns(
    ("tool", "tool", "text"),
    ("map", "map", "text"),
    ("offsets", "offsets", "text"),
    ("seconds", "time", "time"),
    ("throughput", "MB/s", "num"),
    ("vs_transformers", "vs transformers", "ratio"),
    ("vs_fastokens", "vs fastokens", "ratio"),
    ("cpu_s", "CPU s", "num"),
    ("load_ms", "load ms", "int"),
    ("peak_rss_mib", "peak RSS", "mib"),
    ("exact", "columns vs transformers", "text"),
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--corpus", default="en-small")
    p.add_argument("--mb", type=float, default=None, help="only the first documents of this many MB")
    p.add_argument("--runs", type=int, default=2, help="maps per process; the first is cold")
    p.add_argument("--num-proc", type=int, nargs="+", default=[1, 2])
    p.add_argument("--tools", nargs="+", default=TOOLS, choices=TOOLS)
    p.add_argument("--maps", nargs="+", default=list(MAPS), choices=list(MAPS))
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--dir", type=Path, default=None)
    p.add_argument("--data", type=Path, default=None)
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    data = data_dir(args.data)
    out = bench_dir(args.dir) / "transformers"
    out.mkdir(parents=True, exist_ok=True)
    corpus = corpus_path(args.corpus, args.dir, args.data)
    docs = documents(corpus, args.mb)
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    print(f"OLMo 2, {args.corpus}: {len(docs):,} documents, {mb:,.1f} MB", flush=True)
    del docs
    folder = olmo2_folder(out, data)
    with tempfile.TemporaryDirectory() as snapshot:
        os.environ["BENCH_BPEKIT_VERSION"] = pin_bpekit(Path(snapshot))
        _run(args, corpus, mb, folder)
    return 0


def _run(args: argparse.Namespace, corpus: Path, mb: float, folder: Path) -> None:
    """Every (processes, offsets, tool), interleaved; the result file."""
    tables, versions = [], {}
    for num_proc in args.num_proc:
        rows = []
        for kind in args.maps:
            for offsets in (False, True):
                reports = {}
                for tool in args.tools:
                    spec = {"tool": tool, "offsets": offsets, "num_proc": num_proc, "runs": args.runs}
                    spec |= {"corpus": str(corpus), "mb": args.mb, "folder": str(folder), "map": kind}
                    r = reports[tool] = measure(spec, args.timeout)
                    shown = r.get("error") or f"{mb / statistics.median(r['times'][1:] or r['times']):,.2f}"
                    print(f"  num_proc={num_proc} {kind} offsets={offsets} {tool}: {shown} MB/s", flush=True)
                rows += _rows(reports, offsets, MAP_NAMES[kind], mb, versions)
        tables.append(table(f"{num_proc} process{'es' if num_proc > 1 else ''}", "", COLUMNS, rows))
    cmd = ["--corpus", args.corpus] + (["--mb", f"{args.mb:g}"] if args.mb else [])
    cmd += ["--runs", str(args.runs)] if args.runs != 2 else []
    cmd += ["--num-proc", *map(str, args.num_proc)] if args.num_proc != [1, 2] else []
    cmd += ["--tools", *args.tools] if args.tools != TOOLS else []
    cmd += ["--maps", *args.maps] if args.maps != list(MAPS) else []
    write_result(
        args.results,
        f"transformers-olmo2-{args.corpus}",
        title=f"transformers' AutoTokenizer in datasets.map: OLMo 2, {args.corpus}",
        description=(
            f"`datasets.map(lambda b: tok(b['text'], return_offsets_mapping=...), batched=True, num_proc=N)` "
            f"over the {mb:,.1f} MB of documents of `{args.corpus}`, `tok` OLMo 2's `AutoTokenizer`: "
            "transformers alone (HF `tokenizers`), with `bpekit.patch_transformers()` and with "
            "`fastokens.patch_transformers()`. Each row in a fresh process, the tools interleaved, "
            f"{args.runs} maps each (the first cold; the figure the median of the others). Every column "
            "of the mapped dataset is compared with transformers alone's. `vs transformers` and "
            "`vs fastokens` are their time over the row's: above 1x the row is faster. `CPU s`: the "
            "CPU seconds of the map, its worker processes included. `none` is the map's own floor: "
            "its function returns the outputs made beforehand (by bpekit's patch, untimed), so its "
            "time is datasets' alone. `map`: `defaults` is `map` as called above; datasets 4 "
            'defaults to `on_mixed_types="use_json"`, which looks at every id of every returned '
            "list in Python to find mixed types: that floor bounds what any tokenizer can gain "
            "there. `on_mixed_types=None` (for a function that returns ids and masks only) skips it."
        ),
        command=command("transformers_compare.py", cmd),
        corpus={"name": args.corpus, "bytes": int(mb * 1e6)},
        runs=args.runs - 1,
        versions=versions,
        tables=tables,
    )


def _rows(
    reports: dict[str, dict[str, Any]], offsets: bool, kind: str, mb: float, versions: dict[str, str]
) -> list[Any]:
    def warm(r: dict[str, Any]) -> float | None:
        return statistics.median(r["times"][1:] or r["times"]) if "error" not in r else None

    base, fast = warm(reports.get("transformers", {"error": 1})), warm(reports.get("fastokens", {"error": 1}))
    want = reports.get("transformers", {}).get("hash")
    rows, on_off = [], "on" if offsets else "off"
    for tool, r in reports.items():
        if "error" in r:
            rows.append({"tool": tool, "map": kind, "offsets": on_off, "exact": r["error"]})
            continue
        versions.setdefault(tool, r["version"])
        s = warm(r)
        assert s is not None
        exact = "same" if want is None or r["hash"] == want else "**differ**"
        rows.append(
            {
                "tool": tool,
                "map": kind,
                "offsets": on_off,
                "seconds": s,
                "seconds_min": min(r["times"][1:] or r["times"]),
                "seconds_max": max(r["times"][1:] or r["times"]),
                "throughput": mb / s,
                # CPU seconds of the timed maps (median): a run whose time is far above
                # it waited, on a machine shared with other work.
                "cpu_s": statistics.median(r["cpu"][1:] or r["cpu"]),
                "vs_transformers": base / s if base else None,
                "vs_fastokens": fast / s if fast else None,
                "load_ms": 1000 * r["load_s"],
                "peak_rss_mib": r["peak_mib"],
                "exact": exact if tool != "transformers" else "(the reference)",
            }
        )
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
